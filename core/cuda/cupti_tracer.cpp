#include "core/cuda/cupti_tracer.hpp"

#include <cupti.h>
#include <link.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "core/cuda/cupti_check.hpp"

namespace bench {
namespace {

constexpr std::size_t kBufferBytes = 4u << 20;
constexpr std::size_t kBufferAlign = 8;  // CUPTI's requirement for activity buffers

const CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                     CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                     CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};

// What the buffer callbacks collect; they run on CUPTI's worker thread or inside
// cuptiActivityFlushAll. Never destroyed: CUPTI may deliver buffers during process exit.
struct Collected {
  std::mutex mutex;
  std::vector<TraceEvent> events;  // times still on CUPTI's clock
  std::size_t dropped = 0;
};
Collected& collected() {
  static Collected* c = new Collected;
  return *c;
}

std::uint64_t CUPTIAPI steady_timestamp() {
  return static_cast<std::uint64_t>(trace_clock_ns());
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel".
std::string api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name)
    return (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "runtime API " : "driver API ") +
           std::to_string(cbid);
  std::string s = name;
  if (const std::size_t v = s.rfind("_v");
      v != std::string::npos && v + 2 < s.size() &&
      s.find_first_not_of("0123456789", v + 2) == std::string::npos)
    s.erase(v);
  return s;
}

const char* memcpy_kind(std::uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "Memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "Memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "Memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "Memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "Memcpy PtoP";
    default:
      return "Memcpy (array)";
  }
}

// The fields every GPU-side record (kernel, memcpy, memset) has under the same names.
template <class Record>
void copy_gpu_fields(const Record* r, TraceEvent* e) {
  e->start_ns = static_cast<std::int64_t>(r->start);
  e->end_ns = static_cast<std::int64_t>(r->end);
  e->device = static_cast<int>(r->deviceId);
  e->context = r->contextId;
  e->stream = r->streamId;
  e->correlation = r->correlationId;
}

// One activity record as a TraceEvent; false for kinds not kept and for records without times.
bool convert(const CUpti_Activity* record, TraceEvent* e) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      // The fields read here sit at the same offsets in every kernel record version since 4.
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      if (k->start == 0 && k->end == 0) return false;
      e->kind = EventKind::kernel;
      e->name = k->name ? k->name : "(unnamed kernel)";
      copy_gpu_fields(k, e);
      e->detail = "grid " + std::to_string(k->gridX) + "x" + std::to_string(k->gridY) + "x" +
                  std::to_string(k->gridZ) + " block " + std::to_string(k->blockX) + "x" +
                  std::to_string(k->blockY) + "x" + std::to_string(k->blockZ) + ", " +
                  std::to_string(k->staticSharedMemory + k->dynamicSharedMemory) + " B shared, " +
                  std::to_string(k->registersPerThread) + " registers";
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      e->kind = EventKind::memcpy;
      e->name = memcpy_kind(m->copyKind);
      copy_gpu_fields(m, e);
      e->bytes = m->bytes;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      e->kind = EventKind::memset;
      e->name = "Memset";
      copy_gpu_fields(m, e);
      e->bytes = m->bytes;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      e->kind = EventKind::cuda_api;
      e->name = api_name(record->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API
                                                                     : CUPTI_CB_DOMAIN_DRIVER_API,
                         a->cbid);
      e->start_ns = static_cast<std::int64_t>(a->start);
      e->end_ns = static_cast<std::int64_t>(a->end);
      e->thread = a->threadId;
      e->correlation = a->correlationId;
      return true;
    }
    default:
      return false;
  }
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t /*size*/,
                               size_t valid_size) {
  std::vector<TraceEvent> events;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    TraceEvent e;
    if (convert(record, &e)) events.push_back(std::move(e));
  }
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) != CUPTI_SUCCESS) dropped = 0;
  std::free(buffer);
  Collected& c = collected();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.dropped += dropped;
  for (TraceEvent& e : events) c.events.push_back(std::move(e));
}

// The loaded libcupti files ("" when none is found).
std::string loaded_cupti_files() {
  std::string files;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (name.find("libcupti") != std::string::npos) {
          auto* s = static_cast<std::string*>(out);
          *s += (s->empty() ? "" : ", ") + name;
        }
        return 0;
      },
      &files);
  return files;
}

// A (trace clock, CUPTI clock) pair read as close together as possible: of five tries, the one
// whose two host reads are nearest, with the host time at their midpoint.
struct ClockPair {
  std::int64_t host_ns = 0, cupti_ns = 0;
};
ClockPair calibrate() {
  ClockPair best;
  std::int64_t best_width = -1;
  for (int i = 0; i < 5; ++i) {
    std::uint64_t cupti = 0;
    const std::int64_t before = trace_clock_ns();
    if (cuptiGetTimestamp(&cupti) != CUPTI_SUCCESS) continue;
    const std::int64_t after = trace_clock_ns();
    if (best_width < 0 || after - before < best_width) {
      best_width = after - before;
      best = {before + (after - before) / 2, static_cast<std::int64_t>(cupti)};
    }
  }
  return best;
}

class CuptiActivitySource final : public ActivitySource {
 public:
  bool start(std::string* why) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (active_) {
      if (why) *why = "CUPTI is already recording";
      return false;
    }
    try {
      if (!registered_) {
        // The thread ids of API records become OS thread ids (gettid), as the host ranges use.
        CUPTI_CHECK(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM));
        own_clock_ = cuptiActivityRegisterTimestampCallback(&steady_timestamp) == CUPTI_SUCCESS;
        CUPTI_CHECK(cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed));
        registered_ = true;
      }
      {
        Collected& c = collected();
        std::lock_guard<std::mutex> clock(c.mutex);
        c.events.clear();
        c.dropped = 0;
      }
      start_ = calibrate();
      for (const CUpti_ActivityKind kind : kKinds) {
        CUPTI_CHECK(cuptiActivityEnable(kind));
        enabled_.push_back(kind);
      }
    } catch (const std::exception& e) {
      for (const CUpti_ActivityKind kind : enabled_) cuptiActivityDisable(kind);
      enabled_.clear();
      if (why) *why = std::string("CUPTI: ") + e.what();
      return false;
    }
    // Read while attached: after stop() any CUPTI call would attach CUPTI again.
    std::uint32_t version = 0;
    cuptiGetVersion(&version);
    const std::string files = loaded_cupti_files();
    description_ = "CUPTI API " + std::to_string(version) + " (" +
                   (files.empty() ? std::string("library path unknown") : files) + ")" +
                   (own_clock_ ? "" : ", CUPTI clock mapped to steady_clock");
    active_ = true;
    return true;
  }

  void stop(std::vector<TraceEvent>* out, std::string* warning) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!active_) return;
    active_ = false;
    // Deliver every record, including those of buffers not yet full, then stop recording.
    CUPTI_CHECK_NOTHROW(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    for (const CUpti_ActivityKind kind : enabled_) CUPTI_CHECK_NOTHROW(cuptiActivityDisable(kind));
    enabled_.clear();
    CUPTI_CHECK_NOTHROW(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    const ClockPair end = calibrate();
    // Detach CUPTI until the next start(): once attached, it slows every later CUDA API call a
    // little even with all activity kinds disabled (seen on an H200: LibTorch's launch of a
    // 5 us conv took about 20% more GPU time in the cases after a traced one). The device work
    // is synchronized and the buffers are flushed, as cuptiFinalize() requires.
    CUPTI_CHECK_NOTHROW(cuptiFinalize());
    registered_ = false;

    std::vector<TraceEvent> events;
    std::size_t dropped = 0;
    {
      Collected& c = collected();
      std::lock_guard<std::mutex> clock(c.mutex);
      events.swap(c.events);
      dropped = c.dropped;
    }
    for (TraceEvent& e : events) {
      if (!own_clock_) {
        e.start_ns = to_trace_clock(e.start_ns, end);
        e.end_ns = to_trace_clock(e.end_ns, end);
      }
      out->push_back(std::move(e));
    }
    if (dropped && warning)
      *warning = "CUPTI dropped " + std::to_string(dropped) + " records (buffers full)";
  }

  std::string description() const override { return description_; }

 private:
  // CUPTI's clock to the trace clock, linear between the calibrations at start() and stop().
  std::int64_t to_trace_clock(std::int64_t cupti_ns, const ClockPair& end) const {
    const double offset_start = double(start_.cupti_ns - start_.host_ns);
    const double offset_end = double(end.cupti_ns - end.host_ns);
    const double span = double(end.cupti_ns - start_.cupti_ns);
    const double f = span > 0 ? double(cupti_ns - start_.cupti_ns) / span : 0.0;
    return cupti_ns - static_cast<std::int64_t>(offset_start + f * (offset_end - offset_start));
  }

  std::mutex mutex_;
  bool registered_ = false, own_clock_ = false, active_ = false;
  std::vector<CUpti_ActivityKind> enabled_;
  ClockPair start_;
  std::string description_ = "CUPTI (not started)";
};

}  // namespace

std::unique_ptr<ActivitySource> make_cupti_activity_source() {
  return std::make_unique<CuptiActivitySource>();
}

}  // namespace bench
