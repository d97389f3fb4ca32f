#include "core/measure.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace bench {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// A device timer that returns scripted times (cycled) and logs every call.
class FakeDeviceTimer : public DeviceTimer {
 public:
  explicit FakeDeviceTimer(std::vector<double> times_ms, std::vector<std::string>* log = nullptr)
      : times_ms_(std::move(times_ms)), log_(log) {}
  void start() override {
    ++starts;
    if (log_) log_->push_back("start");
  }
  void stop() override {
    ++stops;
    if (log_) log_->push_back("stop");
  }
  Millis elapsed() override {
    if (log_) log_->push_back("elapsed");
    return Millis(times_ms_[static_cast<std::size_t>(elapsed_calls++) % times_ms_.size()]);
  }
  int starts = 0, stops = 0, elapsed_calls = 0;

 private:
  std::vector<double> times_ms_;
  std::vector<std::string>* log_;
};

// Bounds that never end the loop, so that each test enables only the one it is about.
MeasureConfig unbounded() {
  MeasureConfig c;
  c.warmup_iters = 0;
  c.min_iters = 1;
  c.max_iters = 1000000;
  c.min_time_ms = 1e9;
  c.max_time_ms = 1e9;
  c.target_cv = 0.02;
  return c;
}

void expect_consistent(const Samples& s) {
  ASSERT_EQ(s.host_ms.size(), s.total_ms.size());
  ASSERT_EQ(s.thread_cpu_ms.size(), s.total_ms.size());
  for (std::size_t i = 0; i < s.total_ms.size(); ++i) {
    EXPECT_GE(s.host_ms[i], 0) << "sample " << i;
    EXPECT_LE(s.host_ms[i], s.total_ms[i]) << "sample " << i;
    EXPECT_GE(s.thread_cpu_ms[i], 0) << "sample " << i;
  }
}

TEST(Sample, WarmupHonouredAndNotRecorded) {
  MeasureConfig c = unbounded();
  c.warmup_iters = 3;
  c.max_iters = 7;
  int runs = 0, syncs = 0;
  FakeDeviceTimer timer({1.0});
  Workload w;
  w.run = [&] { ++runs; };
  w.sync = [&] { ++syncs; };
  w.device_timer = &timer;
  const Samples s = sample(c, w);
  EXPECT_EQ(runs, 3 + 7);
  EXPECT_EQ(syncs, 3 + 7);
  // Warm-up runs are not timed: the device timer brackets only the 7 sampled runs.
  EXPECT_EQ(timer.starts, 7);
  EXPECT_EQ(timer.stops, 7);
  EXPECT_EQ(timer.elapsed_calls, 7);
  EXPECT_EQ(s.total_ms.size(), 7u);
  EXPECT_EQ(s.stop_reason, "max_iters");
  expect_consistent(s);
}

TEST(Sample, ZeroWarmup) {
  MeasureConfig c = unbounded();
  c.warmup_iters = 0;
  c.max_iters = 4;
  int runs = 0;
  Workload w;
  w.run = [&] { ++runs; };
  EXPECT_EQ(sample(c, w).total_ms.size(), 4u);
  EXPECT_EQ(runs, 4);
}

TEST(Sample, MaxItersStopsTheLoop) {
  MeasureConfig c = unbounded();
  c.max_iters = 25;
  c.min_iters = 5;
  c.min_time_ms = 0;  // convergence allowed, but the total time is noisy: never converges
  c.target_cv = 1e-9;
  int runs = 0;
  Workload w;
  w.run = [&] {
    if (++runs % 2) std::this_thread::sleep_for(microseconds(300));
  };
  double elapsed = -1;
  const Samples s = sample(c, w, &elapsed);
  EXPECT_EQ(s.stop_reason, "max_iters");
  EXPECT_EQ(s.total_ms.size(), 25u);
  EXPECT_EQ(runs, 25);
  EXPECT_GT(elapsed, 0);
  expect_consistent(s);
}

TEST(Sample, SingleIteration) {
  MeasureConfig c = unbounded();
  c.max_iters = 1;
  Workload w;
  w.run = [] {};
  const Samples s = sample(c, w);
  EXPECT_EQ(s.total_ms.size(), 1u);
  EXPECT_EQ(s.stop_reason, "max_iters");
}

TEST(Sample, RejectsMaxItersBelowOne) {
  MeasureConfig c = unbounded();
  c.max_iters = 0;
  int runs = 0;
  Workload w;
  w.run = [&] { ++runs; };
  EXPECT_THROW(sample(c, w), std::runtime_error);
  EXPECT_EQ(runs, 0);
}

TEST(Sample, MaxTimeStopsTheLoop) {
  MeasureConfig c = unbounded();
  c.max_time_ms = 20;
  int runs = 0;
  Workload w;
  w.run = [&] {
    ++runs;
    std::this_thread::sleep_for(milliseconds(1));
  };
  double elapsed = -1;
  const Samples s = sample(c, w, &elapsed);
  EXPECT_EQ(s.stop_reason, "max_time");
  EXPECT_GE(elapsed, c.max_time_ms);
  // Every sample sleeps at least 1 ms, so the 20 ms bound is reached by the 20th sample.
  EXPECT_GE(s.total_ms.size(), 2u);
  EXPECT_LE(s.total_ms.size(), 20u);
  EXPECT_EQ(runs, static_cast<int>(s.total_ms.size()));
  double sum = 0;
  for (double t : s.total_ms) {
    EXPECT_GE(t, 1.0);
    sum += t;
  }
  EXPECT_LE(sum, elapsed);
  expect_consistent(s);
}

TEST(Sample, MaxTimeWaitsForTwoSamples) {
  MeasureConfig c = unbounded();
  c.max_time_ms = 1;
  Workload w;
  w.run = [] { std::this_thread::sleep_for(milliseconds(5)); };
  const Samples s = sample(c, w);
  EXPECT_EQ(s.stop_reason, "max_time");
  EXPECT_EQ(s.total_ms.size(), 2u);
}

TEST(Sample, ConvergesWithConstantDeviceTimeAfterMinIters) {
  MeasureConfig c = unbounded();
  c.min_iters = 50;
  c.min_time_ms = 0;
  FakeDeviceTimer timer({0.5});
  Workload w;
  w.run = [] {};
  w.device_timer = &timer;
  const Samples s = sample(c, w);
  EXPECT_EQ(s.stop_reason, "converged");
  // The first convergence check happens at min_iters, and a constant figure passes it.
  EXPECT_EQ(s.total_ms.size(), 50u);
  ASSERT_EQ(s.device_ms.size(), 50u);
  for (double d : s.device_ms) EXPECT_EQ(d, 0.5);
  expect_consistent(s);
}

TEST(Sample, OneSampleNeverConverges) {
  // A single sample has no spread (its cv is 0 by definition), so it says nothing about
  // stability: even with min_iters 1 the loop must see two samples before converging.
  MeasureConfig c = unbounded();
  c.min_iters = 1;
  c.min_time_ms = 0;
  c.max_iters = 50;
  FakeDeviceTimer noisy({1.0, 3.0});
  Workload w;
  w.run = [] {};
  w.device_timer = &noisy;
  const Samples s = sample(c, w);
  EXPECT_EQ(s.stop_reason, "max_iters");
  EXPECT_EQ(s.device_ms.size(), 50u);

  FakeDeviceTimer constant({1.0});
  w.device_timer = &constant;
  const Samples t = sample(c, w);
  EXPECT_EQ(t.stop_reason, "converged");
  EXPECT_EQ(t.device_ms.size(), 2u);
}

TEST(Sample, ConvergenceWaitsForMinTime) {
  MeasureConfig c = unbounded();
  c.min_iters = 2;
  c.min_time_ms = 15;
  FakeDeviceTimer timer({0.5});
  Workload w;
  w.run = [] { std::this_thread::sleep_for(microseconds(200)); };
  w.device_timer = &timer;
  double elapsed = -1;
  const Samples s = sample(c, w, &elapsed);
  EXPECT_EQ(s.stop_reason, "converged");
  EXPECT_GE(elapsed, 15);
  // At 0.2 ms or more per sample, fewer than 75 samples cannot fill 15 ms.
  EXPECT_LE(s.total_ms.size(), 76u);
  EXPECT_GT(s.total_ms.size(), 2u);
}

TEST(Sample, ConvergenceReadsTheDeviceFigureWhenPresent) {
  // Host times alternate 0 and ~2 ms (cv near 1) while device times are constant: the loop
  // converges because the device figure is the primary one.
  MeasureConfig c = unbounded();
  c.min_iters = 6;
  c.min_time_ms = 0;
  c.max_iters = 200;
  FakeDeviceTimer timer({1.0});
  int runs = 0;
  Workload w;
  w.run = [&] {
    if (++runs % 2) std::this_thread::sleep_for(milliseconds(2));
  };
  w.device_timer = &timer;
  const Samples s = sample(c, w);
  EXPECT_EQ(s.stop_reason, "converged");
  EXPECT_EQ(s.total_ms.size(), 6u);
}

TEST(Sample, NoisyDeviceFigureDoesNotConverge) {
  // Constant-ish host, device times alternating 1 and 3 ms (cv 0.7): never converges.
  MeasureConfig c = unbounded();
  c.min_iters = 4;
  c.min_time_ms = 0;
  c.max_iters = 60;
  FakeDeviceTimer timer({1.0, 3.0});
  Workload w;
  w.run = [] {};
  w.device_timer = &timer;
  const Samples s = sample(c, w);
  EXPECT_EQ(s.stop_reason, "max_iters");
  ASSERT_EQ(s.device_ms.size(), 60u);
  for (std::size_t i = 0; i < s.device_ms.size(); ++i)
    EXPECT_EQ(s.device_ms[i], i % 2 ? 3.0 : 1.0) << "sample " << i;
}

TEST(Sample, DeviceSamplesOnlyWithDeviceTimer) {
  MeasureConfig c = unbounded();
  c.max_iters = 5;
  Workload w;
  w.run = [] {};
  const Samples without = sample(c, w);
  EXPECT_TRUE(without.device_ms.empty());
  EXPECT_EQ(without.total_ms.size(), 5u);

  FakeDeviceTimer timer({1.5, 2.5, 3.5});
  w.device_timer = &timer;
  const Samples with = sample(c, w);
  EXPECT_EQ(with.device_ms, (std::vector<double>{1.5, 2.5, 3.5, 1.5, 2.5}));
}

TEST(Sample, DeviceTimerBracketsRun) {
  MeasureConfig c = unbounded();
  c.warmup_iters = 1;
  c.max_iters = 2;
  std::vector<std::string> log;
  FakeDeviceTimer timer({1.0}, &log);
  Workload w;
  w.run = [&] { log.push_back("run"); };
  w.sync = [&] { log.push_back("sync"); };
  w.device_timer = &timer;
  sample(c, w);
  // Warm-up run untimed; then per sample: markers around run, and the device time is read
  // only after the stop marker.
  const std::vector<std::string> want = {"run",     "sync",  "start", "run",  "stop", "sync",
                                         "elapsed", "start", "run",   "stop", "sync", "elapsed"};
  EXPECT_EQ(log, want);
}

TEST(Sample, HostTimeExcludesSyncAndCpuTimeExcludesSleep) {
  MeasureConfig c = unbounded();
  c.max_iters = 5;
  Workload w;
  w.run = [] { std::this_thread::sleep_for(milliseconds(1)); };
  w.sync = [] { std::this_thread::sleep_for(milliseconds(2)); };
  const Samples s = sample(c, w);
  ASSERT_EQ(s.total_ms.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_GE(s.host_ms[i], 1.0);
    EXPECT_GE(s.total_ms[i], 3.0);
    EXPECT_GE(s.total_ms[i] - s.host_ms[i], 2.0);  // sync is in total, not in host
    // Sleeping takes no CPU time of the thread.
    EXPECT_LT(s.thread_cpu_ms[i], 1.5);
  }
  expect_consistent(s);
}

TEST(Measure, SummarizesSamplesWithDevice) {
  MeasureConfig c = unbounded();
  c.warmup_iters = 2;
  c.max_iters = 8;
  FakeDeviceTimer timer({2.0, 4.0});
  Workload w;
  w.run = [] {};
  w.device_timer = &timer;
  const Measurement m = measure(c, w);
  EXPECT_TRUE(m.has_device);
  EXPECT_EQ(m.stop_reason, "max_iters");
  EXPECT_EQ(m.device.samples, 8u);
  EXPECT_DOUBLE_EQ(m.device.median, 3.0);
  EXPECT_DOUBLE_EQ(m.device.min, 2.0);
  EXPECT_DOUBLE_EQ(m.device.max, 4.0);
  EXPECT_EQ(m.total.samples, 8u);
  EXPECT_EQ(m.host.samples, 8u);
  EXPECT_EQ(m.thread_cpu.samples, 8u);
  EXPECT_LE(m.host.min, m.total.max);
  EXPECT_GE(m.elapsed_ms, 0);
}

TEST(Measure, NoDeviceWithoutTimer) {
  MeasureConfig c = unbounded();
  c.max_iters = 3;
  Workload w;
  w.run = [] {};
  const Measurement m = measure(c, w);
  EXPECT_FALSE(m.has_device);
  EXPECT_EQ(m.device.samples, 0u);
  EXPECT_EQ(m.total.samples, 3u);
}

TEST(Measure, ElapsedExcludesWarmup) {
  MeasureConfig c = unbounded();
  c.warmup_iters = 3;
  c.max_iters = 3;
  int runs = 0;
  Workload w;
  w.run = [&] {
    if (++runs <= 3) std::this_thread::sleep_for(milliseconds(30));
  };
  const Measurement m = measure(c, w);
  EXPECT_EQ(runs, 6);
  EXPECT_LT(m.elapsed_ms, 60);  // the 90 ms of warm-up are not in the sampling phase
}

TEST(Sample, RunsPerCallDividesEveryFigure) {
  MeasureConfig c = unbounded();
  c.max_iters = 4;
  FakeDeviceTimer timer({10.0});
  Workload w;
  w.run = [] { std::this_thread::sleep_for(milliseconds(2)); };
  w.device_timer = &timer;
  w.runs_per_call = 5;
  const Samples s = sample(c, w);
  ASSERT_EQ(s.device_ms.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(s.device_ms[i], 2.0);  // 10 ms for 5 calls
    EXPECT_GE(s.host_ms[i], 2.0 / 5);
    EXPECT_LT(s.host_ms[i], 2.0);  // a 2 ms sleep over 5 calls, not per call
  }
}

TEST(Sample, RejectsRunsPerCallBelowOne) {
  MeasureConfig c = unbounded();
  Workload w;
  w.run = [] {};
  w.runs_per_call = 0;
  EXPECT_THROW(sample(c, w), std::runtime_error);
}

TEST(Sample, BeforeSampleRunsUntimedBeforeEverySampleAndAfterWarmupOnce) {
  MeasureConfig c = unbounded();
  c.warmup_iters = 2;
  c.max_iters = 3;
  std::vector<std::string> log;
  Workload w;
  w.run = [&] { log.push_back("run"); };
  w.before_sample = [&] {
    log.push_back("flush");
    std::this_thread::sleep_for(milliseconds(20));
  };
  w.after_warmup = [&] { log.push_back("warm"); };
  const Samples s = sample(c, w);
  const std::vector<std::string> expected = {"run",   "run", "warm",  "flush", "run",
                                             "flush", "run", "flush", "run"};
  EXPECT_EQ(log, expected);
  for (double t : s.total_ms) EXPECT_LT(t, 20.0) << "the flush was timed";
}

}  // namespace
}  // namespace bench
