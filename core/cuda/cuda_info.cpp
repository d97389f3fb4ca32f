#include "core/cuda/cuda_info.hpp"

#include <cuda_runtime_api.h>

#include "core/cuda/cuda_check.hpp"

namespace bench {

std::string cuda_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

static CudaAvailability ask_runtime() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // clear the error so that later calls do not report it again
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

static int attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, device));
  return value;
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
