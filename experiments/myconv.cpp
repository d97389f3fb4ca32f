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
#include "conv/settings.hpp"
#include "core/driver_loop.hpp"
#include "core/error.hpp"
#include "core/paths.hpp"
#include "experiments/registry/conv.hpp"

namespace {

using bench::UsageError;

struct Options {
  bench::DriverOptions common;  // measurement, timing, seed, outputs, listing, source, tracing
  conv::Settings settings;
  std::vector<std::string> dtypes = {"fp32"}, layouts = {"nchw"};
  std::vector<std::string> backends;
  conv::BackendOptions backend_options;
  std::string save_tensors_dir;
};

int run(const Options& o, const CLI::App& app, const std::string& command_head) {
  const bench::DriverOptions& c = o.common;
  bench::Suite<conv::Problem, conv::RegistryEntry> s;
  s.program = "myconv";
  s.command_head = command_head;
  s.backends = o.backends;
  s.known_backends = conv::known_backend_names();
  s.make_registry = [&] { return conv::make_registry(o.backend_options); };
  s.problems = [&](std::vector<std::string>* notes) {
    if (!c.list_cases) bench::check_output_dir("--save-tensors", o.save_tensors_dir);
    return conv::expand(o.settings, notes);
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
  auto& s = o.settings;
  app.add_option("--input-size", s.input_size, "Input height = width (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--kernel-size", s.kernel_size, "Kernel height = width (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--batch-size", s.batch_size, "Batch size (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--in-channels", s.in_channels, "Input channels (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--out-channels", s.out_channels, "Output channels (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--stride", s.stride, "Stride (list)")->capture_default_str()->delimiter(',');
  app.add_option("--padding", s.padding, "Zero padding on each side (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--dilation", s.dilation, "Dilation, 1 = dense kernel (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--groups", s.groups, "Groups; channels must divide by it (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--dtype", o.dtypes, "Data types: fp32 tf32 fp16 bf16 (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--layout", o.layouts, "Layouts: nchw nhwc (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--problem", s.descriptors,
                 "Problem descriptor, e.g. mb32ic64ih56oc64kh3ph1 (repeatable); replaces the "
                 "dimension options");
  app.add_option("--shapes", s.shape_files,
                 "Shape file: one descriptor per line, e.g. experiments/shapes/resnet50.txt");
  app.add_option("--backend", o.backends, "Backend to run (repeatable; default: all built)")
      ->delimiter(',');
  app.add_option("--halide-schedule", o.backend_options.halide_schedule,
                 "Halide schedule. manual: the hand-written one (halide_cuda: input and weight "
                 "tiles staged in shared memory, register tiles per lane; where that cannot "
                 "apply, e.g. fewer than 32 output or 8 input channels per group, manual_basic, "
                 "and the algorithm says so); manual_basic: halide_cuda's register tiles per "
                 "thread without shared memory; adams2019, mullapudi2016 (halide_cpu only), "
                 "li2018: Halide 14's autoschedulers")
      ->capture_default_str()
      ->check(CLI::IsMember({"manual", "manual_basic", "adams2019", "mullapudi2016", "li2018"}));
  app.add_option("--halide-tile", o.backend_options.halide_tile,
                 "Tile preset of halide_cuda's manual schedule (default auto). auto: one warp "
                 "per block, 32 to 128 output channels per block and up to 64 accumulators per "
                 "lane as an estimate picks per problem, chunks of 8 input channels; c32, c64, "
                 "c128: the same with that many channels per block; k16: auto with chunks of 16 "
                 "input channels; w4: auto with up to 4 warps per block sharing the staged tiles")
      ->check(CLI::IsMember({"auto", "c32", "c64", "c128", "k16", "w4"}));
  app.add_option("--variant", o.backend_options.variant,
                 "Kernel variant of im2col_gemm_cuda: auto (default: a heuristic that states its "
                 "choice and why in the algorithm), search (times every candidate once, as "
                 "compile time, and keeps the fastest), or a number: fp32 1 im2col+GEMM, 2 "
                 "implicit GEMM, 3 implicit GEMM with a row table; tf32/fp16/bf16 tensor cores 4 "
                 "implicit GEMM, 5 im2col+GEMM, 6 nhwc repack + implicit GEMM, 10 Hopper wgmma + "
                 "TMA implicit GEMM; fp16/bf16 11 Hopper 1x1 layers on the GEMM engine; any "
                 "dtype 7 direct small-OC, 8 direct depthwise, 9 im2col + cuBLASLt GEMM "
                 "(Caffe-classic; records the im2col and GEMM times apart)");
  app.add_option("--cudnn-api", o.backend_options.cudnn_api,
                 "cuDNN API: graph (a prebuilt execution plan run by cudnnBackendExecute, as "
                 "PyTorch does) or legacy (cudnnConvolutionForward)")
      ->capture_default_str()
      ->check(CLI::IsMember({"graph", "legacy"}));
  app.add_option("--cudnn-algo", o.backend_options.cudnn_algo,
                 "cuDNN algorithm: heuristic, search (timed as compile time) or a number (legacy: "
                 "algorithm 0-7; graph: the Nth engine config the dtype's math allows, from 0)")
      ->capture_default_str();
  app.add_flag("--torch-cudnn-benchmark", o.backend_options.torch_cudnn_benchmark,
               "libtorch_cuda: cudnn.benchmark on (the first call of a shape searches every "
               "plan, timed as compile time)");
  bench::add_common_options(app, o.common);
  app.add_option("--save-tensors", o.save_tensors_dir,
                 "Write input, weights, reference and each backend's output as .npy under DIR");

  return bench::run_main(app, argc, argv, "myconv", [&] {
    o.backends = bench::canonical_backend_names(o.backends);  // older names too
    const bool dims_given =
        app.count("--input-size") + app.count("--kernel-size") + app.count("--batch-size") +
            app.count("--in-channels") + app.count("--out-channels") + app.count("--stride") +
            app.count("--padding") + app.count("--dilation") + app.count("--groups") >
        0;
    if (dims_given && !(s.descriptors.empty() && s.shape_files.empty()))
      throw UsageError("--problem/--shapes replace the dimension options; give one or the other");
    s.dtypes.clear();
    for (const auto& d : o.dtypes) s.dtypes.push_back(bench::parse_data_type(d));
    s.layouts.clear();
    for (const auto& l : o.layouts) s.layouts.push_back(conv::parse_layout(l));
    (void)bench::check_common_options(app, o.common);
    return run(o, app, "myconv" + conv::command_text(o.backend_options));
  });
}
