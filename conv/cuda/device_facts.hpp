// What our conv CUDA backends (conv/cuda/*.cpp) ask of the current device when they plan a case,
// and how their refusals state device memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>

#include "core/cuda/cuda_check.hpp"

namespace conv {

// Multiprocessors of the current device (asked on each call); throws through CUDA_CHECK.
inline int sm_count() {
  int device = 0, count = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
  return count;
}

// bytes in GiB with two decimals: "1.50 GiB".
inline std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace conv
