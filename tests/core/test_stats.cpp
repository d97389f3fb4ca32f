#include "core/stats.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace bench {
namespace {

constexpr double kEps = 1e-12;

TEST(QuantileSorted, InterpolatesLinearlyBetweenClosestRanks) {
  const std::vector<double> v = {10, 20, 30, 40};
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.0), 10);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 1.0), 40);
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.5), 25);         // position 1.5
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.25), 17.5);      // position 0.75
  EXPECT_DOUBLE_EQ(quantile_sorted(v, 0.75), 32.5);      // position 2.25
  EXPECT_NEAR(quantile_sorted(v, 1.0 / 3.0), 20, kEps);  // position 1: exactly a rank
  EXPECT_NEAR(quantile_sorted(v, 0.9), 37, kEps);        // position 2.7
}

TEST(QuantileSorted, EmptyAndSingle) {
  EXPECT_EQ(quantile_sorted({}, 0.5), 0);
  EXPECT_EQ(quantile_sorted({7.5}, 0.0), 7.5);
  EXPECT_EQ(quantile_sorted({7.5}, 0.5), 7.5);
  EXPECT_EQ(quantile_sorted({7.5}, 1.0), 7.5);
}

TEST(Summarize, OddCount) {
  const Summary s = summarize({5, 1, 3, 2, 4});  // unsorted on purpose
  EXPECT_EQ(s.samples, 5u);
  EXPECT_EQ(s.outliers, 0u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_NEAR(s.p10, 1.4, kEps);  // position 0.4
  EXPECT_NEAR(s.p90, 4.6, kEps);  // position 3.6
  // Squared deviations 4+1+0+1+4 = 10, over n-1 = 4.
  EXPECT_NEAR(s.stddev, std::sqrt(2.5), kEps);
  EXPECT_NEAR(s.cv, std::sqrt(2.5) / 3, kEps);
}

TEST(Summarize, EvenCount) {
  const Summary s = summarize({4, 1, 3, 2});
  EXPECT_EQ(s.samples, 4u);
  EXPECT_EQ(s.outliers, 0u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.median, 2.5);  // mean of the two middle values
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_NEAR(s.p10, 1.3, kEps);
  EXPECT_NEAR(s.p90, 3.7, kEps);
  // Squared deviations 2.25+0.25+0.25+2.25 = 5, over n-1 = 3.
  EXPECT_NEAR(s.stddev, std::sqrt(5.0 / 3.0), kEps);
  EXPECT_NEAR(s.cv, std::sqrt(5.0 / 3.0) / 2.5, kEps);
}

TEST(Summarize, EmptyInputIsAllZero) {
  const Summary s = summarize({});
  EXPECT_EQ(s.samples, 0u);
  EXPECT_EQ(s.outliers, 0u);
  EXPECT_EQ(s.min, 0);
  EXPECT_EQ(s.max, 0);
  EXPECT_EQ(s.median, 0);
  EXPECT_EQ(s.mean, 0);
  EXPECT_EQ(s.p10, 0);
  EXPECT_EQ(s.p90, 0);
  EXPECT_EQ(s.stddev, 0);
  EXPECT_EQ(s.cv, 0);
}

TEST(Summarize, SingleSampleHasZeroSpread) {
  const Summary s = summarize({7.25});
  EXPECT_EQ(s.samples, 1u);
  EXPECT_EQ(s.outliers, 0u);
  EXPECT_EQ(s.min, 7.25);
  EXPECT_EQ(s.max, 7.25);
  EXPECT_EQ(s.median, 7.25);
  EXPECT_EQ(s.mean, 7.25);
  EXPECT_EQ(s.p10, 7.25);
  EXPECT_EQ(s.p90, 7.25);
  EXPECT_EQ(s.stddev, 0);
  EXPECT_EQ(s.cv, 0);
}

TEST(Summarize, ConstantSamplesHaveZeroSpread) {
  const Summary s = summarize({2, 2, 2, 2, 2, 2});
  EXPECT_EQ(s.outliers, 0u);
  EXPECT_EQ(s.median, 2);
  EXPECT_EQ(s.stddev, 0);
  EXPECT_EQ(s.cv, 0);
}

TEST(Summarize, CvIsZeroWhenMeanIsZero) {
  const Summary s = summarize({-1, 1});
  EXPECT_EQ(s.mean, 0);
  EXPECT_NEAR(s.stddev, std::sqrt(2.0), kEps);
  EXPECT_EQ(s.cv, 0);
}

TEST(Summarize, PlantedHighOutlierIsRejectedAndCounted) {
  // Q1 = 11.25, Q3 = 13.75, IQR = 2.5: fences [7.5, 17.5].
  const Summary s = summarize({12, 10, 1000, 14, 11, 13});
  EXPECT_EQ(s.samples, 6u);
  EXPECT_EQ(s.outliers, 1u);
  EXPECT_DOUBLE_EQ(s.max, 14);
  EXPECT_DOUBLE_EQ(s.min, 10);
  EXPECT_DOUBLE_EQ(s.mean, 12);  // over the kept 10..14 only
  EXPECT_DOUBLE_EQ(s.median, 12);
  EXPECT_NEAR(s.stddev, std::sqrt(2.5), kEps);
}

TEST(Summarize, PlantedLowOutlierIsRejectedAndCounted) {
  const Summary s = summarize({12, 10, -1000, 14, 11, 13});
  EXPECT_EQ(s.outliers, 1u);
  EXPECT_DOUBLE_EQ(s.min, 10);
  EXPECT_DOUBLE_EQ(s.mean, 12);
}

TEST(Summarize, SeveralOutliersOnBothSides) {
  std::vector<double> v;
  for (int i = 0; i < 20; ++i) v.push_back(100 + i % 5);  // 100..104, four times each
  v.push_back(1e6);
  v.push_back(2e6);
  v.push_back(-5e5);
  const Summary s = summarize(v);
  EXPECT_EQ(s.samples, 23u);
  EXPECT_EQ(s.outliers, 3u);
  EXPECT_DOUBLE_EQ(s.min, 100);
  EXPECT_DOUBLE_EQ(s.max, 104);
  EXPECT_DOUBLE_EQ(s.mean, 102);
}

TEST(Summarize, FenceIsInclusive) {
  // Sorted {1,2,3,4,7}: Q1 = 2, Q3 = 4, IQR = 2, upper fence exactly 7: kept.
  const Summary on_fence = summarize({1, 2, 3, 4, 7});
  EXPECT_EQ(on_fence.outliers, 0u);
  EXPECT_DOUBLE_EQ(on_fence.max, 7);
  // Just past the fence: rejected.
  const Summary past_fence = summarize({1, 2, 3, 4, 7.001});
  EXPECT_EQ(past_fence.outliers, 1u);
  EXPECT_DOUBLE_EQ(past_fence.max, 4);
}

TEST(Summarize, FewerThanFourSamplesRejectNothing) {
  const Summary three = summarize({1, 2, 1000});
  EXPECT_EQ(three.samples, 3u);
  EXPECT_EQ(three.outliers, 0u);
  EXPECT_DOUBLE_EQ(three.max, 1000);
  EXPECT_DOUBLE_EQ(three.median, 2);
  EXPECT_NEAR(three.mean, 1003.0 / 3.0, 1e-9);

  const Summary two = summarize({1, 1e9});
  EXPECT_EQ(two.outliers, 0u);
  EXPECT_DOUBLE_EQ(two.max, 1e9);

  // The same shape with a fourth sample: now the rule applies.
  const Summary four = summarize({1, 2, 2, 1000});
  EXPECT_EQ(four.outliers, 1u);
  EXPECT_DOUBLE_EQ(four.max, 2);
}

TEST(Summarize, OutlierRuleIsNamed) {
  EXPECT_STREQ(kOutlierRule, "tukey_1.5iqr");
}

}  // namespace
}  // namespace bench
