// own_cuda's fp32 matmul variants beside variant 2, on the GPU against the op suite's float64
// reference with its fp32 tolerance, every output poisoned with NaN first and the second call's
// bits equal to the first's:
//   - 11-14 and 16-20, the warp-tiled SGEMMs (core/cuda/gemm/sgemm.cu): m and n not multiples
//     of the tile, n % 4 != 0 (B copied value by value), k % 4 != 0 and odd, batches, split-K
//     (few tiles, long k), the smallest shape, issue 26's m3000 n5000 k1000, randomized shapes;
//   - 15, 3xTF32 (ops/cuda/matmul_3xtf32.cu): the same kinds of shape (n % 8 != 0 takes variant
//     3's GEMM, n % 8 == 0 the Hopper engine on sm_90), and at k = 4096 a relative L2 error below
//     2^-15 (the CPU emulation, tests/ops/test_tf32_split.cpp: 2.7e-6, plain FP32 9.9e-7, one tf32
//     product 2.7e-4; the bound leaves room for the tensor cores' own accumulation), recorded
//     beside variant 11's on the same data;
//   - variant 12 is fp32's default on these devices, the others offered after it;
//   - --variant search (fp32 and bf16): the candidates timed at compile(), the fastest run.
// Skipped, with the reason, without a GPU of compute capability 8.0 or newer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/compare.hpp"
#include "core/error.hpp"
#include "ops/cuda/own_cuda.hpp"
#include "ops/data.hpp"
#include "tests/common/case_helpers.hpp"
#include "tests/common/gpu_skip.hpp"
#include "tests/ops/own_cuda_checks.hpp"
#include "tests/ops/random_ops.hpp"

namespace ops {
namespace {

using ops::testing::matmul_problem;

constexpr int kVariants[] = {11, 12, 13, 14, 15, 16, 17, 18, 19, 20};

std::string sm80_unavailable_reason() {
  return testing::compute_capability_unavailable_reason(
      8, "needs cp.async and tf32 mma.sync (compute capability 8.0 or newer)");
}
#define SKIP_WITHOUT_SM80() MYCONV_SKIP_IF(sm80_unavailable_reason())

std::unique_ptr<Backend> variant_backend(int variant) {
  BackendOptions options;
  options.variant = std::to_string(variant);
  return make_own_cuda_backend(options);
}

// Two calls of the variant on p, each from a NaN-poisoned output: every output finite, within
// the tolerance of the float64 reference, the second call's bits the first's. The first call's
// check, for comparisons of error.
bench::Correctness check_variant(const Problem& p, int variant) {
  SCOPED_TRACE(p.str() + " variant " + std::to_string(variant));
  const auto backend = variant_backend(variant);
  const bench::Support support = backend->check_support(p);
  EXPECT_TRUE(support.ok) << support.reason;
  if (!support.ok) return {};
  const HostData data = make_host_data(p, 13);
  const auto inst = backend->prepare(p, data);
  inst->compile();
  EXPECT_NE(inst->algorithm().find("v" + std::to_string(variant) + " "), std::string::npos)
      << inst->algorithm();
  const bench::testing::PoisonedRuns r = testing::expect_two_calls_match_reference(*inst, p, data);
  return check_output(p, data, r.first.data());
}

TEST(MatmulFp32, EdgeShapesMatchTheReference) {
  SKIP_WITHOUT_SM80();
  for (int v : kVariants) {
    check_variant(matmul_problem(1, 129, 130, 31, DataType::fp32), v);      // n % 4, k % 4 != 0
    check_variant(matmul_problem(1, 200, 264, 1001, DataType::fp32), v);    // n % 8 == 0, k odd
    check_variant(matmul_problem(3, 70, 96, 100, DataType::fp32), v);       // batches
    check_variant(matmul_problem(1, 64, 64, 4096, DataType::fp32), v);      // one tile: split-K
    check_variant(matmul_problem(1, 257, 1031, 2999, DataType::fp32), v);   // split-K, n odd
    check_variant(matmul_problem(2, 1, 1, 1, DataType::fp32), v);           // the smallest
    check_variant(matmul_problem(1, 3000, 5000, 1000, DataType::fp32), v);  // issue 26's shape
  }
}

TEST(MatmulFp32, RandomShapesMatchTheReference) {
  SKIP_WITHOUT_SM80();
  std::mt19937 rng(26);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int v : kVariants)
    for (int i = 0; i < 3; ++i)
      check_variant(
          matmul_problem(pick(1, 3), pick(1, 200), pick(1, 200), pick(1, 1000), DataType::fp32), v);
}

TEST(MatmulFp32, ThreeTf32KeepsFp32AccuracyAtK4096) {
  SKIP_WITHOUT_SM80();
  for (const Problem& p : {matmul_problem(1, 256, 264, 4096, DataType::fp32),     // the engine
                           matmul_problem(1, 256, 262, 4096, DataType::fp32)}) {  // variant 3
    const bench::Correctness simt = check_variant(p, 11);
    const bench::Correctness x3 = check_variant(p, 15);
    RecordProperty("rel_l2_fp32_" + p.str(), std::to_string(simt.rel_l2_err));
    RecordProperty("rel_l2_3xtf32_" + p.str(), std::to_string(x3.rel_l2_err));
    EXPECT_LE(x3.rel_l2_err, std::ldexp(1.0, -15))
        << p.str() << ": 3xTF32 " << x3.rel_l2_err << ", FP32 " << simt.rel_l2_err;
  }
}

// The default: variant 18 where its 128x256 tiles make two waves of 132 SMs, variant 12 below.
TEST(MatmulFp32, Variant18OrVariant12IsTheDefault) {
  SKIP_WITHOUT_SM80();
  const Problem p = matmul_problem(1, 512, 512, 512, DataType::fp32);
  for (int v : kVariants) EXPECT_TRUE(variant_backend(v)->check_support(p).ok) << v;
  const auto automatic = make_own_cuda_backend(BackendOptions{});
  const auto inst = automatic->prepare(p, make_host_data(p, 1));
  inst->compile();
  EXPECT_EQ(inst->algorithm().rfind("v12 ", 0), 0u) << inst->algorithm();
  const Problem wide = matmul_problem(1, 3000, 5000, 40, DataType::fp32);  // 24 x 20 wide tiles
  const auto wide_inst = automatic->prepare(wide, make_host_data(wide, 1));
  wide_inst->compile();
  EXPECT_EQ(wide_inst->algorithm().rfind("v18 ", 0), 0u) << wide_inst->algorithm();
  for (int v : kVariants)  // fp32 only
    EXPECT_FALSE(
        variant_backend(v)->check_support(matmul_problem(1, 64, 64, 64, DataType::tf32)).ok)
        << v;
}

// --variant search: the backend accepts it (a word that is neither a number nor "search" is a
// usage error); on a GPU, compile() times the candidates (not the naive variant 1 nor 3xTF32's
// 15), runs the fastest, names it and the candidates, records each median, and the result
// matches the reference.
TEST(MatmulSearch, TimesTheCandidatesAndRunsTheFastest) {
  BackendOptions search;
  search.variant = "search";
  const auto backend = make_own_cuda_backend(search);
  BackendOptions bad;
  bad.variant = "fastest";
  EXPECT_THROW(make_own_cuda_backend(bad), bench::UsageError);
  SKIP_WITHOUT_SM80();
  for (const DataType dt : {DataType::fp32, DataType::bf16}) {
    const Problem p = matmul_problem(1, 96, 136, 264, dt);
    SCOPED_TRACE(p.str());
    ASSERT_TRUE(backend->check_support(p).ok);
    const HostData data = make_host_data(p, 7);
    const auto inst = backend->prepare(p, data);
    inst->compile();
    const std::string algorithm = inst->algorithm();
    EXPECT_NE(algorithm.find("by --variant search"), std::string::npos) << algorithm;
    const nlohmann::ordered_json extra = inst->extra();
    ASSERT_TRUE(extra.contains("search_median_ms")) << extra.dump();
    EXPECT_GE(extra["search_median_ms"].size(), 2u);
    EXPECT_FALSE(extra["search_median_ms"].contains("1"));
    EXPECT_FALSE(extra["search_median_ms"].contains("15"));
    testing::expect_two_calls_match_reference(*inst, p, data);
  }
}

}  // namespace
}  // namespace ops
