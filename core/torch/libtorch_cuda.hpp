// What the LibTorch CUDA backends of every suite share (baselines/conv/, baselines/ops/,
// baselines/mlp/): whether LibTorch can run here, and the device memory ATen's caching allocator
// takes. Header-only; only code built with a CUDA LibTorch includes it.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/runner.hpp"

namespace bench::libtorch {

// A CUDA device exists and LibTorch finds it.
inline Support cuda_available() {
  const CudaAvailability a = cuda_device_available();
  if (!a.ok) return Support::no(a.reason);
  if (!torch::cuda::is_available())
    return Support::no("LibTorch " TORCH_VERSION " finds no CUDA device");
  return Support::yes();
}

// Bytes ATen's caching allocator has handed out on device now, and its peak since the last reset.
inline std::int64_t allocated_bytes(c10::DeviceIndex device, bool peak) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device);
  const auto& s = stats.allocated_bytes[0];  // StatType::AGGREGATE
  return peak ? s.peak : s.current;
}

// Bytes ATen took on stream's device during call(), which enqueues on stream, beyond what stays
// allocated after it (the output): a library's workspace, a kernel's buffers of its own. Waits for
// the stream before and after.
template <class Call>
std::int64_t transient_bytes(const c10::cuda::CUDAStream& stream, Call&& call) {
  const c10::DeviceIndex device = stream.device_index();
  CUDA_CHECK(cudaStreamSynchronize(stream.stream()));
  const std::int64_t before = allocated_bytes(device, false);
  c10::cuda::CUDACachingAllocator::resetPeakStats(device);
  call();
  CUDA_CHECK(cudaStreamSynchronize(stream.stream()));
  const std::int64_t output = allocated_bytes(device, false) - before;
  return allocated_bytes(device, true) - before - output;
}

}  // namespace bench::libtorch
