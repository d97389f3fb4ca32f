// The CUDA side of generation, built only with a CUDA LibTorch (MYCONV_HAVE_TORCH_CUDA): the step
// clock of CUDA events on the current stream, and the caching allocator's statistics and cuBLAS
// workspaces (bench.cpp). libtorch_graph's capture of the decode step is in
// baselines/transformer/libtorch_graph.cpp.
#include <cuda_runtime_api.h>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/version.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "models/transformer/generate.hpp"

namespace transformer {

namespace {

// ATen's events (LibTorch's CUDA runtime, the one its streams belong to), made with timing.
class CudaStepClock final : public StepClock {
 public:
  explicit CudaStepClock(int max_marks) {
    for (int i = 0; i <= max_marks; ++i) events_.emplace_back(cudaEventDefault);
  }
  void start() override {
    used_ = 0;
    record();
  }
  void mark() override { record(); }
  std::vector<double> read_ms() override {
    std::vector<double> ms;
    if (used_ == 0) return ms;
    events_[used_ - 1].synchronize();
    for (std::size_t i = 1; i < used_; ++i)
      ms.push_back(double(events_[i - 1].elapsed_time(events_[i])));
    return ms;
  }

 private:
  void record() {
    BENCH_CHECK(used_ < events_.size(), "more step marks than the clock was made for");
    events_[used_++].record();  // on the current stream
  }
  std::vector<at::cuda::CUDAEvent> events_;
  std::size_t used_ = 0;
};

}  // namespace

std::unique_ptr<StepClock> make_cuda_step_clock(int max_marks) {
  return std::make_unique<CudaStepClock>(max_marks);
}

void cuda_reset_peak(int device) {
  c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
}

void cuda_peak(int device, std::int64_t* allocated, std::int64_t* reserved) {
  const auto stats =
      c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  *allocated = stats.allocated_bytes[0].peak;  // StatType::AGGREGATE
  *reserved = stats.reserved_bytes[0].peak;
}

void cuda_empty_cache() {
  c10::cuda::CUDACachingAllocator::emptyCache();
}

std::int64_t cuda_allocated_now(int device) {
  const auto stats =
      c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
  return stats.allocated_bytes[0].current;
}

// LibTorch 2.x keeps one cuBLAS workspace (and one cuBLASLt workspace) per (handle, stream) that
// ran a matmul, allocated from the caching allocator and never freed: a graph's capture stream (a
// new one from the pool per capture) left 33 MiB allocated behind every libtorch_graph case on an
// H200. Cleared before each case, every case allocates its own. (LibTorch 1.x lets
// cuBLAS allocate its workspace itself, outside the caching allocator.)
void cuda_clear_blas_workspaces() {
#if TORCH_VERSION_MAJOR >= 2
  at::cuda::clearCublasWorkspaces();
#endif
}

std::int64_t cuda_blas_workspace_bytes() {
  std::int64_t bytes = 0;
#if TORCH_VERSION_MAJOR >= 2
  bytes = static_cast<std::int64_t>(at::cuda::getChosenWorkspaceSize());
#endif
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
  // cuBLASLt's own, unless TORCH_CUBLASLT_UNIFIED_WORKSPACE makes it share cuBLAS's.
  const char* unified = std::getenv("TORCH_CUBLASLT_UNIFIED_WORKSPACE");
  const std::string u = unified ? unified : "";
  if (u != "1" && u != "ON" && u != "on" && u != "TRUE" && u != "true" && u != "YES" && u != "yes")
    bytes += static_cast<std::int64_t>(at::cuda::getCUDABlasLtWorkspaceSize());
#endif
  return bytes;
}

}  // namespace transformer
