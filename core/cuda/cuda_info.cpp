#include "core/cuda/cuda_info.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "core/cuda/cuda_check.hpp"

namespace bench {

std::string cuda_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string own_kernels_version() {
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  return "CUDA runtime " + cuda_version_string(runtime) + " (our kernels)";
}

bool cuda_compute_capability_at_least(int major) {
  static const int current = [] {
    if (!cuda_device_available().ok) return -1;
    int device = 0, m = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&m, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
      (void)cudaGetLastError();
      return -1;
    }
    return m;
  }();
  return current >= major;
}

// Whether the NVIDIA driver's user-space library can be loaded. Without it the runtime answers
// cudaErrorInsufficientDriver ("CUDA driver version is insufficient for CUDA runtime version"),
// which would send a user without any NVIDIA driver to upgrade one.
static bool driver_library_present() {
  void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
  if (!handle) handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!handle) return false;
  dlclose(handle);
  return true;
}

static CudaAvailability ask_runtime() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // clear the error so that later calls do not report it again
    if (err == cudaErrorInsufficientDriver && !driver_library_present())
      return {false,
              "no NVIDIA driver found (libcuda.so.1 cannot be loaded): GPU backends need an "
              "NVIDIA GPU and its driver"};
    return {false, std::string("no usable CUDA device: cudaGetDeviceCount: ") +
                       cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")"};
  }
  if (count == 0) return {false, "no usable CUDA device: cudaGetDeviceCount found 0 devices"};
  return {true, ""};
}

CudaAvailability cuda_device_available() {
  static const CudaAvailability answer = ask_runtime();  // thread-safe initialization
  return answer;
}

int cuda_device_count() {
  if (!cuda_device_available().ok) return 0;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

void cuda_set_device(int device) {
  CUDA_CHECK(cudaSetDevice(device));
}

unsigned long long cuda_free_memory_bytes() {
  if (!cuda_device_available().ok) return 0;
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return free_bytes;
}

static int attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, device));
  return value;
}

// Arithmetic per SM per clock (FLOP, a multiply-add counting 2) of the architectures whose
// figures are published: FP32 on the CUDA cores; TF32, FP16 and BF16 dense on the tensor cores
// with FP32 accumulation. 0 = not known here (no such unit, or consumer parts at half rate).
struct PeakRates {
  int fp32, tf32, fp16, bf16;
};
static PeakRates peak_rates(int major, int minor) {
  if (major == 7 && minor == 0) return {128, 0, 1024, 0};        // V100
  if (major == 7 && minor == 5) return {128, 0, 1024, 0};        // T4
  if (major == 8 && minor == 0) return {128, 1024, 2048, 2048};  // A100
  if (major == 9 && minor == 0) return {256, 2048, 4096, 4096};  // H100, H200
  if (major == 8) return {256, 0, 0, 0};                         // GA10x, AD10x: FP32 only
  return {0, 0, 0, 0};
}

nlohmann::ordered_json cuda_device_info(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  // CUDA 13 removed the clock fields from cudaDeviceProp; the attributes remain.
  const int sm_clock_khz = attribute(cudaDevAttrClockRate, device);
  const int mem_clock_khz = attribute(cudaDevAttrMemoryClockRate, device);
  const int bus_width_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, device);
  // Double data rate: two transfers per memory clock, bus_width_bits / 8 bytes per transfer.
  const double bandwidth_gb_s = 2.0 * mem_clock_khz * 1e3 * (bus_width_bits / 8.0) / 1e9;
  nlohmann::ordered_json j;
  j["index"] = device;
  j["name"] = prop.name;
  j["compute_capability"] = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  j["sm_count"] = prop.multiProcessorCount;
  j["sm_clock_mhz"] = sm_clock_khz / 1000.0;
  j["l2_cache_bytes"] = prop.l2CacheSize;
  j["shared_memory_per_sm_bytes"] = prop.sharedMemPerMultiprocessor;
  j["shared_memory_per_block_optin_bytes"] = prop.sharedMemPerBlockOptin;
  j["registers_per_sm"] = prop.regsPerMultiprocessor;
  j["memory_bytes"] = prop.totalGlobalMem;
  j["memory_clock_mhz"] = mem_clock_khz / 1000.0;
  j["memory_bus_width_bits"] = bus_width_bits;
  j["theoretical_memory_bandwidth_gb_s"] = bandwidth_gb_s;
  // Ceilings for rooflines: SM count x maximum SM clock x FLOP per SM per clock.
  const PeakRates rates = peak_rates(prop.major, prop.minor);
  const double per_rate = prop.multiProcessorCount * (sm_clock_khz * 1e3) / 1e12;
  nlohmann::ordered_json peak = nlohmann::ordered_json::object();
  for (auto [name, rate] : {std::pair{"fp32", rates.fp32}, std::pair{"tf32", rates.tf32},
                            std::pair{"fp16", rates.fp16}, std::pair{"bf16", rates.bf16}})
    if (rate > 0) peak[name] = rate * per_rate;
  j["theoretical_peak_tflops"] = peak;
  j["theoretical_peak_note"] =
      "SM count x maximum SM clock x FLOP/clock/SM; tensor-core figures dense with FP32 "
      "accumulation";
  j["ecc_enabled"] = prop.ECCEnabled != 0;
  j["pci_bus_id"] = prop.pciBusID;
  return j;
}

nlohmann::ordered_json cuda_system_info() {
  nlohmann::ordered_json j;
  const CudaAvailability a = cuda_device_available();
  j["available"] = a.ok;
  if (!a.ok) {
    j["reason"] = a.reason;
    return j;
  }
  try {
    int driver = 0, runtime = 0, count = 0;
    CUDA_CHECK(cudaDriverGetVersion(&driver));
    CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
    CUDA_CHECK(cudaGetDeviceCount(&count));
    j["driver_version"] = cuda_version_string(driver);
    j["runtime_version"] = cuda_version_string(runtime);
    nlohmann::ordered_json devices = nlohmann::ordered_json::array();
    for (int d = 0; d < count; ++d) devices.push_back(cuda_device_info(d));
    j["devices"] = devices;
  } catch (const std::exception& e) {
    j["error"] = e.what();
  }
  return j;
}

}  // namespace bench
