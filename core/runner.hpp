// The case runner every suite uses (conv, ops, the model suites): one (backend, problem) case from
// its support checks through the timed compile, the first run from a poisoned output checked
// against the suite's reference, sampling in real or pure mode, a second check of what was timed,
// and traced calls after all timing. Never throws: every outcome is a status in the result.
//
// A suite supplies what only it knows through CaseHooks (its problem and backend types stay its
// own): whether the backend is there and takes the problem, how to prepare an instance, and how to
// read and judge an instance's output. Its instances derive from bench::Instance.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/device.hpp"
#include "core/measure.hpp"
#include "core/result.hpp"
#include "core/timer.hpp"
#include "core/trace.hpp"

namespace bench {

// Answer of a support check: yes, or no with a one-line reason.
struct Support {
  bool ok = true;
  std::string reason;
  static Support yes() { return {true, ""}; }
  static Support no(std::string why) { return {false, std::move(why)}; }
};

// One prepared case: owns its buffers, compiled code, plans and library handles. Move-only by
// ownership through unique_ptr; the destructor is the teardown and must not throw. A suite's
// instance adds how its output is read (the runner leaves that to CaseHooks::check).
class Instance {
 public:
  virtual ~Instance() = default;
  // JIT compilation, primitive creation, plan building, algorithm search. May throw
  // bench::Unsupported when the library finds no implementation.
  virtual void compile() = 0;
  // Overwrites the output with NaN, so that elements the next run() leaves unwritten fail.
  virtual void poison_output() = 0;
  // One call of the operation. A device backend only enqueues it on its stream.
  virtual void run() = 0;
  // Waits until the work of run() is complete.
  virtual void sync() {}
  // The implementation that ran: library impl string, algorithm, schedule, kernel variant.
  virtual std::string algorithm() const { return ""; }
  virtual std::optional<std::int64_t> workspace_bytes() const { return std::nullopt; }
  // Device timer on the backend's stream, or null for a CPU backend.
  virtual DeviceTimer* device_timer() { return nullptr; }
  // The CUDA stream (a cudaStream_t) run() enqueues its work on, or null: CPU backends, and
  // libraries that launch on a context or stream of their own.
  virtual void* cuda_stream() { return nullptr; }
  // A batch of `calls` runs replayed as one unit, for pure timing. The default captures run() on
  // cuda_stream() into a CUDA graph; null, with the reason in *why, where the backend's work
  // cannot be captured.
  virtual std::unique_ptr<Replay> make_replay(DeviceServices& services, int calls,
                                              std::string* why) {
    return services.capture(
        cuda_stream(), [this] { run(); }, calls, why);
  }
  // Further facts for the result record (e.g. {"first_run_includes": "module load"}). A string
  // "known_issue" names a documented defect of the library that can make this case's answer
  // wrong; the runner adds it to the reason of an incorrect result (which stays incorrect).
  virtual nlohmann::ordered_json extra() const { return nlohmann::ordered_json::object(); }
};

// real: every call synchronized, launch and synchronization overhead included (what a caller
// that needs the result at once sees). pure: calls back to back, runs_per_sample of them between
// one timer pair, or a CUDA graph of them replayed where the backend allows capture (device
// throughput, launch gaps hidden). Both modes treat every backend alike.
enum class TimingMode { real, pure };

struct CaseOptions {
  MeasureConfig measure;
  TimingMode timing = TimingMode::real;
  bool use_graph = true;    // pure mode: replay a captured graph where the backend allows it
  int pure_runs = 0;        // pure mode: calls per sample; 0 = enough for about 2 ms per sample
  bool cold_cache = false;  // flush the device's L2 (or the CPU caches) before every sample
  // Cache flush, clocks and graph capture of the GPU; null where there is none (then GPU
  // backends run without clock records, and --cold-cache fails their cases).
  DeviceServices* device_services = nullptr;
  // Command line that reproduces the case, minus the problem and backend (e.g. "myconv --seed 7").
  std::string command_prefix;
  // Tracing (--debug, --trace-dir): null = off. When set, the case's phases are recorded as host
  // ranges and, after the timed sampling of a passed case, trace->calls more calls are traced
  // with device activity; no recorded time includes tracing.
  const TraceConfig* trace = nullptr;
};

// A suite's judgement of one output: passed, or the one-line reason it did not (a wrong shape, the
// comparison's message).
struct CheckOutcome {
  bool passed = false;
  std::string reason;
};

// What the runner needs of a suite for one case. Unset functions mean "yes" (available,
// check_support); prepare and check are required when built is true.
struct CaseHooks {
  bool built = true;        // false: the backend is not in this build (recorded as skipped)
  std::string why_missing;  // why it is not built
  std::function<Support()> available;      // can the backend run here at all (a GPU exists)
  std::function<Support()> check_support;  // can it run this problem, judged from the problem
  std::function<std::unique_ptr<Instance>()> prepare;  // buffers allocated, inputs in (untimed)
  // Reads the instance's output after a run and compares it with the reference: fills
  // r.correctness (and r.shape_ok where the suite checks shapes). after_sampling: the second
  // check, of what was timed (the suite need not keep that output).
  std::function<CheckOutcome(Instance&, Result& r, bool after_sampling)> check;
  // Optional: further measurements of a passed case after its timed sampling and second check,
  // before the traced calls (a model suite's forward/backward split, peak memory). Outside every
  // recorded time; what it throws fails the case.
  std::function<void(Instance&, Result& r)> after_sampling;
};

struct CaseRun {
  Result result;
  std::shared_ptr<Trace> trace;  // with CaseOptions::trace, once the case got to prepare()
};

// Runs one case. `identity` is the result record with the case's identity filled in (suite,
// backend, device, problem, work, command); the runner fills the rest.
CaseRun run_case(Result identity, const CaseHooks& hooks, const CaseOptions& options);

}  // namespace bench
