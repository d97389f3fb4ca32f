// The measurement loop every benchmark shares: warm-up, then samples until the figure that
// matters is stable or a time or count bound is reached.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/stats.hpp"
#include "core/timer.hpp"

namespace bench {

struct MeasureConfig {
  int warmup_iters = 3;       // runs before the first sample, not recorded
  int min_iters = 5;          // samples needed before convergence may end the loop (2 at least)
  int max_iters = 10000;      // hard bound on samples
  double min_time_ms = 100;   // sampling time needed before convergence may end the loop
  double max_time_ms = 2000;  // sampling ends past this once 2 samples exist
  double target_cv = 0.02;    // convergence: coefficient of variation of the primary figure
};

// What one sample times. run() does one call (on a device it only enqueues); sync() waits until
// that call's work is complete. device_timer, when set, brackets run() on the device.
// runs_per_call > 1: one run() issues that many operations back to back (a loop, or a replayed
// graph); every figure of the sample is divided by it, so results stay per operation.
// before_sample, when set, runs before each sample outside the timed region (e.g. a cache flush).
struct Workload {
  std::function<void()> run;
  std::function<void()> sync = [] {};
  DeviceTimer* device_timer = nullptr;
  int runs_per_call = 1;
  std::function<void()> before_sample;
  std::function<void()> after_warmup;  // once, after the warm-up runs (e.g. read clocks)
};

// Raw samples of one measurement, in milliseconds per operation:
//  host_ms   wall time inside run() (for device work: the host's launch cost)
//  total_ms  wall time from the call of run() to the end of sync()
//  thread_cpu_ms  CPU time the calling thread spent over run() + sync()
//  device_ms device time between the timer's markers (empty without a device timer)
struct Samples {
  std::vector<double> host_ms, total_ms, thread_cpu_ms, device_ms;
  std::string stop_reason;  // "converged", "max_time" or "max_iters"
};

struct Measurement {
  Summary host, total, thread_cpu;
  bool has_device = false;
  Summary device;
  std::string stop_reason;
  double elapsed_ms = 0;  // wall time of the sampling phase, warm-up excluded
};

// Runs the workload warmup_iters times, then samples it. The convergence test reads the device
// figure when a device timer exists, else the total.
Measurement measure(const MeasureConfig& config, const Workload& workload);

// The sampling part of measure(), returning the raw samples (used by tests and by drivers that
// keep samples).
Samples sample(const MeasureConfig& config, const Workload& workload, double* elapsed_ms = nullptr);

}  // namespace bench
