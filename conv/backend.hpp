// The backend interface: one implementation of a conv problem. One file per backend; all are
// registered in conv/registry.cpp.
//
// Life of one case (conv/bench.cpp drives it):
//   check_support(p) -> prepare(p, data) [untimed: allocate, upload] -> compile() [timed as
//   compile_time_ms] -> poison_output(), run(), sync() [timed as first_run_ms], read_output()
//   [checked] -> run()/sync() samples [timed] -> destructor [teardown].
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "conv/data.hpp"
#include "conv/problem.hpp"
#include "core/device.hpp"
#include "core/timer.hpp"

namespace conv {

// Answer of check_support()/available(): yes, or no with a one-line reason.
struct Support {
  bool ok = true;
  std::string reason;
  static Support yes() { return {true, ""}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

// One prepared case: owns its buffers, compiled code, plans and library handles. Move-only by
// ownership through unique_ptr; the destructor is the teardown and must not throw.
class Instance {
 public:
  virtual ~Instance() = default;
  // JIT compilation, primitive creation, plan building, algorithm search. May throw
  // bench::Unsupported when the library finds no implementation.
  virtual void compile() = 0;
  // Overwrites the output with NaN, so that elements the next run() leaves unwritten fail.
  virtual void poison_output() = 0;
  // One convolution. A device backend only enqueues it on its stream.
  virtual void run() = 0;
  // Waits until the work of run() is complete.
  virtual void sync() {}
  // Copies the output to dst as float, in the problem's layout (dst_elements() values).
  virtual void read_output(float* dst) = 0;
  // Logical output dimensions the implementation produced: {N, C, H, W}.
  virtual std::vector<std::int64_t> output_dims() const = 0;
  // The implementation that ran: oneDNN impl string, cuDNN algorithm, schedule, kernel variant.
  virtual std::string algorithm() const { return ""; }
  virtual std::optional<std::int64_t> workspace_bytes() const { return std::nullopt; }
  // Device timer on the backend's stream, or null for a CPU backend.
  virtual bench::DeviceTimer* device_timer() { return nullptr; }
  // The CUDA stream (a cudaStream_t) run() enqueues its work on, or null: CPU backends, and
  // libraries that launch on a context or stream of their own.
  virtual void* cuda_stream() { return nullptr; }
  // A batch of `calls` runs replayed as one unit, for pure timing (--timing pure). The default
  // captures run() on cuda_stream() into a CUDA graph; null, with the reason in *why, where the
  // backend's work cannot be captured.
  virtual std::unique_ptr<bench::Replay> make_replay(bench::DeviceServices& services, int calls,
                                                     std::string* why) {
    return services.capture(
        cuda_stream(), [this] { run(); }, calls, why);
  }
  // Further facts for the result record (e.g. {"first_run_includes": "module load"}). A string
  // "known_issue" names a documented defect of the library that can make this case's answer
  // wrong; the harness adds it to the reason of an incorrect result (which stays incorrect).
  virtual nlohmann::ordered_json extra() const { return nlohmann::ordered_json::object(); }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual std::string device() const = 0;  // "cpu" or "cuda"
  // Version of the library behind the backend, e.g. "oneDNN 2.6.3".
  virtual std::string library_version() const = 0;
  // Whether the backend can run here at all (e.g. a CUDA device exists).
  virtual Support available() const { return Support::yes(); }
  // Whether the backend can run p, judged from the problem alone.
  virtual Support check_support(const Problem& p) const = 0;
  // Allocates buffers and copies the inputs in (not timed).
  virtual std::unique_ptr<Instance> prepare(const Problem& p, const HostData& data) const = 0;
};

// Settings that select a backend's implementation.
struct BackendOptions {
  std::string halide_schedule = "manual";  // manual | adams2019 | mullapudi2016 | li2018
  std::string halide_plugin_dir;  // where libautoschedule_*.so live ("" = built-in default)
  std::string variant;  // kernel variant of our own backends, e.g. "1" ("" = the backend's default)
  std::string cudnn_api = "graph";       // cudnn: graph (cudnnBackendExecute) | legacy
  std::string cudnn_algo = "heuristic";  // heuristic | search | an algorithm/engine config number
  bool torch_cudnn_benchmark = false;    // libtorch_cuda: cudnn.benchmark (searched plans)
};

}  // namespace conv
