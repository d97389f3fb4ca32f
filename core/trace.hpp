// Debug traces of one benchmark case: host ranges of its phases (prepare, compile, first run,
// sampling, traced calls) and, where a device activity source exists (CUPTI on CUDA builds), the
// kernels, copies and API calls of a few traced calls made after the timed sampling.
//
// Off by default, and then free: every hook takes a Tracer* that is null when tracing is off, so
// a normal run pays one pointer test per phase, none per sample. The phase ranges are also NVTX
// ranges (domain "myconv", on CUDA builds), so Nsight Systems shows the same structure; without a
// tool attached an NVTX call is a test of a null function pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace bench {

// The clock of every trace event: std::chrono::steady_clock (CLOCK_MONOTONIC), in nanoseconds.
std::int64_t trace_clock_ns();
// The calling thread's OS id (gettid), the id CUPTI reports for API records.
std::uint64_t trace_thread_id();

// host_range: a phase or call of ours. cuda_api: a CUDA runtime or driver API call (a launch,
// a copy, a synchronization). kernel, memcpy, memset: work on the device.
enum class EventKind { host_range, cuda_api, kernel, memcpy, memset };
const char* to_string(EventKind kind);
inline bool on_device(EventKind kind) {
  return kind == EventKind::kernel || kind == EventKind::memcpy || kind == EventKind::memset;
}

struct TraceEvent {
  EventKind kind = EventKind::host_range;
  // Range name, API function ("cudaLaunchKernel"), kernel name as the driver reports it (often
  // mangled), or copy kind ("Memcpy HtoD", "Memset").
  std::string name;
  std::int64_t start_ns = 0, end_ns = 0;  // trace clock
  std::uint64_t thread = 0;               // host events: OS thread id
  int depth = 0;                          // host ranges: nesting level, 0 = outermost
  int device = -1;                        // device events: CUDA device index
  std::uint32_t context = 0, stream = 0;  // device events: CUPTI context and stream ids
  // Device events and API calls: the CUPTI correlation id that links a launch to its work.
  std::uint32_t correlation = 0;
  std::uint64_t bytes = 0;  // memcpy, memset
  std::string detail;       // kernels: "grid 8x1x1 block 128x1x1, 0 B shared, 32 regs"

  std::int64_t duration_ns() const { return end_ns - start_ns; }
};

// One traced call (run + sync) of the workload: its host window on the trace clock.
struct CallWindow {
  std::int64_t start_ns = 0, end_ns = 0;
};

struct Trace {
  std::vector<TraceEvent> events;
  std::vector<CallWindow> calls;  // the traced calls, in order
  std::uint64_t host_thread = 0;  // thread that ran the case
  std::int64_t origin_ns = 0;     // when tracing began; the Chrome trace counts from here
  // Where device activity came from ("CUPTI 13.0 (/usr/local/cuda/lib64/libcupti.so.13)"), or
  // empty when none was recorded; then device_activity_note says why (CPU backend, no CUDA
  // device, CUPTI refused, ...).
  std::string device_activity_source;
  std::string device_activity_note;
};

// A recorder of device activity (CUPTI on CUDA builds), started and stopped around the traced
// calls. Implementations never throw from start() or stop(): a failure is a reason.
class ActivitySource {
 public:
  virtual ~ActivitySource() = default;
  // Begins recording. False, with the reason in *why, when it cannot.
  virtual bool start(std::string* why) = 0;
  // Ends recording and appends what was recorded since start() to *out, on the trace clock.
  // Device work must be complete (synchronized) first. A loss (dropped records) goes to *warning.
  virtual void stop(std::vector<TraceEvent>* out, std::string* warning) = 0;
  // What records, e.g. "CUPTI 13.0 (/usr/local/cuda/lib64/libcupti.so.13)".
  virtual std::string description() const = 0;
};

// What tracing a case takes: how many traced calls after sampling, and the device activity
// source for device cases (null, with the reason in why_no_device_activity, where there is none).
struct TraceConfig {
  int calls = 3;
  ActivitySource* device_activity = nullptr;
  std::string why_no_device_activity = "no device activity source";
};

// Records host ranges into one Trace, on the thread that runs the case.
class Tracer {
 public:
  // device_case: the case runs on a device, so the traced calls record device activity from
  // config.device_activity. The trace is shared so that it outlives the Tracer.
  Tracer(std::shared_ptr<Trace> trace, const TraceConfig& config, bool device_case);
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Opens and closes a nested range on the calling thread (use TraceRange).
  void push(std::string name);
  void pop();
  // Device activity around the traced calls; a failure to start is noted in the trace, and a
  // warning goes to stderr once per process.
  void start_device_activity();
  void stop_device_activity();
  bool device_active() const { return device_active_; }
  void add_call(CallWindow window) { trace_->calls.push_back(window); }
  int calls() const { return config_.calls; }
  Trace& trace() { return *trace_; }

 private:
  struct Open {
    std::string name;
    std::int64_t start_ns;
  };
  std::shared_ptr<Trace> trace_;
  TraceConfig config_;
  bool device_case_;
  bool device_active_ = false;
  std::vector<Open> open_;
};

// NVTX ranges of the "myconv" domain; no-ops in builds without NVTX.
void nvtx_push(const char* name);
void nvtx_pop();

// A scoped range: always an NVTX range, and a host range of the tracer when there is one.
// Place it outside timed regions: it is cheap, not free.
class TraceRange {
 public:
  TraceRange(Tracer* tracer, const std::string& name) : tracer_(tracer) {
    nvtx_push(name.c_str());
    if (tracer_) tracer_->push(name);
  }
  ~TraceRange() {
    if (tracer_) tracer_->pop();
    nvtx_pop();
  }
  TraceRange(const TraceRange&) = delete;
  TraceRange& operator=(const TraceRange&) = delete;

 private:
  Tracer* tracer_;
};

// body() inside a TraceRange; returns what body returns.
template <typename F>
auto in_range(Tracer* tracer, const std::string& name, F&& body) -> decltype(body()) {
  TraceRange range(tracer, name);
  return std::forward<F>(body)();
}

// The traced calls: tracer.calls() times run() then sync(), each call a range "call i" holding
// "run" and "sync", all inside "traced calls", with device activity recorded around them. While
// device activity is recorded, one uncounted call comes first ("set-up call"): CUPTI instruments
// the process at the first launch after it is enabled (about a millisecond), which would
// otherwise land in call 1. Call it after the timed sampling, so that tracing never touches a
// recorded time.
void trace_calls(Tracer& tracer, const std::function<void()>& run,
                 const std::function<void()>& sync);

// The tracer of the traced calls running on this thread (inside trace_calls), else null: lets a
// backend mark the parts of one call (a generation's "prefill" and "decode step" ranges) in the
// traced calls only, never in a timed one.
Tracer* traced_call_tracer();

}  // namespace bench
