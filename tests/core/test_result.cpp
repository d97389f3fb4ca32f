#include "core/result.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>

#include "core/error.hpp"

namespace bench {
namespace {

const Status kAllStatuses[] = {Status::passed,    Status::skipped, Status::unsupported,
                               Status::incorrect, Status::failed,  Status::timeout};

TEST(Status, ToStringAndParseRoundTrip) {
  std::set<std::string> names;
  for (Status s : kAllStatuses) {
    EXPECT_EQ(parse_status(to_string(s)), s);
    names.insert(to_string(s));
  }
  EXPECT_EQ(names, (std::set<std::string>{"passed", "skipped", "unsupported", "incorrect", "failed",
                                          "timeout"}));
}

TEST(Status, UnknownStatusThrowsUsageError) {
  for (const char* bad : {"", "pass", "PASSED", "ok", "passed "})
    EXPECT_THROW(parse_status(bad), UsageError) << "'" << bad << "'";
}

Summary flat_summary(double median) {
  Summary s;
  s.median = median;
  s.min = s.mean = s.max = s.p10 = s.p90 = median;
  s.samples = 3;
  return s;
}

TEST(Result, PrimaryTimePrefersGpuOverTotal) {
  Result r;
  EXPECT_FALSE(r.primary_time_ms().has_value());
  r.cpu_time_ms = flat_summary(9.0);  // never the primary figure
  EXPECT_FALSE(r.primary_time_ms().has_value());
  r.total_time_ms = flat_summary(5.0);
  EXPECT_EQ(r.primary_time_ms(), 5.0);
  r.gpu_time_ms = flat_summary(2.0);
  EXPECT_EQ(r.primary_time_ms(), 2.0);
  r.total_time_ms.reset();
  EXPECT_EQ(r.primary_time_ms(), 2.0);
}

TEST(ResultJson, SummaryHasEveryFigureAndTheOutlierRule) {
  Summary s = flat_summary(1.25);
  s.stddev = 0.5;
  s.cv = 0.4;
  s.outliers = 2;
  const auto j = to_json(s);
  EXPECT_EQ(j.at("median"), 1.25);
  EXPECT_EQ(j.at("stddev"), 0.5);
  EXPECT_EQ(j.at("cv"), 0.4);
  EXPECT_EQ(j.at("samples"), 3);
  EXPECT_EQ(j.at("outliers"), 2);
  EXPECT_EQ(j.at("outlier_rule"), kOutlierRule);
  for (const char* key : {"min", "mean", "max", "p10", "p90"}) EXPECT_EQ(j.at(key), 1.25) << key;
}

TEST(ResultJson, NonFiniteNumbersBecomeNull) {
  Summary s;
  s.median = std::numeric_limits<double>::quiet_NaN();
  s.max = std::numeric_limits<double>::infinity();
  const auto j = to_json(s);
  EXPECT_TRUE(j.at("median").is_null());
  EXPECT_TRUE(j.at("max").is_null());
  EXPECT_EQ(j.at("min"), 0.0);
}

TEST(ResultJson, CorrectnessCarriesMismatchesAndShapeCheck) {
  Result r;
  r.status = Status::incorrect;
  Correctness c;
  c.passed = false;
  c.mismatches = 1;
  c.elements = 8;
  c.first_mismatches = {{3, std::numeric_limits<double>::quiet_NaN(), 1.5}};
  c.message = "1 of 8 outputs are NaN or Inf";
  r.correctness = c;
  r.shape_ok = true;
  const auto j = to_json(r);
  EXPECT_EQ(j.at("status"), "incorrect");
  const auto& cj = j.at("correctness");
  EXPECT_EQ(cj.at("passed"), false);
  EXPECT_EQ(cj.at("mismatches"), 1);
  EXPECT_EQ(cj.at("elements"), 8);
  EXPECT_EQ(cj.at("shape_ok"), true);
  ASSERT_EQ(cj.at("first_mismatches").size(), 1u);
  EXPECT_EQ(cj.at("first_mismatches")[0].at("index"), 3);
  EXPECT_TRUE(cj.at("first_mismatches")[0].at("got").is_null());
  EXPECT_EQ(cj.at("first_mismatches")[0].at("expected"), 1.5);
  EXPECT_EQ(cj.at("message"), c.message);
}

TEST(ResultJson, MissingOptionalsAreNull) {
  Result r;
  const auto j = to_json(r);
  for (const char* key :
       {"workspace_bytes", "compile_time_ms", "first_run_ms", "cpu_time_ms", "gpu_time_ms",
        "total_time_ms", "thread_cpu_time_ms", "correctness", "gflop_per_s", "gbyte_per_s"})
    EXPECT_TRUE(j.at(key).is_null()) << key;
  EXPECT_EQ(j.at("status"), "skipped");
}

TEST(ResultJson, ThroughputFromPrimaryTime) {
  Result r;
  r.flop = 6e9;
  r.bytes = 3e6;
  r.total_time_ms = flat_summary(10.0);
  r.gpu_time_ms = flat_summary(3.0);  // the primary figure
  const auto j = to_json(r);
  EXPECT_DOUBLE_EQ(j.at("gflop_per_s").get<double>(), 2000.0);  // 6e9 flop in 3 ms
  EXPECT_DOUBLE_EQ(j.at("gbyte_per_s").get<double>(), 1.0);
}

TEST(ResultJson, ResultSetHasSchemaVersion) {
  ResultSet set;
  set.system["host"] = "h";
  set.results.resize(2);
  const auto j = to_json(set);
  EXPECT_EQ(j.at("schema_version"), kSchemaVersion);
  EXPECT_EQ(j.at("system").at("host"), "h");
  EXPECT_EQ(j.at("results").size(), 2u);
}

}  // namespace
}  // namespace bench
