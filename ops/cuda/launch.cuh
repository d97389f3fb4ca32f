// Launch sizing our op kernels share (ops/cuda/*.cu): the current device's multiprocessor count,
// asked once per process (launches are captured in CUDA graphs: no query per call), and the grid
// of a grid-stride kernel sized to the blocks resident at once.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "ops/cuda/memory_index.hpp"

namespace ops::cuda {

// Multiprocessors of the current device (the first asked: the suite runs on one device).
inline int sm_count() {
  static const int sms = [] {
    int device = 0, n = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    return n;
  }();
  return sms;
}

// Whether the current device has compute capability 8.0 or newer (cp.async, mma.sync with tf32
// and bf16); false without a device. Never throws; asked once per process.
inline bool device_sm80() {
  return bench::cuda_compute_capability_at_least(8);
}

// A grid-stride grid for kKernel launched with kThreads per block: at most the blocks resident at
// once (the kernel's occupancy, asked once per kernel, times the SMs), so that no partial second
// wave follows the first (a kernel of more than 32 registers fits fewer than 8 blocks of 256 per
// SM).
template <auto kKernel, int kThreads>
unsigned persistent_grid(std::int64_t items, std::int64_t items_per_block) {
  static const std::int64_t resident = [] {
    int per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kKernel, kThreads, 0));
    return std::int64_t(per_sm > 0 ? per_sm : 1) * sm_count();
  }();
  return unsigned(grid_blocks(items, items_per_block, resident));
}

}  // namespace ops::cuda
