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

// What one sample times. run() does one operation (on a device it only enqueues); sync() waits
// until that operation is complete. device_timer, when set, brackets run() on the device.
struct Workload {
  std::function<void()> run;
  std::function<void()> sync = [] {};
  DeviceTimer* device_timer = nullptr;
};

// Raw samples of one measurement, in milliseconds:
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
