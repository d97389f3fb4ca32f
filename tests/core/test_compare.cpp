#include "core/compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace bench {
namespace {

// A non-constant reference and an output equal to it (exactly representable as float).
struct Case {
  std::vector<double> ref;
  std::vector<float> out;
  explicit Case(std::size_t n) : ref(n), out(n) {
    for (std::size_t i = 0; i < n; ++i) {
      ref[i] = static_cast<double>(static_cast<int>(i % 17) - 8) * 0.25;
      out[i] = static_cast<float>(ref[i]);
    }
  }
  Correctness run(const Tolerance& tol) const {
    return compare(out.data(), ref.data(), out.size(), tol);
  }
};

TEST(Compare, IdenticalDataPasses) {
  const Case c(100);
  const Correctness r = c.run({0, 0});  // exact equality needs no tolerance
  EXPECT_TRUE(r.passed);
  EXPECT_EQ(r.elements, 100u);
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_EQ(r.non_finite, 0u);
  EXPECT_FALSE(r.mistrusted);
  EXPECT_TRUE(r.first_mismatches.empty());
  EXPECT_EQ(r.max_abs_err, 0);
  EXPECT_EQ(r.rel_l2_err, 0);
  EXPECT_EQ(r.message, "ok");
}

TEST(Compare, ToleranceIsKeptInTheResult) {
  const Case c(10);
  const Correctness r = c.run({0.125, 0.5});
  EXPECT_EQ(r.tolerance.atol, 0.125);
  EXPECT_EQ(r.tolerance.rtol, 0.5);
}

TEST(Compare, PlantedErrorBeyondToleranceIsCountedWithIndex) {
  Case c(100);
  c.out[37] += 1.0f;
  c.out[10] += 0.0005f;  // within tolerance
  const Correctness r = c.run({1e-3, 1e-3});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_EQ(r.non_finite, 0u);
  ASSERT_EQ(r.first_mismatches.size(), 1u);
  EXPECT_EQ(r.first_mismatches[0].index, 37u);
  EXPECT_EQ(r.first_mismatches[0].expected, c.ref[37]);
  EXPECT_EQ(r.first_mismatches[0].got, static_cast<double>(c.out[37]));
  EXPECT_NEAR(r.max_abs_err, 1.0, 1e-6);
  EXPECT_NE(r.message.find("1 of 100"), std::string::npos) << r.message;
}

TEST(Compare, ToleranceBoundIsInclusiveAndRelativeToReference) {
  // atol + rtol*|ref| = 0.25 + 0.125*2 = 0.5, all exactly representable.
  const double ref[] = {2.0, -2.0};
  const Tolerance tol{0.25, 0.125};
  const float on_bound[] = {2.5f, -2.5f};
  EXPECT_TRUE(compare(on_bound, ref, 2, tol).passed);
  const float past_bound[] = {2.5625f, -2.5625f};
  const Correctness r = compare(past_bound, ref, 2, tol);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 2u);
  // The relative part scales with |ref|: the same error passes against a larger reference.
  const double big_ref[] = {20.0, -20.0};
  const float big_out[] = {20.5625f, -20.5625f};
  EXPECT_TRUE(compare(big_out, big_ref, 2, tol).passed);
}

TEST(Compare, FirstMismatchesKeepsFiveInIndexOrder) {
  Case c(100);
  const std::size_t bad[] = {3, 9, 20, 21, 50, 77, 98, 99};
  for (std::size_t i : bad) c.out[i] += 10.0f;
  const Correctness r = c.run({1e-3, 0});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.mismatches, 8u);
  ASSERT_EQ(r.first_mismatches.size(), 5u);
  for (std::size_t j = 0; j < 5; ++j) EXPECT_EQ(r.first_mismatches[j].index, bad[j]);
}

TEST(Compare, NanAndInfAreNonFiniteAndFail) {
  Case c(50);
  c.out[2] = std::numeric_limits<float>::quiet_NaN();
  c.out[5] = std::numeric_limits<float>::infinity();
  c.out[7] = -std::numeric_limits<float>::infinity();
  const Correctness r = c.run({1e30, 1e30});  // no tolerance excuses a NaN
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.non_finite, 3u);
  EXPECT_EQ(r.mismatches, 3u);
  ASSERT_EQ(r.first_mismatches.size(), 3u);
  EXPECT_EQ(r.first_mismatches[0].index, 2u);
  EXPECT_TRUE(std::isnan(r.first_mismatches[0].got));
  EXPECT_EQ(r.first_mismatches[1].index, 5u);
  EXPECT_EQ(r.first_mismatches[2].index, 7u);
  EXPECT_TRUE(std::isinf(r.max_abs_err));
  EXPECT_TRUE(std::isinf(r.rel_l2_err));
  EXPECT_NE(r.message.find("NaN or Inf"), std::string::npos) << r.message;
}

TEST(Compare, AllNanOutputFails) {
  Case c(64);
  for (float& v : c.out) v = std::numeric_limits<float>::quiet_NaN();
  const Correctness r = c.run({1e30, 1e30});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.non_finite, 64u);
  EXPECT_EQ(r.mismatches, 64u);
  EXPECT_EQ(r.first_mismatches.size(), 5u);
}

TEST(Compare, ConstantOutputAgainstVaryingReferenceIsMistrusted) {
  Case c(64);
  for (float& v : c.out) v = 0.0f;
  const Correctness r = c.run({1e30, 1e30});  // every element is within this tolerance
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_TRUE(r.mistrusted);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("mistrusted"), std::string::npos) << r.message;
}

TEST(Compare, ConstantOutputMatchingConstantReferencePasses) {
  const std::vector<double> ref(16, 3.0);
  const std::vector<float> out(16, 3.0f);
  const Correctness r = compare(out.data(), ref.data(), out.size(), {0, 0});
  EXPECT_FALSE(r.mistrusted);
  EXPECT_TRUE(r.passed);
}

TEST(Compare, SingleElementIsNotMistrusted) {
  const double ref[] = {1.5};
  const float out[] = {1.5f};
  const Correctness r = compare(out, ref, 1, {0, 0});
  EXPECT_FALSE(r.mistrusted);
  EXPECT_TRUE(r.passed);
}

TEST(Compare, EmptyOutputFails) {
  const Correctness r = compare(nullptr, nullptr, 0, {1, 1});
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.elements, 0u);
  EXPECT_EQ(r.message, "no output elements");
}

TEST(Compare, RelL2ErrorOnKnownCase) {
  // ||ref|| = sqrt(1+4+4) = 3; error vector (0, 0, 1): rel L2 = 1/3.
  const double ref[] = {1, 2, 2};
  const float out[] = {1, 2, 3};
  const Correctness r = compare(out, ref, 3, {0, 0});
  EXPECT_DOUBLE_EQ(r.rel_l2_err, 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(r.max_abs_err, 1.0);
  EXPECT_EQ(r.mismatches, 1u);

  // ||ref|| = 5, error (0.5, -1.5)...: sqrt(0.25 + 2.25) / 5.
  const double ref2[] = {3, 4};
  const float out2[] = {3.5f, 2.5f};
  EXPECT_DOUBLE_EQ(compare(out2, ref2, 2, {0, 0}).rel_l2_err, std::sqrt(2.5) / 5);
}

TEST(Compare, RelL2ErrorAgainstZeroReferenceIsAbsolute) {
  const double ref[] = {0, 0};
  const float out[] = {3, 4};
  EXPECT_DOUBLE_EQ(compare(out, ref, 2, {0, 0}).rel_l2_err, 5.0);
}

// Total bound atol + rtol*|ref| at |ref| = ref_rms.
double bound(const Tolerance& t, double ref_rms) {
  return t.atol + t.rtol * ref_rms;
}

TEST(DotTolerance, KnownValuesForFp32) {
  // u = 2^-24, c = 8: rtol = 2^-21; atol = 8 * 2 * sqrt(64) * 16 * 2^-24 = 2^-13.
  const Tolerance t = dot_tolerance(DataType::fp32, 64, 2.0);
  EXPECT_DOUBLE_EQ(t.rtol, std::ldexp(1.0, -21));
  EXPECT_DOUBLE_EQ(t.atol, std::ldexp(1.0, -13));
}

TEST(DotTolerance, RelativePartFollowsOutputType) {
  EXPECT_DOUBLE_EQ(dot_tolerance(DataType::fp16, 64, 1).rtol, 8 * std::ldexp(1.0, -11));
  EXPECT_DOUBLE_EQ(dot_tolerance(DataType::bf16, 64, 1).rtol, 8 * std::ldexp(1.0, -8));
  // tf32 stores fp32: the output rounding is fp32's, the operand rounding goes into atol.
  EXPECT_DOUBLE_EQ(dot_tolerance(DataType::tf32, 64, 1).rtol,
                   dot_tolerance(DataType::fp32, 64, 1).rtol);
}

TEST(DotTolerance, GrowsWithReductionLength) {
  for (DataType dt : all_data_types()) {
    double previous = 0;
    for (std::int64_t k : {1, 9, 100, 4096, 1 << 20}) {
      const Tolerance t = dot_tolerance(dt, k, 1.0);
      EXPECT_GT(t.atol, previous) << to_string(dt) << " k=" << k;
      previous = t.atol;
    }
  }
  // The accumulation term grows like sqrt(k): 100x the length, 10x the term (fp32 has no
  // operand term).
  EXPECT_DOUBLE_EQ(dot_tolerance(DataType::fp32, 10000, 1).atol,
                   10 * dot_tolerance(DataType::fp32, 100, 1).atol);
}

TEST(DotTolerance, NonPositiveLengthCountsAsOne) {
  EXPECT_DOUBLE_EQ(dot_tolerance(DataType::fp32, 0, 1).atol,
                   dot_tolerance(DataType::fp32, 1, 1).atol);
  EXPECT_DOUBLE_EQ(dot_tolerance(DataType::fp32, -5, 1).atol,
                   dot_tolerance(DataType::fp32, 1, 1).atol);
}

TEST(DotTolerance, OrderedByPrecisionOfTheType) {
  for (std::int64_t k : {1, 27, 576, 4608}) {
    const double fp32 = bound(dot_tolerance(DataType::fp32, k, 1.0), 1.0);
    const double tf32 = bound(dot_tolerance(DataType::tf32, k, 1.0), 1.0);
    const double fp16 = bound(dot_tolerance(DataType::fp16, k, 1.0), 1.0);
    const double bf16 = bound(dot_tolerance(DataType::bf16, k, 1.0), 1.0);
    EXPECT_GT(bf16, fp16) << "k=" << k;
    EXPECT_GT(fp16, fp32) << "k=" << k;
    EXPECT_GT(tf32, fp32) << "k=" << k;
    EXPECT_GT(dot_tolerance(DataType::tf32, k, 1.0).atol,
              dot_tolerance(DataType::fp32, k, 1.0).atol)
        << "k=" << k;
  }
}

TEST(DotTolerance, AbsolutePartScalesWithReferenceRms) {
  for (DataType dt : all_data_types()) {
    const Tolerance a = dot_tolerance(dt, 300, 1.0);
    const Tolerance b = dot_tolerance(dt, 300, 4.0);
    EXPECT_DOUBLE_EQ(b.atol, 4 * a.atol) << to_string(dt);
    EXPECT_DOUBLE_EQ(b.rtol, a.rtol) << to_string(dt);
  }
  EXPECT_EQ(dot_tolerance(DataType::fp32, 300, 0.0).atol, 0);
}

TEST(Rms, KnownInputs) {
  const double a[] = {3, 4};
  EXPECT_DOUBLE_EQ(rms(a, 2), std::sqrt(12.5));
  const double b[] = {1, -1, 1, -1};
  EXPECT_DOUBLE_EQ(rms(b, 4), 1.0);
  const double c[] = {-2};
  EXPECT_DOUBLE_EQ(rms(c, 1), 2.0);
  EXPECT_EQ(rms(nullptr, 0), 0);
}

}  // namespace
}  // namespace bench
