// CUDNN_CHECK, the cuDNN member of the checking macro family (see cuda_check.hpp). Include it only
// from targets that link cuDNN.
#pragma once

#include <cudnn.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace bench {

// The call, where, the status and, from cuDNN 9, the library's own message about the failure.
inline std::string cudnn_error_text(const char* call, cudnnStatus_t status, const char* file,
                                    int line) {
  std::string text = std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                     cudnnGetErrorString(status);
#if CUDNN_MAJOR >= 9
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof detail);
  if (detail[0]) text += std::string(" (") + detail + ")";
#endif
  return text;
}

}  // namespace bench

#define CUDNN_CHECK(call)                                                             \
  do {                                                                                \
    const cudnnStatus_t cudnn_check_status_ = (call);                                 \
    if (cudnn_check_status_ != CUDNN_STATUS_SUCCESS)                                  \
      throw std::runtime_error(                                                       \
          ::bench::cudnn_error_text(#call, cudnn_check_status_, __FILE__, __LINE__)); \
  } while (0)

#define CUDNN_CHECK_NOTHROW(call)                                                             \
  do {                                                                                        \
    const cudnnStatus_t cudnn_check_status_ = (call);                                         \
    if (cudnn_check_status_ != CUDNN_STATUS_SUCCESS)                                          \
      std::fprintf(                                                                           \
          stderr, "warning: %s\n",                                                            \
          ::bench::cudnn_error_text(#call, cudnn_check_status_, __FILE__, __LINE__).c_str()); \
  } while (0)
