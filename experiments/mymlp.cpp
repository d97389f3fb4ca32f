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
#include <limits>

#include <CLI/CLI.hpp>

#include "core/driver_loop.hpp"
#include "core/option_checks.hpp"
#include "core/paths.hpp"
#include "experiments/registry/mlp.hpp"
#include "models/mlp/bench.hpp"
#include "models/mlp/report.hpp"
#include "models/mlp/settings.hpp"
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
  mlp::Settings settings;
  mlp::RunSettings run;
  std::vector<std::string> backends;
};

int run(const Options& o, const CLI::App& app, const std::string& command_head) {
  const bench::DriverOptions& c = o.common;
  mlp::SuiteRun suite(o.run, c.seed, c.timing == "both");
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
  s.backends = o.backends;
  s.known_backends = mlp::known_backend_names();
  s.make_registry = [] { return mlp::make_registry(); };
  s.problems = [&](std::vector<std::string>*) {
    std::vector<mlp::Problem> problems = mlp::expand(o.settings);
    if (!c.list_cases) bench::check_output_dir("--profile", o.run.profile_dir);
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
    bench::make_output_dir("--profile", o.run.profile_dir);
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
  s.written = {{o.run.profile_dir, "profiles"}};
  return bench::run_suite(app, c, s);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "mymlp: the lecture's MLP benchmark (run_mlp) through LibTorch eager, a CUDA graph and "
      "cuBLASLt: time per call and per step (forward, backward), TFLOP/s against the measured "
      "matmul ceiling, peak memory, gradients checked against float64; scaling studies, square "
      "matmuls and a profile"};
  bench::add_version_flag(app);
  // Sizes: integers from 1; the problem's own check bounds them (models/mlp/problem.hpp).
  const auto size = bench::integer_in(1, std::numeric_limits<std::int64_t>::max());
  app.add_option("--dim", o.settings.dim, "Width of every Linear layer")
      ->capture_default_str()
      ->check(size);
  app.add_option("--num-layers", o.settings.num_layers, "Layers")
      ->capture_default_str()
      ->check(size);
  app.add_option("--batch-size", o.settings.batch_size, "Rows of the input")
      ->capture_default_str()
      ->check(size);
  app.add_option("--num-steps", o.settings.num_steps, "Steps (forward, loss, backward) per call")
      ->capture_default_str()
      ->check(size);
  app.add_flag("--example", o.settings.example,
               "Also run the configuration of --dim/--num-layers/--batch-size/--num-steps with "
               "--scale, --matmul or --problem (alone it runs by default)");
  app.add_option("--problem", o.settings.problems,
                 "Descriptor, e.g. mlp:d128l16b128s5:bf16 or mm:n4096 (repeatable)");
  app.add_option("--scale", o.settings.scale,
                 "Scaling studies: num_steps num_layers batch_size dim, or all (list); factors "
                 "2..5 from --base")
      ->delimiter(',');
  app.add_option("--base", o.settings.base, "Base of the scaling studies (key=value list)")
      ->capture_default_str();
  app.add_flag("--matmul", o.settings.matmul,
               "Square matmuls over --matmul-dims for each implementation");
  app.add_option("--matmul-dims", o.settings.matmul_dims, "Sizes of --matmul (list)")
      ->capture_default_str()
      ->delimiter(',')
      ->check(size);
  app.add_option("--dtype", o.settings.dtypes, "Data types: fp32 tf32 bf16 (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--backend", o.backends, "Backends to run (list; default: all built)")
      ->delimiter(',');
  app.add_option("--num-warmups", o.run.num_warmups,
                 "The lecture's fixed warm-up count (default: the core's --warmup)")
      ->check(bench::integer_in(0, std::numeric_limits<int>::max()));
  app.add_option("--num-trials", o.run.num_trials,
                 "The lecture's fixed trial count: exactly this many samples, no adaptive stop")
      ->check(bench::integer_in(2, 1000000));
  app.add_option("--phase-steps", o.run.phase_steps, "Steps timed for the forward/backward split")
      ->capture_default_str()
      ->check(bench::integer_in(1, 1000000));
  app.add_option("--profile", o.run.profile_dir,
                 "Profile the cases outside scaling studies into DIR: top-ops table, Chrome "
                 "trace, flame-graph stacks (LibTorch profiler; CUPTI for cuBLASLt)");
  app.add_flag("--no-ceiling", o.run.no_ceiling,
               "Do not measure the matmul ceiling (no fraction of ceiling)");
  // The ceiling's matmuls are the suite's square matmuls: n up to 2^17 (mm:n<size>).
  app.add_option("--ceiling-n", o.run.ceiling_n_cuda, "Size of the GPU ceiling matmul")
      ->capture_default_str()
      ->check(bench::integer_in(1, 131072));
  app.add_option("--ceiling-n-cpu", o.run.ceiling_n_cpu, "Size of the CPU ceiling matmul")
      ->capture_default_str()
      ->check(bench::integer_in(1, 131072));
  bench::add_common_options(app, o.common);

  return bench::run_main(app, argc, argv, "mymlp", [&] {
    o.backends = bench::canonical_backend_names(o.backends);  // older names too
    o.settings.dims_given = app.count("--dim") || app.count("--num-layers") ||
                            app.count("--batch-size") || app.count("--num-steps");
    (void)bench::check_common_options(app, o.common);
    const std::string head = "mymlp" + mlp::apply_fixed_counts(o.run, o.common.measure);
    return run(o, app, head);
  });
}
