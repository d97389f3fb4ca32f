// The case runner: every way a backend can behave ends in the right status, never a throw.
#include "conv/bench.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace conv {
namespace {

enum class Behaviour {
  correct,       // computes the reference in float
  wrong_value,   // one element off by 1
  unwritten,     // leaves the output as poisoned
  zeros,         // writes all zeros
  throws,        // run() throws
  unsupported,   // compile() says Unsupported
  wrong_shape,   // reports other output dims
  breaks_later,  // correct on the first run, wrong after the timed runs
};

class FakeInstance final : public Instance {
 public:
  FakeInstance(const Problem& p, const HostData& d, Behaviour b) : p_(p), data_(d), b_(b) {}
  void compile() override {
    if (b_ == Behaviour::unsupported) throw bench::Unsupported("no implementation for this");
  }
  void poison_output() override {
    out_.assign(std::size_t(p_.dst_elements()), std::numeric_limits<float>::quiet_NaN());
  }
  void run() override {
    ++runs_;
    if (b_ == Behaviour::throws) throw std::runtime_error("device on fire");
    if (b_ == Behaviour::unwritten) return;
    for (std::size_t i = 0; i < out_.size(); ++i)
      out_[i] = b_ == Behaviour::zeros ? 0.0f : static_cast<float>(data_.ref[i]);
    if (b_ == Behaviour::wrong_value || (b_ == Behaviour::breaks_later && runs_ > 1))
      out_[out_.size() / 2] += 1.0f;
  }
  void read_output(float* dst) override { std::copy(out_.begin(), out_.end(), dst); }
  std::vector<std::int64_t> output_dims() const override {
    if (b_ == Behaviour::wrong_shape) return {p_.mb, p_.oc, p_.oh() + 1, p_.ow()};
    return {p_.mb, p_.oc, p_.oh(), p_.ow()};
  }
  std::string algorithm() const override { return "fake"; }

 private:
  Problem p_;
  const HostData& data_;
  Behaviour b_;
  std::vector<float> out_;
  int runs_ = 0;
};

class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(Behaviour b, Support avail = Support::yes(), Support sup = Support::yes())
      : b_(b), avail_(std::move(avail)), sup_(std::move(sup)) {}
  std::string name() const override { return "fake"; }
  std::string device() const override { return "cpu"; }
  std::string library_version() const override { return "fake 1.0"; }
  Support available() const override { return avail_; }
  Support check_support(const Problem&) const override { return sup_; }
  std::unique_ptr<Instance> prepare(const Problem& p, const HostData& d) const override {
    return std::make_unique<FakeInstance>(p, d, b_);
  }

 private:
  Behaviour b_;
  Support avail_, sup_;
};

class RunCase : public testing::Test {
 protected:
  RunCase() : p_(parse_problem("mb2ic3ih9oc4kh3")), data_(make_host_data(p_, 5)) {
    options_.measure.warmup_iters = 1;
    options_.measure.min_time_ms = 1;
    options_.measure.max_time_ms = 10;
  }
  bench::Result run(const Backend* b, const std::string& why_missing = "") {
    return run_case(b, "fake", "cpu", why_missing, p_, data_, options_).result;
  }
  Problem p_;
  HostData data_;
  CaseOptions options_;
};

TEST_F(RunCase, CorrectBackendPassesWithTimesAndCommand) {
  FakeBackend b(Behaviour::correct);
  const bench::Result r = run(&b);
  EXPECT_EQ(r.status, bench::Status::passed) << r.reason;
  ASSERT_TRUE(r.total_time_ms && r.cpu_time_ms && r.compile_time_ms && r.first_run_ms);
  EXPECT_FALSE(r.gpu_time_ms);
  EXPECT_GE(r.total_time_ms->samples, 1u);
  EXPECT_TRUE(r.correctness && r.correctness->passed);
  EXPECT_TRUE(r.shape_ok.value_or(false));
  EXPECT_EQ(r.algorithm, "fake");
  EXPECT_EQ(r.problem, "mb2ic3ih9oc4kh3");
  EXPECT_EQ(r.command, "myconv --problem mb2ic3ih9oc4kh3 --backend fake");
  EXPECT_DOUBLE_EQ(r.flop, p_.flops());
}

TEST_F(RunCase, WrongValueIsIncorrectWithTheMismatch) {
  FakeBackend b(Behaviour::wrong_value);
  const bench::Result r = run(&b);
  EXPECT_EQ(r.status, bench::Status::incorrect);
  ASSERT_TRUE(r.correctness);
  EXPECT_EQ(r.correctness->mismatches, 1u);
  EXPECT_EQ(r.correctness->first_mismatches.at(0).index, data_.ref.size() / 2);
  EXPECT_FALSE(r.total_time_ms);  // a wrong answer is not timed
}

TEST_F(RunCase, UnwrittenOutputIsCaughtByThePoison) {
  FakeBackend b(Behaviour::unwritten);
  const bench::Result r = run(&b);
  EXPECT_EQ(r.status, bench::Status::incorrect);
  EXPECT_EQ(r.correctness->non_finite, data_.ref.size());
}

TEST_F(RunCase, AllZeroOutputIsMistrusted) {
  FakeBackend b(Behaviour::zeros);
  const bench::Result r = run(&b);
  EXPECT_EQ(r.status, bench::Status::incorrect);
  EXPECT_TRUE(r.correctness->mistrusted);
}

TEST_F(RunCase, ThrowingBackendFailsWithTheError) {
  FakeBackend b(Behaviour::throws);
  const bench::Result r = run(&b);
  EXPECT_EQ(r.status, bench::Status::failed);
  EXPECT_EQ(r.reason, "device on fire");
}

TEST_F(RunCase, UnsupportedAtCompileIsUnsupported) {
  FakeBackend b(Behaviour::unsupported);
  const bench::Result r = run(&b);
  EXPECT_EQ(r.status, bench::Status::unsupported);
  EXPECT_EQ(r.reason, "no implementation for this");
}

TEST_F(RunCase, CheckSupportAndAvailabilityAndMissingBackend) {
  FakeBackend no_support(Behaviour::correct, Support::yes(), Support::no("odd shapes"));
  EXPECT_EQ(run(&no_support).status, bench::Status::unsupported);
  EXPECT_EQ(run(&no_support).reason, "odd shapes");
  FakeBackend no_gpu(Behaviour::correct, Support::no("no CUDA device"));
  EXPECT_EQ(run(&no_gpu).status, bench::Status::skipped);
  const bench::Result missing = run(nullptr, "LibFoo not found");
  EXPECT_EQ(missing.status, bench::Status::skipped);
  EXPECT_EQ(missing.reason, "not built: LibFoo not found");
}

TEST_F(RunCase, WrongShapeIsIncorrect) {
  FakeBackend b(Behaviour::wrong_shape);
  const bench::Result r = run(&b);
  EXPECT_EQ(r.status, bench::Status::incorrect);
  EXPECT_NE(r.reason.find("output shape"), std::string::npos);
}

TEST_F(RunCase, OutputThatBreaksDuringTimingIsIncorrect) {
  FakeBackend b(Behaviour::breaks_later);
  const bench::Result r = run(&b);
  EXPECT_EQ(r.status, bench::Status::incorrect);
  EXPECT_NE(r.reason.find("after the timed runs"), std::string::npos);
}

}  // namespace
}  // namespace conv
