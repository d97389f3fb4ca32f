// myconv's own command-line options, in --help's order, and their checks after parsing: the
// suite's part of the settings room (the settings themselves and their expansion into problems
// are conv/settings.hpp). Inline, for the driver alone: it parses CLI11 already, so these add no
// translation unit that would parse it again (a few seconds per build, twice in CI).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "conv/settings.hpp"
#include "core/error.hpp"
#include "core/suite_options.hpp"

namespace conv {

// myconv's own command line: the problems' settings, the backends and their options; the shared
// options are core/driver.hpp's (bench::DriverOptions).
struct Options {
  Settings settings;
  std::vector<std::string> dtypes = {"fp32"}, layouts = {"nchw"};  // into settings
  std::vector<std::string> backends;
  BackendOptions backend_options;
};

// Adds myconv's own options to app, in --help's order (before the shared ones).
inline void add_options(CLI::App& app, Options& o) {
  auto& s = o.settings;
  bench::add_list_option(app, "--input-size", s.input_size, "Input height = width (list)");
  bench::add_list_option(app, "--kernel-size", s.kernel_size, "Kernel height = width (list)");
  bench::add_list_option(app, "--batch-size", s.batch_size, "Batch size (list)");
  bench::add_list_option(app, "--in-channels", s.in_channels, "Input channels (list)");
  bench::add_list_option(app, "--out-channels", s.out_channels, "Output channels (list)");
  bench::add_list_option(app, "--stride", s.stride, "Stride (list)");
  bench::add_list_option(app, "--padding", s.padding, "Zero padding on each side (list)");
  bench::add_list_option(app, "--dilation", s.dilation, "Dilation, 1 = dense kernel (list)");
  bench::add_list_option(app, "--groups", s.groups, "Groups; channels must divide by it (list)");
  bench::add_list_option(app, "--dtype", o.dtypes, "Data types: fp32 tf32 fp16 bf16 (list)");
  bench::add_list_option(app, "--layout", o.layouts, "Layouts: nchw nhwc (list)");
  bench::add_problem_sources(
      app, s.descriptors,
      "Problem descriptor, e.g. mb32ic64ih56oc64kh3ph1 (repeatable); replaces the dimension "
      "options",
      "--shapes", s.shape_files,
      "Shape file: one descriptor per line, e.g. experiments/shapes/resnet50.txt");
  bench::add_backend_option(app, o.backends);
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
                 "(Caffe-classic; records the im2col and GEMM times apart); fp32/tf32 3x3 "
                 "stride 1: 12 Winograd F(2x2,3x3) (12.1 separate kernels, the default; 12.2 one "
                 "fused kernel)");
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
}

// After parsing: --backend's current names, the settings' data types and layouts; UsageError for
// the dimension options with --problem/--shapes, or an unknown data type or layout.
inline void finish_options(const CLI::App& app, Options& o) {
  auto& s = o.settings;
  bench::finish_backend_names(o.backends);
  const bool dims_given =
      app.count("--input-size") + app.count("--kernel-size") + app.count("--batch-size") +
          app.count("--in-channels") + app.count("--out-channels") + app.count("--stride") +
          app.count("--padding") + app.count("--dilation") + app.count("--groups") >
      0;
  if (dims_given && !(s.descriptors.empty() && s.shape_files.empty()))
    throw bench::UsageError(
        "--problem/--shapes replace the dimension options; give one or the other");
  s.dtypes = bench::parse_data_types(o.dtypes);
  s.layouts.clear();
  for (const auto& l : o.layouts) s.layouts.push_back(parse_layout(l));
}

}  // namespace conv
