// The MLP suite's problems (descriptor round-trips, bad input, work counts), data, gradient check
// and scaling fit (models/mlp/problem.cpp, data.cpp, scaling.cpp); the lecture's fixed counts
// (settings.cpp).
#include <cmath>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "models/mlp/data.hpp"
#include "models/mlp/problem.hpp"
#include "models/mlp/scaling.hpp"
#include "models/mlp/settings.hpp"

namespace mlp {
namespace {

TEST(MlpProblem, RoundTrips) {
  for (const char* text : {"mlp:d128l16b128s5:fp32", "mlp:d8l1b1s1:bf16", "mlp:d256l4b256s2:tf32",
                           "mm:n1024:fp32", "mm:n16384:bf16"}) {
    const Problem p = parse_problem(text);
    EXPECT_EQ(str(p), text);
    EXPECT_EQ(str(parse_problem(str_with_name(p))), text);
  }
  const Problem named = parse_problem("mlp:d16l2b4s3:n\"scale_dim_x2\"", DataType::bf16);
  EXPECT_EQ(str_with_name(named), "mlp:d16l2b4s3:bf16:n\"scale_dim_x2\"");
  EXPECT_EQ(std::get<MlpProblem>(named).name, "scale_dim_x2");
}

TEST(MlpSettings, FixedCounts) {
  bench::MeasureConfig m;
  RunSettings s;
  EXPECT_EQ(apply_fixed_counts(s, m), "");  // none given: the core's adaptive stop
  EXPECT_EQ(m.min_iters, bench::MeasureConfig{}.min_iters);
  EXPECT_EQ(m.target_cv, bench::MeasureConfig{}.target_cv);
  s.num_warmups = 0;
  s.num_trials = 7;
  EXPECT_EQ(apply_fixed_counts(s, m), " --num-warmups 0 --num-trials 7");
  EXPECT_EQ(m.warmup_iters, 0);
  EXPECT_EQ(m.min_iters, 7);
  EXPECT_EQ(m.max_iters, 7);
  EXPECT_EQ(m.min_time_ms, 0);
  EXPECT_EQ(m.target_cv, 0);
}

TEST(MlpProblem, WorkCounts) {
  const MlpProblem p = parse_mlp_problem("mlp:d128l16b128s5");
  EXPECT_DOUBLE_EQ(p.flops(), 6.0 * 128 * 128 * 128 * 16 * 5);
  EXPECT_EQ(p.parameters(), 16 * (128 * 128 + 128));
  EXPECT_GT(p.bytes(), 0);
  EXPECT_DOUBLE_EQ(std::get<MatmulProblem>(parse_problem("mm:n4")).flops(), 128.0);
}

TEST(MlpProblem, BadInputThrowsUsageError) {
  for (const char* text : {"mlp:d0l1b1s1", "mlp:d8l1b1", "mlp:d8l1b1s1:fp16", "mlp:d8l1b1s1:fp64",
                           "conv:d8", "mm:n", "mm:nx:fp32", "mlp:d8l1b1s1:n\"x", "",
                           "mlp:d1234567890l1b1s1"})
    EXPECT_THROW(parse_problem(text), bench::UsageError) << text;
}

TEST(MlpData, DeterministicNonZeroAndShared) {
  const MlpProblem a = parse_mlp_problem("mlp:d16l2b4s1"), b = parse_mlp_problem("mlp:d16l2b4s7");
  const MlpData da = make_data(a, 3), db = make_data(b, 3);
  EXPECT_EQ(da.x, db.x);  // num_steps does not change the values
  EXPECT_EQ(da.weight[1], db.weight[1]);
  EXPECT_NE(da.x, make_data(a, 4).x);
  bool any = false;
  for (float v : da.weight[0]) {
    any |= v != 0;
    EXPECT_LE(std::abs(v), 0.25f);  // 1/sqrt(16)
  }
  EXPECT_TRUE(any);
}

TEST(MlpGradientCheck, PassesAndFails) {
  const MlpProblem p = parse_mlp_problem("mlp:d2l1b1s1");
  Reference ref;
  ref.loss = 0.5;
  ref.gradients = {{1, 2, 3, 4}, {1, -1}};
  EXPECT_TRUE(check_gradients(p, 0.5, {{1, 2, 3, 4}, {1, -1}}, ref).correctness.passed);
  const GradientCheck off = check_gradients(p, 0.5, {{1, 2, 3, 4.1f}, {1, -1}}, ref);
  EXPECT_FALSE(off.correctness.passed);
  EXPECT_EQ(off.correctness.mismatches, 1u);
  EXPECT_EQ(off.detail["worst_parameter"], "layers.0.weight");
  EXPECT_FALSE(check_gradients(p, 0.6, {{1, 2, 3, 4}, {1, -1}}, ref).correctness.passed);
  EXPECT_FALSE(check_gradients(p, 0.5, {{1, 2, 3, NAN}, {1, -1}}, ref).correctness.passed);
  EXPECT_NEAR(gradient_tolerance(parse_mlp_problem("mlp:d8l16b1s1:bf16")), 2e-2, 1e-12);
  EXPECT_NEAR(gradient_tolerance(parse_mlp_problem("mlp:d8l16b1s1:tf32")), 2e-3, 1e-12);
  EXPECT_NEAR(gradient_tolerance(parse_mlp_problem("mlp:d8l16b1s1:fp32")), 1e-5, 1e-12);
}

TEST(MlpScaling, FitRecoversExactExponents) {
  for (const double b : {1.0, 2.0, 0.5}) {
    std::vector<double> f = {1, 2, 3, 4, 5}, t;
    for (double x : f) t.push_back(3.5 * std::pow(x, b));
    const PowerFit fit = fit_power_law(f, t);
    EXPECT_NEAR(fit.b, b, 1e-12);
    EXPECT_NEAR(fit.a, 3.5, 1e-9);
    EXPECT_NEAR(fit.r2, 1.0, 1e-12);
    EXPECT_EQ(fit.points, 5);
  }
  EXPECT_EQ(fit_power_law({1}, {2}).points, 1);
}

TEST(MlpScaling, StudiesAndBase) {
  const MlpProblem base = parse_base("dim=8,num_steps=1", DataType::fp32);
  EXPECT_EQ(base.str(), "mlp:d8l4b256s1:fp32");
  const auto all = study_problems(base, {"all"});
  ASSERT_EQ(all.size(), 1u + 4 * 4);
  EXPECT_EQ(all[0].name, "base");
  EXPECT_EQ(all[1].str_with_name(), "mlp:d8l4b256s2:fp32:n\"scale_num_steps_x2\"");
  EXPECT_EQ(all.back().str_with_name(), "mlp:d40l4b256s1:fp32:n\"scale_dim_x5\"");
  EXPECT_EQ(study_problems(base, {"dim", "dim"}).size(), 5u);
  EXPECT_THROW(study_problems(base, {"width"}), bench::UsageError);
  EXPECT_THROW(parse_base("dim=x", DataType::fp32), bench::UsageError);
  EXPECT_THROW(parse_base("depth=3", DataType::fp32), bench::UsageError);
  EXPECT_EQ(expected_exponent("dim"), 2.0);
  EXPECT_EQ(expected_exponent("batch_size"), 1.0);
}

TEST(MlpScaling, StudiesJsonFromResults) {
  std::vector<bench::Result> rs;
  auto add = [&](const std::string& name, double ms) {
    bench::Result r;
    r.backend = "x";
    r.dtype = "fp32";
    r.name = name;
    r.status = bench::Status::passed;
    bench::Summary s;
    s.median = ms;
    r.total_time_ms = s;
    rs.push_back(r);
  };
  add("base", 1.0);
  for (int f : {2, 3, 4, 5}) add("scale_dim_x" + std::to_string(f), f * f * 1.0);
  const auto j = studies_json(rs);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["parameter"], "dim");
  EXPECT_NEAR(j[0]["fit_exponent"].get<double>(), 2.0, 1e-9);
  EXPECT_EQ(j[0]["points"], 5);
}

// --timing both: one study per timing mode, each fitted to its own mode's times.
TEST(MlpScaling, StudiesJsonKeepsTimingModesApart) {
  std::vector<bench::Result> rs;
  auto add = [&](const std::string& name, const std::string& mode, double ms) {
    bench::Result r;
    r.backend = "x";
    r.dtype = "fp32";
    r.name = name;
    r.timing_mode = mode;
    r.status = bench::Status::passed;
    bench::Summary s;
    s.median = ms;
    r.total_time_ms = s;
    rs.push_back(r);
  };
  for (int f : {1, 2, 3, 4, 5}) {
    const std::string name = f == 1 ? "base" : "scale_dim_x" + std::to_string(f);
    add(name, "real", f * f * 1.0);
    add(name, "pure:back-to-back", f * 1.0);
  }
  const auto j = studies_json(rs);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["timing"], "pure");
  EXPECT_NEAR(j[0]["fit_exponent"].get<double>(), 1.0, 1e-9);
  EXPECT_EQ(j[1]["timing"], "real");
  EXPECT_NEAR(j[1]["fit_exponent"].get<double>(), 2.0, 1e-9);
  EXPECT_EQ(j[1]["points"], 5);
}

}  // namespace
}  // namespace mlp
