// myconv: runs conv problems through every available backend and reports, per backend, the
// GPU, CPU, total and compile times and the correctness against a float64 reference.
//
//   myconv --input-size 64 --kernel-size 5
//   myconv --problem mb32ic64ih56oc64kh3ph1 --dtype fp32 --dtype bf16 --json out.json
//   myconv --shapes experiments/shapes/resnet50.txt --backend onednn_cpu
#include <algorithm>
#include <cstdlib>
#include <iostream>

#include <CLI/CLI.hpp>

#include "conv/bench.hpp"
#include "conv/options.hpp"
#include "core/driver_loop.hpp"
#include "core/paths.hpp"
#include "experiments/registry/conv.hpp"

namespace {

struct Options {
  bench::DriverOptions common;  // measurement, timing, seed, outputs, listing, source, tracing
  conv::Options suite;
  std::string save_tensors_dir;
};

int run(const Options& o, const CLI::App& app, const std::string& command_head) {
  const bench::DriverOptions& c = o.common;
  const conv::Options& so = o.suite;
  bench::Suite<conv::Problem, conv::RegistryEntry> s;
  s.program = "myconv";
  s.command_head = command_head;
  s.backends = so.backends;
  s.known_backends = conv::known_backend_names();
  s.make_registry = [&] { return conv::make_registry(so.backend_options); };
  s.problems = [&](std::vector<std::string>* notes) {
    if (!c.list_cases) bench::check_output_dir("--save-tensors", o.save_tensors_dir);
    return conv::expand(so.settings, notes);
  };
  s.name_of = [](const conv::Problem& p) { return p.str_with_name(); };
  s.memory_need = [](const conv::Problem& p, bool gpu) { return conv::memory_need(p, gpu); };
  s.identity = [](const conv::RegistryEntry& e, const conv::Problem& p,
                  const bench::CaseOptions& options) {
    return conv::make_result(e.name, e.device, p, options);
  };
  // Where each problem's float64 reference runs: MYCONV_REFERENCE=auto (default: on the GPU where
  // the run has a GPU backend, the build has CUDA and a device is usable), cpu or gpu. Checked
  // before the session; chosen once it knows whether a device is usable.
  conv::SuiteRun suite(std::getenv("MYCONV_REFERENCE"), std::getenv("MYCONV_CHECK"),
                       conv::device_reference(), o.save_tensors_dir, c.seed);
  s.before_session = [&](const std::vector<const conv::RegistryEntry*>& selected,
                         const bench::MemoryGate&) {
    suite.check_reference(std::any_of(selected.begin(), selected.end(), [](const auto* e) {
      return e->backend && e->device == "cuda";
    }));
    if (!c.list_cases) bench::make_output_dir("--save-tensors", o.save_tensors_dir);
    return false;
  };
  s.session_started = [&](bench::Session& session) {
    suite.choose_reference(session.device_services != nullptr);
  };
  s.begin_problem = [&](bench::Session& session, const conv::Problem& p, bool host_fits) {
    conv::print_problem(std::cout, p);
    const bool made =
        bench::timed_reference(session, [&] { return suite.make_inputs(p, host_fits); });
    suite.after_inputs(std::cerr, p, made);
  };
  s.run = [&](bench::Session&, const conv::RegistryEntry& e, const conv::Problem& p,
              const bench::CaseOptions& options) {
    conv::CaseOutput out = suite.run(e, p, options);
    return std::optional<bench::CaseRun>({std::move(out.result), out.trace});
  };
  s.written = {{o.save_tensors_dir, "tensors, .npy"}};
  return bench::run_suite(app, c, s);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "myconv: which convolution implementation is fastest here, what it costs to get "
      "ready, and whether its answer is right"};
  bench::add_version_flag(app);
  conv::add_options(app, o.suite);
  bench::add_common_options(app, o.common);
  app.add_option("--save-tensors", o.save_tensors_dir,
                 "Write input, weights, reference and each backend's output as .npy under DIR");

  return bench::run_main(app, argc, argv, "myconv", [&] {
    conv::finish_options(app, o.suite);
    (void)bench::check_common_options(app, o.common);
    return run(o, app, "myconv" + conv::command_text(o.suite.backend_options));
  });
}
