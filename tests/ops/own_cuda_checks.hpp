// What the GPU tests of own_cuda's matmul variants share: the skip reason for a device too old
// for a variant, and the check of two calls from a NaN-poisoned output.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "core/cuda/cuda_check.hpp"
#include "ops/backend.hpp"
#include "ops/data.hpp"
#include "tests/common/case_helpers.hpp"
#include "tests/common/gpu_skip.hpp"
#include "tests/ops/random_ops.hpp"

namespace ops::testing {

// Empty where the current device has compute capability `major`.0 or newer, else why not: no
// usable device ("needs a CUDA device: " and the reason) or `too_old` for an older one.
inline std::string compute_capability_unavailable_reason(int major, const std::string& too_old) {
  if (const std::string why = conv::testing::gpu_unavailable_reason(); !why.empty())
    return "needs a CUDA device: " + why;
  int device = 0, device_major = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&device_major, cudaDevAttrComputeCapabilityMajor, device));
  return device_major >= major ? "" : too_old;
}

// Two calls of inst (compiled) on p, each from a NaN-poisoned output: every output finite, within
// the tolerance of data's float64 reference, the second call's bits the first's. The two outputs.
inline bench::testing::PoisonedRuns expect_two_calls_match_reference(Instance& inst,
                                                                     const Problem& p,
                                                                     const HostData& data) {
  bench::testing::PoisonedRuns r =
      bench::testing::run_twice_after_poison(inst, std::size_t(p.output_elements()));
  expect_matches_reference(p, data, r.first, "call 0");
  expect_matches_reference(p, data, r.second, "call 1");
  EXPECT_EQ(std::memcmp(r.first.data(), r.second.data(), r.first.size() * sizeof(float)), 0)
      << "the second call's output differs from the first's";
  return r;
}

}  // namespace ops::testing
