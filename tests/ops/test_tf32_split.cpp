// 3xTF32's split (ops/cuda/tf32_split.hpp), on the CPU with the device's own arithmetic:
//   - tf32_rna_bits rounds to nearest on 10 mantissa bits with ties away from zero, as
//     cvt.rna.tf32.f32 does, and carries into the exponent;
//   - big + small is x to ~2^-22, both exact tf32 values;
//   - the GEMM the variant runs (A' = [A_big | A_big | A_small], B' = [B_big | B_small | B_big]
//     along k, one FP32 accumulator in k' order) at k = 4096 on the suite's random inputs: within
//     the op suite's fp32 tolerance of the float64 reference, within 4x of plain FP32's error
//     (its sum has 3x the terms) and 20x below one tf32 product's (1xTF32), which a wrong split (a
//     term missing, small terms in the wrong third) would not be. Measured here (relative L2
//     error, m = n = 8): FP32 9.9e-7, 3xTF32 2.7e-6, 1xTF32 2.7e-4.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/compare.hpp"
#include "core/dtype.hpp"
#include "core/random.hpp"
#include "ops/cuda/tf32_split.hpp"
#include "tests/common/float_bits.hpp"

namespace ops::cuda {
namespace {

using bench::testing::bits_of;
using bench::testing::float_of;

TEST(Tf32Split, RoundsToNearestTiesAwayFromZero) {
  EXPECT_EQ(tf32_rna_bits(0x3F800FFFu), 0x3F800000u);  // below half of the last kept bit: down
  EXPECT_EQ(tf32_rna_bits(0x3F801000u), 0x3F802000u);  // a tie: away from zero
  EXPECT_EQ(tf32_rna_bits(0xBF801000u), 0xBF802000u);  // a negative tie: away from zero too
  EXPECT_EQ(tf32_rna_bits(0x3F803000u), 0x3F804000u);  // a tie on an odd last bit: up
  EXPECT_EQ(tf32_rna_bits(0x3FFFF000u), 0x40000000u);  // carries into the exponent: 2.0
  EXPECT_EQ(tf32_rna_bits(0x3F802000u), 0x3F802000u);  // tf32 values stay as they are
  EXPECT_EQ(tf32_rna_bits(0x7F800000u), 0x7F800000u);  // infinity
  EXPECT_TRUE(std::isnan(tf32_rna(float_of(0x7FC00001u))));
  EXPECT_EQ(tf32_rna(0.0f), 0.0f);
}

TEST(Tf32Split, BigPlusSmallIsXToTwoToTheMinus22) {
  std::mt19937 rng(26);
  std::normal_distribution<float> dist(0.0f, 100.0f);
  for (int i = 0; i < 100000; ++i) {
    const float x = dist(rng);
    const Tf32Pair s = tf32_split(x);
    ASSERT_EQ(bits_of(s.big) & 0x1FFFu, 0u) << x;
    ASSERT_EQ(bits_of(s.small) & 0x1FFFu, 0u) << x;
    ASSERT_LE(std::fabs(double(x) - double(s.big)), std::ldexp(std::fabs(double(x)), -11)) << x;
    ASSERT_LE(std::fabs(double(x) - double(s.big) - double(s.small)),
              std::ldexp(std::fabs(double(x)), -22))
        << x;
  }
}

TEST(Tf32Split, PaddedDepthAndThirds) {
  EXPECT_EQ(tf32x3_padded_k(1), 8);
  EXPECT_EQ(tf32x3_padded_k(8), 8);
  EXPECT_EQ(tf32x3_padded_k(4095), 4096);
  const Tf32Pair x{1.0f, 2.0f};
  EXPECT_EQ(tf32x3_a_term(x, 0) + tf32x3_a_term(x, 1) + tf32x3_a_term(x, 2), 4.0f);
  EXPECT_EQ(tf32x3_b_term(x, 0) + tf32x3_b_term(x, 1) + tf32x3_b_term(x, 2), 4.0f);
  // The three products: big*big, big*small, small*big (small*small left out).
  EXPECT_EQ(tf32x3_a_term(x, 0) * tf32x3_b_term(x, 0), 1.0f);
  EXPECT_EQ(tf32x3_a_term(x, 1) * tf32x3_b_term(x, 1), 2.0f);
  EXPECT_EQ(tf32x3_a_term(x, 2) * tf32x3_b_term(x, 2), 2.0f);
}

// C = A B of m x k by k x n on the suite's random inputs (uniform in [-1, 1)), four ways: the
// float64 reference, plain FP32, 1xTF32 and the 3xTF32 GEMM as variant 15 lays it out; each
// checked against the reference with the op suite's fp32 tolerance.
TEST(Tf32Split, ThreeTermSumKeepsFp32AccuracyAtK4096) {
  constexpr int m = 8, n = 8, k = 4096;
  const int kp = int(tf32x3_padded_k(k));
  std::vector<float> a(std::size_t(m) * k), b(std::size_t(k) * n);
  bench::fill_random(a, 1, bench::DataType::fp32);
  bench::fill_random(b, 2, bench::DataType::fp32);
  // The split operands as the kernels write them: A' [m][3 kp], B' [3 kp][n].
  std::vector<float> ap(std::size_t(m) * 3 * kp, 0.0f), bp(std::size_t(3) * kp * n, 0.0f);
  for (int i = 0; i < m; ++i)
    for (int l = 0; l < k; ++l)
      for (int t = 0; t < 3; ++t)
        ap[std::size_t(i) * 3 * kp + std::size_t(t) * kp + l] =
            tf32x3_a_term(tf32_split(a[std::size_t(i) * k + l]), t);
  for (int l = 0; l < k; ++l)
    for (int j = 0; j < n; ++j)
      for (int t = 0; t < 3; ++t)
        bp[(std::size_t(t) * kp + l) * n + j] =
            tf32x3_b_term(tf32_split(b[std::size_t(l) * n + j]), t);
  std::vector<double> ref(std::size_t(m) * n);
  std::vector<float> fp32(ref.size()), tf32(ref.size()), x3(ref.size());
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double r = 0;
      float c32 = 0, c1 = 0, c3 = 0;
      for (int l = 0; l < k; ++l) {
        const float x = a[std::size_t(i) * k + l], y = b[std::size_t(l) * n + j];
        r += double(x) * double(y);
        c32 = std::fma(x, y, c32);
        c1 = std::fma(tf32_rna(x), tf32_rna(y), c1);
      }
      for (int l = 0; l < 3 * kp; ++l)
        c3 = std::fma(ap[std::size_t(i) * 3 * kp + l], bp[std::size_t(l) * n + j], c3);
      const std::size_t o = std::size_t(i) * n + j;
      ref[o] = r, fp32[o] = c32, tf32[o] = c1, x3[o] = c3;
    }
  const bench::Tolerance tol =
      bench::dot_tolerance(bench::DataType::fp32, k, bench::rms(ref.data(), ref.size()));
  const bench::Correctness e32 = bench::compare(fp32.data(), ref.data(), ref.size(), tol);
  const bench::Correctness e1 = bench::compare(tf32.data(), ref.data(), ref.size(), tol);
  const bench::Correctness e3 = bench::compare(x3.data(), ref.data(), ref.size(), tol);
  RecordProperty("rel_l2_fp32", std::to_string(e32.rel_l2_err));
  RecordProperty("rel_l2_1xtf32", std::to_string(e1.rel_l2_err));
  RecordProperty("rel_l2_3xtf32", std::to_string(e3.rel_l2_err));
  EXPECT_TRUE(e32.passed) << e32.message;
  EXPECT_TRUE(e3.passed) << e3.message;
  EXPECT_LE(e3.rel_l2_err, 4 * e32.rel_l2_err)
      << "3xTF32 " << e3.rel_l2_err << " against FP32 " << e32.rel_l2_err;
  EXPECT_GE(e1.rel_l2_err, 20 * e3.rel_l2_err)
      << "1xTF32 " << e1.rel_l2_err << " against 3xTF32 " << e3.rel_l2_err;
}

}  // namespace
}  // namespace ops::cuda
