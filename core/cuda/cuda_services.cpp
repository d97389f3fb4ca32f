#include "core/cuda/cuda_services.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <mutex>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_raii.hpp"

namespace bench {
namespace {

// The few NVML entry points used here, declared by hand: the toolkit ships no nvml.h in every
// installation, and the library is opened at run time. Signatures as in NVML's nvml.h.
using NvmlDevice = struct NvmlDeviceOpaque*;
using NvmlReturn = int;  // NVML_SUCCESS = 0
constexpr int kNvmlClockSm = 1, kNvmlClockMem = 2;

struct Nvml {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*clock)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*max_clock)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*reasons)(NvmlDevice, unsigned long long*) = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  std::string why_not;  // empty when loaded and initialized
};

const Nvml& nvml() {
  static const Nvml lib = [] {
    Nvml n;
    void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      n.why_not = std::string("NVML not loaded: ") + dlerror();
      return n;
    }
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    };
    sym(n.init, "nvmlInit_v2");
    sym(n.by_pci_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
    sym(n.clock, "nvmlDeviceGetClockInfo");
    sym(n.max_clock, "nvmlDeviceGetMaxClockInfo");
    sym(n.reasons, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!n.reasons) sym(n.reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
    sym(n.error_string, "nvmlErrorString");
    if (!n.init || !n.by_pci_bus_id || !n.clock || !n.max_clock || !n.error_string) {
      n.why_not = "NVML lacks an entry point this program needs";
      return n;
    }
    if (const NvmlReturn r = n.init(); r != 0)
      n.why_not = std::string("nvmlInit failed: ") + n.error_string(r);
    return n;
  }();
  return lib;
}

// Bits of nvmlDeviceGetCurrentClocksEventReasons, in nvml.h's order.
std::vector<std::string> reason_names(unsigned long long bits) {
  static const char* names[] = {"idle",
                                "applications_clocks_setting",
                                "sw_power_cap",
                                "hw_slowdown",
                                "sync_boost",
                                "sw_thermal_slowdown",
                                "hw_thermal_slowdown",
                                "hw_power_brake_slowdown",
                                "display_clock_setting"};
  std::vector<std::string> out;
  for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); ++i)
    if (bits & (1ull << i)) out.emplace_back(names[i]);
  return out;
}

class GraphReplay final : public Replay {
 public:
  GraphReplay(cudaStream_t stream, cudaGraphExec_t exec, int calls)
      : stream_(stream), exec_(exec), calls_(calls) {}
  ~GraphReplay() override { CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec_)); }
  GraphReplay(const GraphReplay&) = delete;
  GraphReplay& operator=(const GraphReplay&) = delete;
  void launch() override { CUDA_CHECK(cudaGraphLaunch(exec_, stream_)); }
  int calls() const override { return calls_; }

 private:
  cudaStream_t stream_;
  cudaGraphExec_t exec_;
  int calls_;
};

class CudaServices final : public DeviceServices {
 public:
  CudaServices() {
    CUDA_CHECK(cudaGetDevice(&device_));
    int l2 = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device_));
    // Twice the L2 size, at least 64 MiB: enough that no line of the benchmark's data survives.
    flush_ = DeviceBuffer<unsigned char>(std::max<std::size_t>(2 * std::size_t(l2), 64u << 20));
    char bus_id[32] = {};
    CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device_));
    bus_id_ = bus_id;
  }

  void flush_cache() override {
    flush_.fill_bytes_async(++flush_value_ & 0xFF, stream_.get());
    stream_.synchronize();
  }
  std::size_t cache_flush_bytes() const override { return flush_.bytes(); }

  std::optional<ClockSample> clocks(std::string* why) override {
    const Nvml& n = nvml();
    if (!n.why_not.empty()) {
      if (why) *why = n.why_not;
      return std::nullopt;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!handle_) {
      if (const NvmlReturn r = n.by_pci_bus_id(bus_id_.c_str(), &handle_); r != 0) {
        handle_ = nullptr;
        if (why) *why = std::string("NVML has no device at ") + bus_id_ + ": " + n.error_string(r);
        return std::nullopt;
      }
    }
    unsigned sm = 0, mem = 0, sm_max = 0, mem_max = 0;
    for (auto [fn, type, out] :
         {std::tuple{n.clock, kNvmlClockSm, &sm}, std::tuple{n.clock, kNvmlClockMem, &mem},
          std::tuple{n.max_clock, kNvmlClockSm, &sm_max},
          std::tuple{n.max_clock, kNvmlClockMem, &mem_max}}) {
      if (const NvmlReturn r = fn(handle_, type, out); r != 0) {
        if (why) *why = std::string("NVML clock query failed: ") + n.error_string(r);
        return std::nullopt;
      }
    }
    ClockSample c;
    c.sm_mhz = sm;
    c.mem_mhz = mem;
    c.sm_max_mhz = sm_max;
    c.mem_max_mhz = mem_max;
    unsigned long long bits = 0;
    if (n.reasons && n.reasons(handle_, &bits) == 0) c.reasons = reason_names(bits);
    return c;
  }

  std::unique_ptr<Replay> capture(void* stream, const std::function<void()>& body, int calls,
                                  std::string* why) override {
    return capture_cuda_graph(stream, body, calls, why);
  }

 private:
  int device_ = 0;
  std::string bus_id_;
  Stream stream_;
  DeviceBuffer<unsigned char> flush_;
  int flush_value_ = 0;
  std::mutex mutex_;
  NvmlDevice handle_ = nullptr;
};

}  // namespace

std::unique_ptr<Replay> capture_cuda_graph(void* stream_ptr, const std::function<void()>& body,
                                         int calls, std::string* why) {
  auto stream = static_cast<cudaStream_t>(stream_ptr);
  auto fail = [&](const std::string& text) -> std::unique_ptr<Replay> {
    (void)cudaGetLastError();  // a failed capture leaves a sticky-free error to clear
    if (why) *why = text;
    return nullptr;
  };
  if (!stream) return fail("the backend enqueues its work on no stream of its own");
  if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
    return fail("cudaStreamBeginCapture failed");
  std::string body_error;
  try {
    for (int i = 0; i < calls; ++i) body();
  } catch (const std::exception& e) {
    body_error = e.what();
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  if (!body_error.empty() || end != cudaSuccess || !graph) {
    if (graph) cudaGraphDestroy(graph);
    return fail("capture failed: " +
                (body_error.empty() ? std::string(cudaGetErrorString(end)) : body_error));
  }
  std::size_t nodes = 0;
  cudaGraphGetNodes(graph, nullptr, &nodes);
  if (nodes == 0) {
    cudaGraphDestroy(graph);
    return fail("the captured graph is empty: the backend's work runs outside its stream");
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (inst != cudaSuccess)
    return fail(std::string("cudaGraphInstantiate: ") + cudaGetErrorString(inst));
  return std::make_unique<GraphReplay>(stream, exec, calls);
}

std::unique_ptr<DeviceServices> make_cuda_services() {
  return std::make_unique<CudaServices>();
}

}  // namespace bench
