// myops: runs tensor ops (elementwise, activation, reduction, normalization, matmul, memory)
// through our CUDA kernels, PyTorch (LibTorch), CUB, cuBLASLt and oneDNN, and reports per case the
// GPU, CPU and total time, the bandwidth against the machine's measured copy bandwidth, the
// speed-up against PyTorch with Genesis's score band, and the correctness against float64.
//
//   myops                                   every op, size class medium, fp32
//   myops --category reduction --size all --dtype fp32,bf16
//   myops --problem sum:4x512x896:axis=2 --backend own_cuda --backend libtorch_cuda
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/driver_loop.hpp"
#include "core/paths.hpp"
#include "experiments/registry/ops.hpp"
#include "ops/bench.hpp"
#include "ops/options.hpp"

namespace {

struct Options {
  bench::DriverOptions common;  // measurement, timing, seed, outputs, listing, source, tracing
  ops::Options suite;
};

int run(const Options& o, const CLI::App& app, const std::string& command_head) {
  const bench::DriverOptions& c = o.common;
  const ops::Options& so = o.suite;
  ops::SuiteRun suite(c.seed, so.no_peaks);
  suite.measure_gpu_limits = ops::gpu_limits();
  bench::Suite<ops::Problem, ops::RegistryEntry> s;
  s.program = "myops";
  s.command_head = command_head;
  s.backends = so.backends;
  s.known_backends = ops::known_backend_names();
  s.own_listing = [&] {
    if (so.list_ops) ops::print_op_list(std::cout);
    return so.list_ops;
  };
  s.make_registry = [&] { return ops::make_registry(so.backend_options); };
  s.problems = [&](std::vector<std::string>* notes) {
    bench::check_output_file("--markdown", so.markdown_path);
    return ops::expand(so.settings, notes);
  };
  s.order = ops::SuiteRun::order;
  s.name_of = [](const ops::Problem& p) { return p.str_with_name(); };
  s.memory_need = [](const ops::Problem& p, bool gpu) { return ops::memory_need(p, gpu); };
  s.identity = [](const ops::RegistryEntry& e, const ops::Problem& p,
                  const bench::CaseOptions& options) {
    return ops::make_result(e.name, e.device, p, options);
  };
  s.before_cases = [&](bench::Session& session, const std::vector<const ops::RegistryEntry*>& sel,
                       const std::vector<ops::Problem>& problems) {
    suite.before_cases(std::cout, session.set.system, sel, problems);
  };
  s.begin_problem = [&](bench::Session& session, const ops::Problem& p, bool host_fits) {
    ops::print_problem(std::cout, p);
    bench::timed_reference(session, [&] {
      suite.make_inputs(p, host_fits);
      return true;
    });
  };
  s.run = [&](bench::Session& session, const ops::RegistryEntry& e, const ops::Problem& p,
              const bench::CaseOptions& options) {
    ops::CaseOutput out = suite.run(e, p, options, session.set);
    return std::optional<bench::CaseRun>({std::move(out.result), out.trace});
  };
  s.report = [&](bench::Session& session) {
    suite.report(std::cout, session.set, so.markdown_path);
  };
  s.written = {{so.markdown_path, "results, Markdown"}};
  return bench::run_suite(app, c, s);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "myops: which implementation of a tensor op is fastest here, how close it comes to the "
      "machine's measured limits, and whether its answer is right"};
  bench::add_version_flag(app);
  ops::add_options(app, o.suite);
  bench::add_common_options(app, o.common);

  return bench::run_main(app, argc, argv, "myops", [&] {
    const std::string head = ops::finish_options(app, o.suite, o.common.measure);
    (void)bench::check_common_options(app, o.common);
    return run(o, app, head);
  });
}
