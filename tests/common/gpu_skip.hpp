// Skipping a GPU test, with the reason, where no CUDA device can run it.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "core/cuda/cuda_info.hpp"

namespace conv::testing {

// Empty where a CUDA device can run the tests, else why not.
inline std::string gpu_unavailable_reason() {
  const bench::CudaAvailability a = bench::cuda_device_available();
  return a.ok ? "" : a.reason;
}

}  // namespace conv::testing

// Skips the test with `reason` (an expression giving a std::string) where it is not empty.
#define MYCONV_SKIP_IF(reason)                              \
  do {                                                      \
    if (const std::string why_ = (reason); !why_.empty()) { \
      GTEST_SKIP() << why_;                                 \
    }                                                       \
  } while (0)

#define MYCONV_SKIP_WITHOUT_GPU()                                                            \
  do {                                                                                       \
    if (const std::string why_ = ::conv::testing::gpu_unavailable_reason(); !why_.empty()) { \
      GTEST_SKIP() << "needs a CUDA device: " << why_;                                       \
    }                                                                                        \
  } while (0)
