// The core's case runner on a suite of its own (no conv types): a scaled copy of a vector, judged
// by the hooks. Every outcome ends in its status, with the timing fields of a passed case; the
// conv suite's use of the runner is tested in test_bench.cpp.
#include "core/runner.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/error.hpp"

namespace bench {
namespace {

enum class Behaviour { correct, wrong, wrong_after_sampling, throws_in_run, unsupported };

class ScaleInstance final : public Instance {
 public:
  ScaleInstance(const std::vector<float>& in, Behaviour b) : in_(in), b_(b) {}
  void compile() override {
    if (b_ == Behaviour::unsupported) throw Unsupported("no kernel for this size");
  }
  void poison_output() override {
    out_.assign(in_.size(), std::numeric_limits<float>::quiet_NaN());
  }
  void run() override {
    ++runs_;
    if (b_ == Behaviour::throws_in_run) throw std::runtime_error("the device fell over");
    for (std::size_t i = 0; i < in_.size(); ++i) out_[i] = 2.0f * in_[i];
    if (b_ == Behaviour::wrong || (b_ == Behaviour::wrong_after_sampling && runs_ > 2))
      out_[0] += 1.0f;
  }
  std::string algorithm() const override { return "scale by 2"; }
  const std::vector<float>& out() const { return out_; }

 private:
  const std::vector<float>& in_;
  Behaviour b_;
  std::vector<float> out_;
  int runs_ = 0;
};

class Runner : public ::testing::Test {
 protected:
  Runner() : in_{1.0f, -2.5f, 3.25f, 0.5f} {
    options_.measure.warmup_iters = 1;
    options_.measure.min_time_ms = 1;
    options_.measure.max_time_ms = 10;
  }
  CaseHooks hooks(Behaviour b) {
    CaseHooks h;
    h.prepare = [this, b] { return std::make_unique<ScaleInstance>(in_, b); };
    h.check = [this](Instance& base, Result& r, bool after) {
      checks_.push_back(after);
      const auto& got = static_cast<ScaleInstance&>(base).out();
      std::vector<double> ref;
      for (float x : in_) ref.push_back(2.0 * x);
      r.correctness = compare(got.data(), ref.data(), got.size(), Tolerance{1e-6, 1e-6});
      return CheckOutcome{r.correctness->passed, r.correctness->message};
    };
    return h;
  }
  Result identity() {
    Result r;
    r.suite = "toy";
    r.backend = "scale";
    r.device = "cpu";
    r.problem = "n4";
    return r;
  }
  std::vector<float> in_;
  CaseOptions options_;
  std::vector<bool> checks_;
};

TEST_F(Runner, ACorrectCaseIsTimedAndCheckedTwice) {
  const Result r = run_case(identity(), hooks(Behaviour::correct), options_).result;
  EXPECT_EQ(r.status, Status::passed) << r.reason;
  EXPECT_EQ(r.suite, "toy");
  EXPECT_EQ(r.algorithm, "scale by 2");
  ASSERT_TRUE(r.compile_time_ms && r.first_run_ms && r.total_time_ms);
  EXPECT_GT(r.total_time_ms->samples, 0);
  EXPECT_FALSE(r.gpu_time_ms);
  EXPECT_EQ(r.timing_mode, "real");
  EXPECT_EQ(checks_, (std::vector<bool>{false, true}));  // first run, then what was timed
  // The case's part of its slot: every phase the runner went through, compile and first run as
  // recorded, sampling at least the least sampling time.
  ASSERT_TRUE(r.slot_ms.is_object()) << r.slot_ms.dump();
  for (const char* key : {"prepare", "compile", "first_run", "check", "sampling", "after_sampling"})
    EXPECT_GE(r.slot_ms.value(key, -1.0), 0.0) << key;
  EXPECT_EQ(r.slot_ms["compile"].get<double>(), *r.compile_time_ms);
  EXPECT_EQ(r.slot_ms["first_run"].get<double>(), *r.first_run_ms);
  EXPECT_GE(r.slot_ms["sampling"].get<double>(), options_.measure.min_time_ms);
}

TEST_F(Runner, PureTimingRunsBackToBackOnTheCpu) {
  options_.timing = TimingMode::pure;
  options_.pure_runs = 3;
  const Result r = run_case(identity(), hooks(Behaviour::correct), options_).result;
  EXPECT_EQ(r.status, Status::passed) << r.reason;
  EXPECT_EQ(r.timing_mode, "pure:back-to-back");
  EXPECT_EQ(r.runs_per_sample, 3);
}

TEST_F(Runner, EveryOtherOutcomeIsAStatus) {
  struct Case {
    Behaviour b;
    Status want;
    const char* reason;
  } cases[] = {{Behaviour::wrong, Status::incorrect, "1 of 4 outputs outside"},
               {Behaviour::wrong_after_sampling, Status::incorrect, "after the timed runs"},
               {Behaviour::throws_in_run, Status::failed, "the device fell over"},
               {Behaviour::unsupported, Status::unsupported, "no kernel for this size"}};
  for (const auto& c : cases) {
    const Result r = run_case(identity(), hooks(c.b), options_).result;
    EXPECT_EQ(r.status, c.want) << r.reason;
    EXPECT_NE(r.reason.find(c.reason), std::string::npos) << r.reason;
  }
}

TEST_F(Runner, SupportChecksComeFirst) {
  CaseHooks not_built = hooks(Behaviour::correct);
  not_built.built = false;
  not_built.why_missing = "library not found";
  Result r = run_case(identity(), not_built, options_).result;
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_EQ(r.reason, "not built: library not found");

  CaseHooks no_device = hooks(Behaviour::correct);
  no_device.available = [] { return Support::no("no GPU"); };
  r = run_case(identity(), no_device, options_).result;
  EXPECT_EQ(r.status, Status::skipped);
  EXPECT_EQ(r.reason, "no GPU");

  CaseHooks too_big = hooks(Behaviour::correct);
  too_big.check_support = [] { return Support::no("n above 2^31"); };
  r = run_case(identity(), too_big, options_).result;
  EXPECT_EQ(r.status, Status::unsupported);
  EXPECT_EQ(r.reason, "n above 2^31");
  EXPECT_TRUE(checks_.empty());  // nothing ran
}

}  // namespace
}  // namespace bench
