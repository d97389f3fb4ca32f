// The checking macros of every cuBLAS / cuBLASLt call, in the style of core/cuda/cuda_check.hpp:
//   CUBLAS_CHECK(call)           throws std::runtime_error naming the call, file, line and status
//   CUBLAS_CHECK_NOTHROW(call)   for destructors: prints the same text to stderr and carries on
#pragma once

#include <cublasLt.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace bench {

// "cublasLtMatmul(...) failed at baselines/ops/cublaslt.cpp:12: CUBLAS_STATUS_NOT_SUPPORTED (the
// functionality requested is not supported)".
inline std::string cublas_error_text(const char* call, cublasStatus_t status, const char* file,
                                     int line) {
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
         cublasLtGetStatusName(status) + " (" + cublasLtGetStatusString(status) + ")";
}

[[noreturn]] inline void throw_cublas_error(const char* call, cublasStatus_t status,
                                            const char* file, int line) {
  throw std::runtime_error(cublas_error_text(call, status, file, line));
}

}  // namespace bench

#define CUBLAS_CHECK(call)                                                          \
  do {                                                                              \
    const cublasStatus_t cublas_check_status_ = (call);                             \
    if (cublas_check_status_ != CUBLAS_STATUS_SUCCESS)                              \
      ::bench::throw_cublas_error(#call, cublas_check_status_, __FILE__, __LINE__); \
  } while (0)

#define CUBLAS_CHECK_NOTHROW(call)                                                              \
  do {                                                                                          \
    const cublasStatus_t cublas_check_status_ = (call);                                         \
    if (cublas_check_status_ != CUBLAS_STATUS_SUCCESS)                                          \
      std::fprintf(                                                                             \
          stderr, "warning: %s\n",                                                              \
          ::bench::cublas_error_text(#call, cublas_check_status_, __FILE__, __LINE__).c_str()); \
  } while (0)
