// Tracing through the case runner (conv/bench.cpp): off by default, the phases as ranges when on,
// and the traced calls, with device activity around them, only after the timed sampling.
#include <gtest/gtest.h>

#include <algorithm>

#include "conv/bench.hpp"

namespace conv {
namespace {

class CountingInstance final : public Instance {
 public:
  CountingInstance(const Problem& p, const HostData& d, bool wrong, int* runs)
      : p_(p), data_(d), wrong_(wrong), runs_(runs) {}
  void compile() override {}
  void poison_output() override { out_.assign(std::size_t(p_.dst_elements()), -1.0f); }
  void run() override {
    ++*runs_;
    for (std::size_t i = 0; i < out_.size(); ++i)
      out_[i] = static_cast<float>(data_.ref[i]) + (wrong_ ? 1.0f : 0.0f);
  }
  void read_output(float* dst) override { std::copy(out_.begin(), out_.end(), dst); }
  std::vector<std::int64_t> output_dims() const override {
    return {p_.mb, p_.oc, p_.oh(), p_.ow()};
  }
  std::string algorithm() const override { return "counting"; }

 private:
  Problem p_;
  const HostData& data_;
  bool wrong_;
  int* runs_;
  std::vector<float> out_;
};

class CountingBackend final : public Backend {
 public:
  CountingBackend(bool wrong, int* runs) : wrong_(wrong), runs_(runs) {}
  std::string name() const override { return "counting"; }
  std::string device() const override { return "cpu"; }
  std::string library_version() const override { return "1.0"; }
  Support check_support(const Problem&) const override { return Support::yes(); }
  std::unique_ptr<Instance> prepare(const Problem& p, const HostData& d) const override {
    return std::make_unique<CountingInstance>(p, d, wrong_, runs_);
  }

 private:
  bool wrong_;
  int* runs_;
};

// Records when it was started and stopped, and adds one kernel.
class FakeSource final : public bench::ActivitySource {
 public:
  std::int64_t started_ns = 0, stopped_ns = 0;
  bool start(std::string*) override {
    started_ns = bench::trace_clock_ns();
    return true;
  }
  void stop(std::vector<bench::TraceEvent>* out, std::string*) override {
    stopped_ns = bench::trace_clock_ns();
    bench::TraceEvent k;
    k.kind = bench::EventKind::kernel;
    k.name = "kernel";
    k.start_ns = started_ns;
    k.end_ns = stopped_ns;
    out->push_back(k);
  }
  std::string description() const override { return "fake"; }
};

class TracedCase : public ::testing::Test {
 protected:
  TracedCase() : p_(parse_problem("mb2ic3ih9oc4kh3")), data_(make_host_data(p_, 5)) {
    options_.measure.warmup_iters = 2;
    options_.measure.min_iters = 5;
    options_.measure.max_iters = 5;
    options_.measure.min_time_ms = 0;
    trace_.calls = 4;
    trace_.device_activity = &source_;
  }
  CaseOutput run(bool wrong, const std::string& device = "cpu") {
    CountingBackend b(wrong, &runs_);
    return run_case(&b, "counting", device, "", p_, data_, options_);
  }
  const bench::TraceEvent* range(const bench::Trace& t, const std::string& name) {
    for (const auto& e : t.events)
      if (e.kind == bench::EventKind::host_range && e.name == name) return &e;
    return nullptr;
  }

  Problem p_;
  HostData data_;
  CaseOptions options_;
  bench::TraceConfig trace_;
  FakeSource source_;
  int runs_ = 0;
};

TEST_F(TracedCase, OffByDefault) {
  const CaseOutput c = run(false);
  EXPECT_EQ(c.result.status, bench::Status::passed) << c.result.reason;
  EXPECT_FALSE(c.trace);
  // first run, warm-up, samples, check after sampling: no extra calls.
  EXPECT_EQ(runs_, 1 + 2 + 5 + 1);
}

TEST_F(TracedCase, PhasesThenTracedCallsAfterSampling) {
  options_.trace = &trace_;
  const CaseOutput c = run(false);
  ASSERT_EQ(c.result.status, bench::Status::passed) << c.result.reason;
  ASSERT_TRUE(c.trace);
  const bench::Trace& t = *c.trace;
  EXPECT_EQ(runs_, 1 + 2 + 5 + 1 + 4);
  EXPECT_EQ(c.result.total_time_ms->samples, 5u);  // the traced calls are not samples
  ASSERT_EQ(t.calls.size(), 4u);
  const auto* sampling = range(t, "warm-up and sampling");
  const auto* traced = range(t, "traced calls");
  const auto* whole = range(t, "counting " + p_.str());
  for (const char* name : {"prepare", "compile", "first run and check", "check after sampling"})
    EXPECT_TRUE(range(t, name)) << name;
  ASSERT_TRUE(sampling && traced && whole);
  EXPECT_GE(traced->start_ns, sampling->end_ns);
  EXPECT_GE(t.calls.front().start_ns, sampling->end_ns);
  EXPECT_EQ(whole->depth, 0);
  EXPECT_EQ(sampling->depth, 1);
  EXPECT_LE(whole->start_ns, range(t, "prepare")->start_ns);
  EXPECT_GE(whole->end_ns, traced->end_ns);
  // A host case records no device activity, even with a source configured.
  EXPECT_EQ(source_.started_ns, 0);
  EXPECT_NE(t.device_activity_note.find("host"), std::string::npos);
}

TEST_F(TracedCase, DeviceActivityOnlyAroundTheTracedCalls) {
  options_.trace = &trace_;
  const CaseOutput c = run(false, "cuda");
  ASSERT_EQ(c.result.status, bench::Status::passed) << c.result.reason;
  ASSERT_TRUE(c.trace);
  const auto* sampling = range(*c.trace, "warm-up and sampling");
  const auto* traced = range(*c.trace, "traced calls");
  ASSERT_TRUE(sampling && traced);
  EXPECT_GE(source_.started_ns, sampling->end_ns);
  EXPECT_GE(source_.started_ns, traced->start_ns);
  EXPECT_LE(source_.stopped_ns, traced->end_ns);
  EXPECT_EQ(c.trace->device_activity_source, "fake");
  const auto kernels = std::count_if(c.trace->events.begin(), c.trace->events.end(),
                                     [](const auto& e) { return e.name == "kernel"; });
  EXPECT_EQ(kernels, 1);
}

TEST_F(TracedCase, AnIncorrectCaseKeepsItsPhasesWithoutTracedCalls) {
  options_.trace = &trace_;
  const CaseOutput c = run(true);
  EXPECT_EQ(c.result.status, bench::Status::incorrect);
  ASSERT_TRUE(c.trace);
  EXPECT_TRUE(range(*c.trace, "compile"));
  EXPECT_TRUE(range(*c.trace, "first run and check"));
  EXPECT_FALSE(range(*c.trace, "traced calls"));
  EXPECT_TRUE(c.trace->calls.empty());
}

TEST_F(TracedCase, ASkippedCaseHasNoTrace) {
  options_.trace = &trace_;
  const CaseOutput c = run_case(nullptr, "missing", "cpu", "not here", p_, data_, options_);
  EXPECT_EQ(c.result.status, bench::Status::skipped);
  EXPECT_FALSE(c.trace);
}

}  // namespace
}  // namespace conv
