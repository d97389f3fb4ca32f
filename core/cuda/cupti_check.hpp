// CUPTI_CHECK, the CUPTI member of the checking macro family (see cuda_check.hpp). Include it only
// from targets that link CUPTI (bench_cupti).
//   CUPTI_CHECK(call)          throws std::runtime_error naming the call, file, line and error
//   CUPTI_CHECK_NOTHROW(call)  for destructors and cleanup: prints the same text to stderr
#pragma once

#include <cupti.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace bench {

// "cuptiActivityEnable(kind) failed at core/cuda/x.cpp:12: CUPTI_ERROR_NOT_INITIALIZED".
inline std::string cupti_error_text(const char* call, CUptiResult result, const char* file,
                                    int line) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || !text) text = "unknown CUPTI error";
  return std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + text;
}

}  // namespace bench

#define CUPTI_CHECK(call)                                                             \
  do {                                                                                \
    const CUptiResult cupti_check_result_ = (call);                                   \
    if (cupti_check_result_ != CUPTI_SUCCESS)                                         \
      throw std::runtime_error(                                                       \
          ::bench::cupti_error_text(#call, cupti_check_result_, __FILE__, __LINE__)); \
  } while (0)

#define CUPTI_CHECK_NOTHROW(call)                                                             \
  do {                                                                                        \
    const CUptiResult cupti_check_result_ = (call);                                           \
    if (cupti_check_result_ != CUPTI_SUCCESS)                                                 \
      std::fprintf(                                                                           \
          stderr, "warning: %s\n",                                                            \
          ::bench::cupti_error_text(#call, cupti_check_result_, __FILE__, __LINE__).c_str()); \
  } while (0)
