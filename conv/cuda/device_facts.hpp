// What our conv CUDA backends (conv/cuda/*.cpp) ask of the current device when they plan a case,
// and how their refusals state device memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
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

// Whether our kernels that take it are launched with programmatic dependent launch
// (core/cuda/pdl.cuh): on a device of compute capability 9.0 or above, unless MYCONV_PDL=0 (for
// experiments; 1 or unset: on). Throws std::invalid_argument on another value.
inline bool pdl_launch() {
  if (const char* v = std::getenv("MYCONV_PDL"); v && *v) {
    const std::string text = v;
    if (text != "0" && text != "1")
      throw std::invalid_argument("MYCONV_PDL='" + text + "': expected 0 or 1");
    if (text == "0") return false;
  }
  int device = 0, major = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major >= 9;
}

// bytes in GiB with two decimals: "1.50 GiB".
inline std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace conv
