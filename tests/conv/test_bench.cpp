// The case runner: every way a backend can behave ends in the right status, never a throw.
#include "conv/bench.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace conv {
namespace {

enum class Behaviour {
  correct,        // computes the reference in float
  wrong_value,    // one element off by 1
  unwritten,      // leaves the output as poisoned
  zeros,          // writes all zeros
  throws,         // run() throws
  unsupported,    // compile() says Unsupported
  wrong_shape,    // reports other output dims
  breaks_later,   // correct on the first run, wrong after the timed runs
  wrong_known,    // wrong_value, and names a known library issue in extra()
  correct_known,  // correct, and names a known library issue in extra()
  phased,         // correct, with a phase split (time_phases)
  wrong_phased,   // wrong_value, with a phase split
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
    if (b_ == Behaviour::wrong_value || b_ == Behaviour::wrong_known ||
        b_ == Behaviour::wrong_phased || (b_ == Behaviour::breaks_later && runs_ > 1))
      out_[out_.size() / 2] += 1.0f;
  }
  nlohmann::ordered_json extra() const override {
    if (b_ == Behaviour::wrong_known || b_ == Behaviour::correct_known)
      return {{"known_issue", "fakelib#1: sums in the wrong order"}};
    return nlohmann::ordered_json::object();
  }
  void read_output(float* dst) override { std::copy(out_.begin(), out_.end(), dst); }
  // Host memory standing for the device's: only FakeDeviceCheck reads it.
  std::optional<bench::DeviceValues> device_output() override {
    return bench::DeviceValues{out_.data(), DataType::fp32, out_.size(), nullptr};
  }
  std::vector<std::int64_t> output_dims() const override {
    if (b_ == Behaviour::wrong_shape) return {p_.mb, p_.oc, p_.oh() + 1, p_.ow()};
    return {p_.mb, p_.oc, p_.oh(), p_.ow()};
  }
  std::string algorithm() const override { return "fake"; }
  // Phase i of call c takes (i + 1) * (c + 1) ms: medians 1 * m and 2 * m for m the median call.
  PhaseTimes time_phases(int calls) override {
    if (b_ != Behaviour::phased && b_ != Behaviour::wrong_phased) return {};
    PhaseTimes t{{"pack", "multiply"}, {{}, {}}, "made up"};
    for (int c = 0; c < calls; ++c)
      for (int i = 0; i < 2; ++i) t.ms[std::size_t(i)].push_back(double((i + 1) * (c + 1)));
    return t;
  }

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

// A stand-in for the reference kept on the device (conv/cuda/reference_conv_cuda.cu): compares the
// fake's "device" output (host floats) with the host check and marks the message, or fails.
class FakeDeviceCheck final : public DeviceCheck {
 public:
  FakeDeviceCheck(const HostData& d, std::string failure) : ref_(d.ref), failure_(failure) {}
  std::string compare(const bench::DeviceValues& out, const bench::Tolerance& tol,
                      bench::Correctness* result) const override {
    ++calls;
    if (!failure_.empty()) return failure_;
    *result = bench::compare(static_cast<const float*>(out.data), ref_.data(), out.count, tol);
    result->message = "on the device: " + result->message;
    return "";
  }
  mutable int calls = 0;

 private:
  std::vector<double> ref_;
  std::string failure_;
};

class RunCase : public ::testing::Test {
 protected:
  RunCase() : p_(parse_problem("mb2ic3ih9oc4kh3")), data_(make_host_data(p_, 5)) {
    options_.measure.warmup_iters = 1;
    options_.measure.min_time_ms = 1;
    options_.measure.max_time_ms = 10;
  }
  bench::Result run(const Backend* b, const std::string& why_missing = "") {
    return run_case(b, "fake", "cpu", why_missing, p_, data_, options_).result;
  }
  // A case recorded as a GPU backend's (device "cuda"; the fake still runs on the host).
  CaseOutput run_as_gpu(const Backend* b, bool keep_output = false) {
    return run_case(b, "fake", "cuda", "", p_, data_, options_, keep_output);
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

// A phase split lands in metrics.<phase>_ms (medians over the calls) and extra.phase_split, for a
// passed case only; a backend without one records neither.
TEST_F(RunCase, PhaseSplitIsRecordedAsMediansOfAPassedCase) {
  FakeBackend phased(Behaviour::phased);
  const bench::Result r = run(&phased);
  ASSERT_EQ(r.status, bench::Status::passed) << r.reason;
  ASSERT_TRUE(r.extra.contains("phase_split")) << r.extra.dump();
  const int calls = r.extra["phase_split"]["calls"].get<int>();
  ASSERT_GT(calls, 0);
  const double median_call = (calls + 1) / 2.0;  // of 1..calls
  EXPECT_DOUBLE_EQ(r.metrics.at("pack_ms").get<double>(), median_call);
  EXPECT_DOUBLE_EQ(r.metrics.at("multiply_ms").get<double>(), 2 * median_call);
  EXPECT_EQ(r.extra["phase_split"]["phases"].dump(), R"(["pack","multiply"])");
  EXPECT_EQ(r.extra["phase_split"]["clock"], "made up");

  FakeBackend plain(Behaviour::correct);
  const bench::Result p = run(&plain);
  EXPECT_FALSE(p.extra.contains("phase_split"));
  EXPECT_TRUE(p.metrics.empty());

  FakeBackend wrong(Behaviour::wrong_phased);
  const bench::Result w = run(&wrong);
  EXPECT_EQ(w.status, bench::Status::incorrect);
  EXPECT_FALSE(w.extra.contains("phase_split"));
  EXPECT_TRUE(w.metrics.empty());
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

TEST_F(RunCase, KnownLibraryIssueIsNamedButTheCaseStaysIncorrect) {
  FakeBackend wrong(Behaviour::wrong_known);
  const bench::Result r = run(&wrong);
  EXPECT_EQ(r.status, bench::Status::incorrect);
  EXPECT_NE(r.reason.find("1 of "), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find(" (known issue: fakelib#1: sums in the wrong order)"), std::string::npos)
      << r.reason;
  EXPECT_EQ(r.extra.value("known_issue", ""), "fakelib#1: sums in the wrong order");

  FakeBackend right(Behaviour::correct_known);  // the issue did not bite: passed, no suffix
  const bench::Result ok = run(&right);
  EXPECT_EQ(ok.status, bench::Status::passed) << ok.reason;
  EXPECT_EQ(ok.reason.find("known issue"), std::string::npos);
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

// The check runs where the reference is kept on the device and the backend hands out its output
// there (both checks), and on the host otherwise: for CPU backends, with --save-tensors
// (keep_output, which returns the output), and when the device check fails. extra.check_device
// says which; extra.check_fallback why a GPU case was checked on the host.
TEST_F(RunCase, CheckRunsOnTheDeviceWhereTheReferenceIsKept) {
  FakeBackend correct(Behaviour::correct), wrong(Behaviour::wrong_value);
  const bench::Result host = run(&correct);
  EXPECT_EQ(host.extra.value("check_device", ""), "cpu");
  EXPECT_FALSE(host.extra.contains("check_fallback"));
  const CaseOutput no_reference = run_as_gpu(&correct);
  EXPECT_EQ(no_reference.result.extra.value("check_fallback", ""),
            "the float64 reference is on the host only");

  auto device = std::make_shared<FakeDeviceCheck>(data_, "");
  data_.device_check = device;
  const CaseOutput on_device = run_as_gpu(&correct);
  EXPECT_EQ(on_device.result.status, bench::Status::passed) << on_device.result.reason;
  EXPECT_EQ(on_device.result.extra.value("check_device", ""), "cuda");
  EXPECT_FALSE(on_device.result.extra.contains("check_fallback"));
  EXPECT_EQ(on_device.result.correctness->message, "on the device: ok");
  EXPECT_EQ(device->calls, 2);  // the first check and the one after sampling
  EXPECT_TRUE(on_device.output.empty());

  const CaseOutput wrong_on_device = run_as_gpu(&wrong);
  EXPECT_EQ(wrong_on_device.result.status, bench::Status::incorrect);
  EXPECT_EQ(wrong_on_device.result.reason.rfind("on the device: 1 of ", 0), 0u)
      << wrong_on_device.result.reason;

  device->calls = 0;
  const CaseOutput kept = run_as_gpu(&correct, true);
  EXPECT_EQ(kept.result.status, bench::Status::passed) << kept.result.reason;
  EXPECT_EQ(kept.result.extra.value("check_device", ""), "cpu");
  EXPECT_EQ(kept.result.extra.value("check_fallback", ""),
            "--save-tensors reads the output to the host");
  EXPECT_EQ(kept.output.size(), std::size_t(p_.dst_elements()));
  EXPECT_EQ(device->calls, 0);

  data_.device_check = std::make_shared<FakeDeviceCheck>(data_, "device check failed");
  const CaseOutput fell = run_as_gpu(&wrong);
  EXPECT_EQ(fell.result.status, bench::Status::incorrect);
  EXPECT_EQ(fell.result.extra.value("check_device", ""), "cpu");
  EXPECT_EQ(fell.result.extra.value("check_fallback", ""), "device check failed");
  EXPECT_EQ(fell.result.reason.rfind("1 of ", 0), 0u) << fell.result.reason;  // the host's
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

// Device services that record what the runner asks of them.
class FakeServices final : public bench::DeviceServices {
 public:
  void flush_cache() override { ++flushes; }
  std::size_t cache_flush_bytes() const override { return 1234; }
  std::optional<bench::ClockSample> clocks(std::string* why) override {
    if (sm_mhz.empty()) {
      *why = "no clocks here";
      return std::nullopt;
    }
    bench::ClockSample c;
    c.sm_mhz = sm_mhz[std::min(clock_reads++, sm_mhz.size() - 1)];
    c.sm_max_mhz = 2000;
    c.mem_mhz = c.mem_max_mhz = 3200;
    return c;
  }
  std::unique_ptr<bench::Replay> capture(void*, const std::function<void()>& body, int calls,
                                         std::string* why) override {
    if (!capturable) {
      *why = "work escapes the stream";
      return nullptr;
    }
    struct FakeReplay final : bench::Replay {
      std::function<void()> body;
      int n = 0;
      int* launches = nullptr;
      void launch() override {
        ++*launches;
        for (int i = 0; i < n; ++i) body();
      }
      int calls() const override { return n; }
    };
    auto r = std::make_unique<FakeReplay>();
    r->body = body;
    r->n = calls;
    r->launches = &launches;
    return r;
  }
  bool capturable = true;
  std::vector<double> sm_mhz = {1980, 1980};
  std::size_t clock_reads = 0;
  int flushes = 0, launches = 0;
};

class RunDeviceCase : public RunCase {
 protected:
  bench::Result run_on_device(const Backend* b) {
    options_.device_services = &services_;
    return run_case(b, "fake", "cuda", "", p_, data_, options_).result;
  }
  FakeServices services_;
};

TEST_F(RunCase, RealTimingIsTheDefaultWithOneRunPerSample) {
  FakeBackend b(Behaviour::correct);
  const bench::Result r = run(&b);
  EXPECT_EQ(r.timing_mode, "real");
  EXPECT_EQ(r.runs_per_sample, 1);
  EXPECT_FALSE(r.cold_cache);
  EXPECT_TRUE(r.clocks.is_null());  // a CPU case reads no device clocks
}

TEST_F(RunCase, PureTimingOnTheCpuLoopsBackToBack) {
  options_.timing = TimingMode::pure;
  options_.pure_runs = 7;
  FakeBackend b(Behaviour::correct);
  const bench::Result r = run(&b);
  EXPECT_EQ(r.status, bench::Status::passed) << r.reason;
  EXPECT_EQ(r.timing_mode, "pure:back-to-back");
  EXPECT_EQ(r.runs_per_sample, 7);
}

TEST_F(RunCase, PureTimingChoosesRunsPerSampleWhenNotGiven) {
  options_.timing = TimingMode::pure;
  FakeBackend b(Behaviour::correct);
  const bench::Result r = run(&b);
  EXPECT_GE(r.runs_per_sample, 1);
  EXPECT_LE(r.runs_per_sample, 1000);
}

TEST_F(RunCase, ColdCacheOnTheCpuFlushesHostCaches) {
  options_.cold_cache = true;
  FakeBackend b(Behaviour::correct);
  const bench::Result r = run(&b);
  EXPECT_EQ(r.status, bench::Status::passed) << r.reason;
  EXPECT_TRUE(r.cold_cache);
  EXPECT_GT(r.extra.value("cache_flush_bytes", 0), 0);
}

TEST_F(RunDeviceCase, PureTimingReplaysACapturedGraph) {
  options_.timing = TimingMode::pure;
  options_.pure_runs = 4;
  FakeBackend b(Behaviour::correct);
  const bench::Result r = run_on_device(&b);
  EXPECT_EQ(r.status, bench::Status::passed) << r.reason;
  EXPECT_EQ(r.timing_mode, "pure:graph");
  EXPECT_EQ(r.runs_per_sample, 4);
  // warm-up + samples + the check after timing all replay the graph
  EXPECT_GE(services_.launches, options_.measure.warmup_iters + 2);
}

TEST_F(RunDeviceCase, PureTimingFallsBackToALoopAndSaysWhy) {
  options_.timing = TimingMode::pure;
  options_.pure_runs = 3;
  services_.capturable = false;
  FakeBackend b(Behaviour::correct);
  const bench::Result r = run_on_device(&b);
  EXPECT_EQ(r.timing_mode, "pure:back-to-back");
  EXPECT_EQ(r.extra.value("graph_not_used", ""), "work escapes the stream");
}

TEST_F(RunDeviceCase, ReplayThatBreaksTheOutputIsIncorrect) {
  options_.timing = TimingMode::pure;
  options_.pure_runs = 2;
  FakeBackend b(Behaviour::breaks_later);
  const bench::Result r = run_on_device(&b);
  EXPECT_EQ(r.status, bench::Status::incorrect);
}

TEST_F(RunDeviceCase, ColdCacheFlushesBeforeEverySampleAndForcesOneRun) {
  options_.cold_cache = true;
  options_.timing = TimingMode::pure;
  FakeBackend b(Behaviour::correct);
  const bench::Result r = run_on_device(&b);
  EXPECT_EQ(r.status, bench::Status::passed) << r.reason;
  EXPECT_TRUE(r.cold_cache);
  EXPECT_EQ(r.runs_per_sample, 1);
  ASSERT_TRUE(r.total_time_ms);
  EXPECT_EQ(services_.flushes, static_cast<int>(r.total_time_ms->samples));
  EXPECT_EQ(r.extra.value("cache_flush_bytes", 0), 1234);
}

TEST_F(RunDeviceCase, ClocksAreRecordedAndASlowClockIsThrottled) {
  FakeBackend b(Behaviour::correct);
  bench::Result r = run_on_device(&b);
  ASSERT_TRUE(r.clocks.is_object());
  EXPECT_EQ(r.clocks["sm_mhz_before"], 1980.0);
  EXPECT_EQ(r.throttled, false);
  services_.sm_mhz = {1980, 1400};  // 70% of 2000 after sampling
  services_.clock_reads = 0;
  r = run_on_device(&b);
  EXPECT_EQ(r.throttled, true);
  EXPECT_EQ(r.clocks["sm_mhz_after"], 1400.0);
}

TEST_F(RunDeviceCase, MissingClocksSayWhy) {
  services_.sm_mhz.clear();
  FakeBackend b(Behaviour::correct);
  const bench::Result r = run_on_device(&b);
  EXPECT_TRUE(r.clocks.is_null());
  EXPECT_FALSE(r.throttled);
  EXPECT_EQ(r.extra.value("clocks_not_read", ""), "no clocks here");
}

TEST_F(RunDeviceCase, ColdCacheWithoutDeviceServicesFails) {
  options_.cold_cache = true;
  FakeBackend b(Behaviour::correct);
  const bench::Result r = run_case(&b, "fake", "cuda", "", p_, data_, options_).result;
  EXPECT_EQ(r.status, bench::Status::failed);
  EXPECT_NE(r.reason.find("--cold-cache"), std::string::npos);
}

}  // namespace
}  // namespace conv
