#include "core/measure.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace bench {

Samples sample(const MeasureConfig& config, const Workload& workload, double* elapsed_ms) {
  BENCH_CHECK(config.max_iters >= 1, "max_iters must be at least 1");
  BENCH_CHECK(workload.runs_per_call >= 1, "runs_per_call must be at least 1");
  const double per_call = 1.0 / workload.runs_per_call;
  for (int i = 0; i < config.warmup_iters; ++i) {
    workload.run();
    workload.sync();
  }
  if (workload.after_warmup) workload.after_warmup();

  Samples s;
  WallTimer phase;
  WallTimer wall;
  ThreadCpuTimer cpu;
  const bool has_device = workload.device_timer != nullptr;
  const auto& primary = has_device ? s.device_ms : s.total_ms;
  // The convergence test sorts the samples, so it runs on a geometric schedule (every ~10% more
  // samples) rather than after every sample.
  // One sample has no spread (its cv is 0 by definition) and proves nothing: at least two.
  int next_convergence_check = std::max(config.min_iters, 2);
  for (;;) {
    if (workload.before_sample) workload.before_sample();
    cpu.start();
    wall.start();
    if (has_device) workload.device_timer->start();
    workload.run();
    if (has_device) workload.device_timer->stop();
    const Millis host = wall.elapsed();
    workload.sync();
    const Millis total = wall.elapsed();
    const Millis thread_cpu = cpu.elapsed();
    s.host_ms.push_back(host.count() * per_call);
    s.total_ms.push_back(total.count() * per_call);
    s.thread_cpu_ms.push_back(thread_cpu.count() * per_call);
    if (has_device) s.device_ms.push_back(workload.device_timer->elapsed().count() * per_call);

    const double elapsed = phase.elapsed().count();
    const auto n = static_cast<int>(s.total_ms.size());
    if (n >= config.max_iters) {
      s.stop_reason = "max_iters";
    } else if (elapsed >= config.max_time_ms && n >= 2) {
      s.stop_reason = "max_time";
    } else if (elapsed >= config.min_time_ms && n >= next_convergence_check) {
      next_convergence_check = n + 1 + n / 10;
      if (summarize(primary).cv <= config.target_cv) s.stop_reason = "converged";
    }
    if (!s.stop_reason.empty()) {
      if (elapsed_ms) *elapsed_ms = elapsed;
      return s;
    }
  }
}

Measurement measure(const MeasureConfig& config, const Workload& workload) {
  Measurement m;
  Samples s = sample(config, workload, &m.elapsed_ms);
  m.host = summarize(s.host_ms);
  m.total = summarize(s.total_ms);
  m.thread_cpu = summarize(s.thread_cpu_ms);
  m.has_device = !s.device_ms.empty();
  if (m.has_device) m.device = summarize(s.device_ms);
  m.stop_reason = s.stop_reason;
  return m;
}

}  // namespace bench
