// Tests of ops/score.cpp: Genesis's bands at their edges, and the metrics of a result against the
// measured limits in the system record and PyTorch's result.
#include <gtest/gtest.h>

#include "ops/score.hpp"

namespace ops {
namespace {

TEST(OpsScore, BandsAtTheirEdges) {
  EXPECT_EQ(score_band(1.5), "excellent");
  EXPECT_EQ(score_band(0.9), "excellent");
  EXPECT_EQ(score_band(0.8999), "good");
  EXPECT_EQ(score_band(0.7), "good");
  EXPECT_EQ(score_band(0.6999), "fair");
  EXPECT_EQ(score_band(0.5), "fair");
  EXPECT_EQ(score_band(0.4999), "poor");
  EXPECT_EQ(score_band(0.2), "poor");
  EXPECT_EQ(score_band(0.1999), "critical");
  EXPECT_EQ(score_band(0), "critical");
}

bench::Result timed(const std::string& backend, double gpu_ms) {
  bench::Result r;
  r.suite = "ops";
  r.backend = backend;
  r.device = "cuda";
  r.problem = "matmul:m1024n1024k1024:bf16";
  r.dtype = "bf16";
  r.status = bench::Status::passed;
  r.timing_mode = "real";
  r.flop = 2.0 * 1024 * 1024 * 1024;
  r.bytes = 3.0 * 1024 * 1024 * 2;
  r.params = {{"op", "matmul"}};
  bench::Summary s;
  s.median = gpu_ms;
  r.gpu_time_ms = s;
  return r;
}

TEST(OpsScore, MetricsAgainstMeasuredLimitsAndPyTorch) {
  const nlohmann::ordered_json system = {
      {"bandwidth", {{"cuda", {{{"index", 0}, {"measured_copy_gbs", 4000.0}}}}}},
      {"matmul_ceiling", {{"tflops", {{"bf16", 800.0}}}}}};
  const bench::Result torch = timed("libtorch_cuda", 0.004);
  bench::Result own = timed("own_cuda", 0.008);
  fill_metrics(own, &torch, system);
  const auto& m = own.metrics;
  EXPECT_NEAR(m["bandwidth_gbs"].get<double>(), own.bytes / 0.008e6, 1e-9);
  EXPECT_NEAR(m["bandwidth_efficiency"].get<double>(), own.bytes / 0.008e6 / 4000, 1e-12);
  EXPECT_NEAR(m["gflops"].get<double>(), own.flop / 0.008e6, 1e-6);
  EXPECT_NEAR(m["compute_efficiency"].get<double>(), own.flop / 0.008e9 / 800, 1e-12);
  EXPECT_DOUBLE_EQ(m["speedup_vs_pytorch"].get<double>(), 0.5);
  EXPECT_EQ(m["score_band"], "fair");
  EXPECT_EQ(m["reference_backend"], "libtorch_cuda");

  // No measured limit: no efficiency (never a fallback figure); a failed case: no metrics.
  bench::Result bare = timed("own_cuda", 0.008);
  fill_metrics(bare, nullptr, nlohmann::ordered_json::object());
  EXPECT_TRUE(bare.metrics.contains("bandwidth_gbs"));
  EXPECT_FALSE(bare.metrics.contains("bandwidth_efficiency"));
  EXPECT_FALSE(bare.metrics.contains("speedup_vs_pytorch"));
  bench::Result failed = timed("own_cuda", 0.008);
  failed.status = bench::Status::incorrect;
  fill_metrics(failed, &torch, system);
  EXPECT_TRUE(failed.metrics.empty());
}

TEST(OpsScore, TheReferenceIsThatOfTheSameProblemDeviceAndMode) {
  std::vector<bench::Result> results = {timed("libtorch_cuda", 1), timed("libtorch_cuda", 2)};
  results[1].timing_mode = "pure:graph";
  bench::Result own = timed("own_cuda", 1);
  own.timing_mode = "pure:graph";
  ASSERT_NE(reference_of(results, own), nullptr);
  EXPECT_EQ(reference_of(results, own)->gpu_time_ms->median, 2);
  own.problem = "add:8";
  EXPECT_EQ(reference_of(results, own), nullptr);
}

}  // namespace
}  // namespace ops
