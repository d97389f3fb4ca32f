// What the LibTorch CUDA backends of every suite share (baselines/conv/, baselines/ops/,
// baselines/mlp/): whether LibTorch can run here, the device memory ATen's caching allocator
// takes, and the instance whose one call returns its output tensor (CudaInstance). Header-only;
// only code built with a CUDA LibTorch includes it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <cuda_runtime_api.h>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/runner.hpp"
#include "core/torch/graph_replay.hpp"

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

// A suite's Instance (SuiteInstance) run by ATen on a stream of its own from ATen's pool, whose
// run() makes current (CUDAStreamGuard) and whose call allocates its output tensor, output():
// synchronized on that stream, timed by CUDA events on it, compiled by one call that measures
// the workspace (transient_bytes; the output released first), and replayed as a captured graph
// (graph_replay.hpp).
template <class SuiteInstance>
class CudaInstance : public SuiteInstance {
 public:
  CudaInstance() : stream_(at::cuda::getStreamFromPool()), timer_(stream_.stream()) {}

  void compile() override {
    output() = at::Tensor();
    workspace_ = transient_bytes(stream_, [this] { this->run(); });
  }
  void sync() override { CUDA_CHECK(cudaStreamSynchronize(stream_.stream())); }
  std::optional<std::int64_t> workspace_bytes() const override { return workspace_; }
  DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.stream(); }
  std::unique_ptr<Replay> make_replay(DeviceServices&, int calls, std::string* why) override {
    return capture_graph_replay(
        stream_, calls, &output(), [this] { this->run(); }, why);
  }

 protected:
  virtual at::Tensor& output() = 0;

  c10::cuda::CUDAStream stream_;
  CudaEventTimer timer_;

 private:
  std::int64_t workspace_ = 0;
};

}  // namespace bench::libtorch
