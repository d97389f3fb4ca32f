// mymlp: the lecture's MLP benchmark (run_mlp: num_layers x (Linear(dim, dim) -> GeLU), each step a
// forward pass, the mean loss and a backward pass) through LibTorch eager (CPU, CUDA), LibTorch
// replaying a CUDA graph, and cuBLASLt with fused epilogues; per implementation the time per call,
// per step with the forward and the backward apart, the TFLOP/s against the measured matmul
// ceiling, the peak memory, and the gradients checked against float64. Also the lecture's scaling
// studies (--scale), square matmuls (--matmul) and profile (--profile).
//
//   mymlp --dim 128 --num-layers 16 --batch-size 128 --num-steps 5     the lecture's example
//   mymlp --scale all --base dim=256,num_layers=4,batch_size=256,num_steps=2
//   mymlp --matmul --dtype fp32,bf16
//   mymlp --profile prof/
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/driver_loop.hpp"
#include "core/paths.hpp"
#include "experiments/registry/mlp.hpp"
#include "models/mlp/bench.hpp"
#include "models/mlp/options.hpp"
#include "models/mlp/report.hpp"
#if MYCONV_HAVE_TORCH
#include "models/mlp/profile.hpp"
#include "models/mlp/ref_mlp.hpp"
#endif
#if MYCONV_HAVE_CUPTI
#include "core/cuda/cupti_tracer.hpp"
#endif

namespace {

struct Options {
  bench::DriverOptions common;
  mlp::Options suite;
};

int run(const Options& o, const CLI::App& app, const std::string& command_head) {
  const bench::DriverOptions& c = o.common;
  const mlp::Options& so = o.suite;
  mlp::SuiteRun suite(so.run, c.seed, c.timing == "both");
#if MYCONV_HAVE_TORCH
  suite.reference = mlp::reference;
  suite.profile_libtorch = mlp::profile_case;
#endif
#if MYCONV_HAVE_CUPTI
  suite.make_cupti = [] { return bench::make_cupti_activity_source(); };
#endif
  bench::Suite<mlp::Problem, mlp::RegistryEntry> s;
  s.program = "mymlp";
  s.command_head = command_head;
  s.backends = so.backends;
  s.known_backends = mlp::known_backend_names();
  s.make_registry = [] { return mlp::make_registry(); };
  s.problems = [&](std::vector<std::string>*) {
    std::vector<mlp::Problem> problems = mlp::expand(so.settings);
    if (!c.list_cases) bench::check_output_dir("--profile", so.run.profile_dir);
    return problems;
  };
  s.name_of = [](const mlp::Problem& p) { return mlp::str_with_name(p); };
  s.memory_need = [](const mlp::Problem& p, bool gpu) { return mlp::memory_need(p, gpu); };
  s.identity = [](const mlp::RegistryEntry& e, const mlp::Problem& p,
                  const bench::CaseOptions& options) {
    return mlp::make_result(e.name, e.device, p, options);
  };
  s.before_session = [&](const std::vector<const mlp::RegistryEntry*>& selected,
                         const bench::MemoryGate& memory) {
    if (c.list_cases) return false;
    suite.check_ceilings_fit(selected, memory.available());  // measured first, they must fit
    bench::make_output_dir("--profile", so.run.profile_dir);
    return false;
  };
  s.before_cases = [&](bench::Session& session, const std::vector<const mlp::RegistryEntry*>& sel,
                       const std::vector<mlp::Problem>& problems) {
    suite.before_cases(session.set.system, sel, problems, session.case_options.trace != nullptr);
  };
  s.begin_problem = [&](bench::Session& session, const mlp::Problem& p, bool host_fits) {
    mlp::print_problem(std::cout, p);
    bench::timed_reference(session, [&] {
      suite.make_inputs(p, host_fits);
      return true;
    });
  };
  s.run = [&](bench::Session& session, const mlp::RegistryEntry& e, const mlp::Problem& p,
              const bench::CaseOptions& options) -> std::optional<bench::CaseRun> {
    mlp::CaseOutput out = suite.run(e, p, options);
    if (!suite.write_cupti_profile(out, session.case_options.trace != nullptr, std::cout))
      return bench::CaseRun{std::move(out.result), out.trace};
    session.set.results.push_back(std::move(out.result));  // recorded here, with its profile
    bench::write_results(session);
    return std::nullopt;
  };
  s.after_case = [&](bench::Session&, const bench::Result& r) { suite.after_case(std::cout, r); };
  s.report = [&](bench::Session& session) { suite.report(std::cout, session.set); };
  s.written = {{so.run.profile_dir, "profiles"}};
  return bench::run_suite(app, c, s);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "mymlp: the lecture's MLP benchmark (run_mlp) through LibTorch eager, a CUDA graph, "
      "cuBLASLt and our GEMM engine: time per call and per step (forward, backward), TFLOP/s "
      "against the measured "
      "matmul ceiling, peak memory, gradients checked against float64; scaling studies, square "
      "matmuls and a profile"};
  bench::add_version_flag(app);
  mlp::add_options(app, o.suite);
  bench::add_common_options(app, o.common);

  return bench::run_main(app, argc, argv, "mymlp", [&] {
    mlp::finish_options(app, o.suite);
    (void)bench::check_common_options(app, o.common);
    return run(o, app, "mymlp" + mlp::apply_fixed_counts(o.suite.run, o.common.measure));
  });
}
