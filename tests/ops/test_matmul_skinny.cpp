// Variant 10 of own_cuda's matmul, the skinny-M kernel (ops/cuda/matmul_skinny.cu), on the GPU
// against the op suite's float64 reference with its tolerance, fp16 and bf16, every output
// poisoned with NaN first: m in {1, 3, 8, 9, 16} (one and two 8-row groups), n odd or not a
// multiple of the 128-column block (element loads where n % 8 != 0), k odd or not a multiple of
// 16 (A copied value by value), long k split over a cluster of 8, batches, randomized shapes; the
// output bit for bit the same on a second call (the cluster's sum has a fixed order); the shapes
// it does not take (m > 16, fp32, tf32) refused with the reason. Skipped, with the reason,
// without a GPU with thread block clusters (compute capability 9.0 or newer).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/compare.hpp"
#include "ops/cuda/own_cuda.hpp"
#include "ops/data.hpp"
#include "tests/common/case_helpers.hpp"
#include "tests/common/gpu_skip.hpp"
#include "tests/ops/own_cuda_checks.hpp"
#include "tests/ops/random_ops.hpp"

namespace ops {
namespace {

// Empty where variant 10 can run, else why not.
std::string skinny_unusable_reason() {
  return testing::compute_capability_unavailable_reason(
      9, "needs thread block clusters (compute capability 9.0 or newer)");
}
#define SKIP_WITHOUT_CLUSTERS() MYCONV_SKIP_IF(skinny_unusable_reason())

using ops::testing::matmul_problem;

BackendOptions variant10() {
  BackendOptions options;
  options.variant = "10";
  return options;
}

// Two calls, each from a NaN-poisoned output: every output finite, within the tolerance of the
// float64 reference, and the second call's bits equal to the first's.
void check_skinny(const Problem& p) {
  SCOPED_TRACE(p.str() + " variant 10");
  const auto backend = make_own_cuda_backend(variant10());
  const bench::Support support = backend->check_support(p);
  ASSERT_TRUE(support.ok) << support.reason;
  const HostData data = make_host_data(p, 13);
  const auto inst = backend->prepare(p, data);
  inst->compile();
  EXPECT_NE(inst->algorithm().find("v10 skinny-M"), std::string::npos) << inst->algorithm();
  testing::expect_two_calls_match_reference(*inst, p, data);
}

TEST(MatmulSkinny, EdgeShapesMatchTheReference) {
  SKIP_WITHOUT_CLUSTERS();
  for (DataType dt : {DataType::fp16, DataType::bf16}) {
    check_skinny(matmul_problem(1, 1, 1000, 777, dt));    // n % 8 == 0, not of 128; k odd
    check_skinny(matmul_problem(1, 3, 4097, 777, dt));    // n odd (element loads), k odd
    check_skinny(matmul_problem(1, 8, 1000, 4096, dt));   // one row group, split over the cluster
    check_skinny(matmul_problem(1, 9, 4096, 4096, dt));   // two row groups, rows 9-15 padding
    check_skinny(matmul_problem(1, 16, 4097, 4096, dt));  // two full row groups, n odd
    check_skinny(matmul_problem(1, 16, 1000, 777, dt));   // k odd: A value by value
    check_skinny(matmul_problem(3, 5, 264, 1000, dt));    // batches
    check_skinny(matmul_problem(1, 8, 136, 24000, dt));   // long k: 8 splits of 192 steps
    check_skinny(matmul_problem(1, 16, 100, 3001, dt));   // two row groups, 6 splits of 32 steps
    check_skinny(matmul_problem(1, 16, 136, 24000, dt));  // A's longest slice: 8 splits of 3008
    check_skinny(matmul_problem(2, 1, 1, 1, dt));         // the smallest
    check_skinny(matmul_problem(1, 2, 7, 9, dt));         // less than a vector of n and a step of k
  }
}

TEST(MatmulSkinny, RandomShapesMatchTheReference) {
  SKIP_WITHOUT_CLUSTERS();
  std::mt19937 rng(26);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (DataType dt : {DataType::fp16, DataType::bf16})
    for (int i = 0; i < 6; ++i)
      check_skinny(matmul_problem(pick(1, 2), pick(1, 16), pick(1, 3000), pick(1, 5000), dt));
}

TEST(MatmulSkinny, RefusesWhatItDoesNotTake) {
  SKIP_WITHOUT_CLUSTERS();
  const auto backend = make_own_cuda_backend(variant10());
  for (const Problem& p : {matmul_problem(1, 17, 4096, 4096, DataType::bf16),  // m > 16
                           matmul_problem(1, 8, 4096, 4096, DataType::fp32),   // not 16-bit
                           matmul_problem(1, 8, 4096, 4096, DataType::tf32)}) {
    const bench::Support s = backend->check_support(p);
    EXPECT_FALSE(s.ok) << p.str();
    EXPECT_NE(s.reason.find("variant 10"), std::string::npos) << s.reason;
  }
  // The default stays the engine (or variant 3) until variant 10 is measured against it.
  const auto automatic = make_own_cuda_backend(BackendOptions{});
  const Problem p = matmul_problem(1, 8, 4096, 4096, DataType::bf16);
  const auto inst = automatic->prepare(p, make_host_data(p, 1));
  inst->compile();
  EXPECT_EQ(inst->algorithm().find("v10"), std::string::npos) << inst->algorithm();
}

}  // namespace
}  // namespace ops
