#include "core/trace.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <iostream>

#if MYCONV_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace bench {

std::int64_t trace_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::uint64_t trace_thread_id() {
  thread_local const auto id = static_cast<std::uint64_t>(::syscall(SYS_gettid));
  return id;
}

const char* to_string(EventKind kind) {
  switch (kind) {
    case EventKind::host_range:
      return "host_range";
    case EventKind::cuda_api:
      return "cuda_api";
    case EventKind::kernel:
      return "kernel";
    case EventKind::memcpy:
      return "memcpy";
    case EventKind::memset:
      return "memset";
  }
  return "?";
}

#if MYCONV_HAVE_NVTX
namespace {
nvtxDomainHandle_t nvtx_domain() {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("myconv");
  return domain;
}
}  // namespace

void nvtx_push(const char* name) {
  nvtxEventAttributes_t attr = {};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = name;
  nvtxDomainRangePushEx(nvtx_domain(), &attr);
}
void nvtx_pop() {
  nvtxDomainRangePop(nvtx_domain());
}
#else
void nvtx_push(const char*) {}
void nvtx_pop() {}
#endif

Tracer::Tracer(std::shared_ptr<Trace> trace, const TraceConfig& config, bool device_case)
    : trace_(std::move(trace)), config_(config), device_case_(device_case) {
  trace_->host_thread = trace_thread_id();
  trace_->origin_ns = trace_clock_ns();
  if (!device_case_)
    trace_->device_activity_note = "not recorded: the case runs on the host";
  else if (!config_.device_activity)
    trace_->device_activity_note = "unavailable: " + config_.why_no_device_activity;
}

void Tracer::push(std::string name) {
  open_.push_back({std::move(name), trace_clock_ns()});
}

void Tracer::pop() {
  if (open_.empty()) return;
  TraceEvent e;
  e.kind = EventKind::host_range;
  e.end_ns = trace_clock_ns();
  e.start_ns = open_.back().start_ns;
  e.name = std::move(open_.back().name);
  e.thread = trace_->host_thread;
  open_.pop_back();
  e.depth = static_cast<int>(open_.size());
  trace_->events.push_back(std::move(e));
}

void Tracer::start_device_activity() {
  if (!device_case_ || !config_.device_activity || device_active_) return;
  std::string why;
  if (config_.device_activity->start(&why)) {
    device_active_ = true;
    trace_->device_activity_source = config_.device_activity->description();
    trace_->device_activity_note.clear();
    return;
  }
  trace_->device_activity_note = "unavailable: " + why;
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) std::cerr << "warning: GPU activity not traced: " << why << "\n";
}

void Tracer::stop_device_activity() {
  if (!device_active_) return;
  device_active_ = false;
  std::string warning;
  config_.device_activity->stop(&trace_->events, &warning);
  if (!warning.empty()) trace_->device_activity_note = warning;
}

namespace {
thread_local Tracer* g_traced_call_tracer = nullptr;
}  // namespace

Tracer* traced_call_tracer() { return g_traced_call_tracer; }

void trace_calls(Tracer& tracer, const std::function<void()>& run,
                 const std::function<void()>& sync) {
  TraceRange all(&tracer, "traced calls");
  struct Current {  // traced_call_tracer() while the traced calls run, also when one throws
    explicit Current(Tracer* t) { g_traced_call_tracer = t; }
    ~Current() { g_traced_call_tracer = nullptr; }
  } current(&tracer);
  tracer.start_device_activity();
  try {
    if (tracer.device_active())
      in_range(&tracer, "set-up call (not counted)", [&] {
        run();
        sync();
      });
    for (int i = 0; i < tracer.calls(); ++i) {
      TraceRange call(&tracer, "call " + std::to_string(i + 1));
      CallWindow w;
      w.start_ns = trace_clock_ns();
      in_range(&tracer, "run", run);
      in_range(&tracer, "sync", sync);
      w.end_ns = trace_clock_ns();
      tracer.add_call(w);
    }
  } catch (...) {
    tracer.stop_device_activity();
    throw;
  }
  tracer.stop_device_activity();
}

}  // namespace bench
