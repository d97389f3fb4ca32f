// The backend interface: one implementation of a conv problem. One file per backend; all are
// registered in experiments/registry/conv.cpp.
//
// Life of one case (core/runner.hpp drives it; conv/bench.cpp gives it the conv hooks):
//   check_support(p) -> prepare(p, data) [untimed: allocate, upload] -> compile() [timed as
//   compile_time_ms] -> poison_output(), run(), sync() [timed as first_run_ms], device_output()
//   or read_output() [checked] -> run()/sync() samples [timed] -> second check -> time_phases()
//   [after sampling, untimed: a phase split where the implementation has one] -> destructor
//   [teardown].
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conv/data.hpp"
#include "conv/problem.hpp"
#include "core/backend.hpp"
#include "core/runner.hpp"

namespace conv {

using bench::Support;

// Device times of the phases of single calls, measured apart (variant 9 of im2col_gemm_cuda: its
// im2col and its GEMM). The suite records the median of each as metrics.<name>_ms.
struct PhaseTimes {
  std::vector<std::string> names;       // e.g. {"im2col", "gemm"}, in call order
  std::vector<std::vector<double>> ms;  // ms[phase][call]
  std::string clock;                    // how they were taken, e.g. "CUDA events around each"
};

// One prepared conv case (core/runner.hpp: the life the runner gives it), with how its output is
// read for the check.
class Instance : public bench::Instance {
 public:
  // Copies the output to dst as float, in the problem's layout (dst_elements() values).
  virtual void read_output(float* dst) = 0;
  // The output where it lies in device memory, in the problem's layout and its dtype's storage
  // type (core/compare.hpp), for the check on the device; none (the default) where it is not so
  // (a CPU backend, another layout or type): then the check reads it with read_output.
  virtual std::optional<bench::DeviceValues> device_output() { return std::nullopt; }
  // Logical output dimensions the implementation produced: {N, C, H, W}.
  virtual std::vector<std::int64_t> output_dims() const = 0;
  // Times `calls` single calls with each phase apart; no names where the implementation has no
  // split (the default). Runs after the timed sampling, outside every recorded time.
  virtual PhaseTimes time_phases(int calls) {
    (void)calls;
    return {};
  }
};

// name, device, library_version, available, check_support(p), prepare(p, data): core/backend.hpp.
using Backend = bench::SuiteBackend<Problem, HostData, Instance>;

// Settings that select a backend's implementation.
struct BackendOptions {
  // halide_cpu: manual | adams2019 | mullapudi2016 | li2018; halide_cuda: manual (tiled in shared
  // memory where it applies, else manual_basic) | manual_basic | li2018.
  std::string halide_schedule = "manual";
  // halide_cuda's manual: tile preset, auto | c32 | c64 | c128 | k16 | w4 ("" = auto).
  std::string halide_tile;
  std::string halide_plugin_dir;  // where libautoschedule_*.so live ("" = built-in default)
  std::string variant;  // kernel variant of our own backends, e.g. "1" ("" = the backend's default)
  std::string cudnn_api = "graph";       // cudnn: graph (cudnnBackendExecute) | legacy
  std::string cudnn_algo = "heuristic";  // heuristic | search | an algorithm/engine config number
  bool torch_cudnn_benchmark = false;    // libtorch_cuda: cudnn.benchmark (searched plans)
};

}  // namespace conv
