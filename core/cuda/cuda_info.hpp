// Facts about the CUDA devices of this machine, for result records and for deciding whether a GPU
// backend can run at all. Nothing here throws when there is no GPU or no driver.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace bench {

// Whether CUDA code can run here: ok, or not with the reason: "no NVIDIA driver found ..." where
// the driver's library cannot be loaded, else the cudaGetDeviceCount error text (e.g. "no
// CUDA-capable device is detected", or "CUDA driver version is insufficient..." for an old driver).
struct CudaAvailability {
  bool ok = false;
  std::string reason;
};

// Asks the runtime once per process and remembers the answer.
CudaAvailability cuda_device_available();

// CUDA devices here: cudaGetDeviceCount's answer, 0 where no device is usable. Never throws.
int cuda_device_count();

// Makes `device` the current CUDA device of this thread (cudaSetDevice); throws
// std::runtime_error through CUDA_CHECK.
void cuda_set_device(int device);

// Free memory of the current device in bytes (cudaMemGetInfo), 0 when no device is usable or the
// call fails (the caller then does not check device memory). Never throws.
unsigned long long cuda_free_memory_bytes();

// One device: name, compute capability, SM count, clock, L2 size, memory size, theoretical
// memory bandwidth (2 * memory clock * bus width / 8, double data rate), ECC. Throws
// std::runtime_error through CUDA_CHECK for a device that does not exist.
nlohmann::ordered_json cuda_device_info(int device);

// {"driver_version", "runtime_version", "devices": [cuda_device_info(0), ...]} when a device is
// available, else {"available": false, "reason": ...}. Never throws.
nlohmann::ordered_json cuda_system_info();

// "13.0" from CUDA's integer versions (1000 * major + 10 * minor).
std::string cuda_version_string(int version);

// Whether the current device (the first asked: the suites run on one device) has compute
// capability `major`.0 or newer; false without a usable device. Never throws; asks the runtime
// once per process.
bool cuda_compute_capability_at_least(int major);

// "CUDA runtime 13.0 (our kernels)": the library version of a backend made of our own kernels
// (the runtime's version, 0.0 where it cannot say). Never throws.
std::string own_kernels_version();

}  // namespace bench
