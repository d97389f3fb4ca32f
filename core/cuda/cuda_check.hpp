// The checking macro family of every CUDA runtime call (cuDNN's is in cudnn_check.hpp, included
// only where cuDNN is linked):
//   CUDA_CHECK(call)           throws std::runtime_error naming the call, file, line and error
//   CUDA_CHECK_NOTHROW(call)   for destructors: prints the same text to stderr and carries on
//   CUDA_CHECK_LAST_LAUNCH()   after every kernel launch: a bad launch configuration
//                              (cudaGetLastError); faults inside the kernel surface at the next
//                              synchronizing call
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace bench {

// "cudaMalloc(&p, n) failed at core/x.cpp:12: out of memory (cudaErrorMemoryAllocation)".
inline std::string cuda_error_text(const char* call, cudaError_t err, const char* file, int line) {
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
         cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")";
}

[[noreturn]] inline void throw_cuda_error(const char* call, cudaError_t err, const char* file,
                                          int line) {
  throw std::runtime_error(cuda_error_text(call, err, file, line));
}

}  // namespace bench

#define CUDA_CHECK(call)                                                     \
  do {                                                                       \
    const cudaError_t cuda_check_err_ = (call);                              \
    if (cuda_check_err_ != cudaSuccess)                                      \
      ::bench::throw_cuda_error(#call, cuda_check_err_, __FILE__, __LINE__); \
  } while (0)

#define CUDA_CHECK_NOTHROW(call)                                                                  \
  do {                                                                                            \
    const cudaError_t cuda_check_err_ = (call);                                                   \
    if (cuda_check_err_ != cudaSuccess)                                                           \
      std::fprintf(stderr, "warning: %s\n",                                                       \
                   ::bench::cuda_error_text(#call, cuda_check_err_, __FILE__, __LINE__).c_str()); \
  } while (0)

#define CUDA_CHECK_LAST_LAUNCH() CUDA_CHECK(cudaGetLastError())
