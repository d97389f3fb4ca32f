// Timers of the benchmark core. The one time unit inside the core is Millis: milliseconds held in
// a double. Every figure a result carries is in milliseconds and says so in its field name.
#pragma once

#include <chrono>

namespace bench {

using Millis = std::chrono::duration<double, std::milli>;

// Monotonic wall clock (std::chrono::steady_clock).
class WallTimer {
 public:
  void start() { start_ = Clock::now(); }
  // Time since start().
  Millis elapsed() const { return Millis(Clock::now() - start_); }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_ = Clock::now();
};

// CPU time consumed by the calling thread (CLOCK_THREAD_CPUTIME_ID): time the thread spent
// running, not waiting. Other threads a library starts are not counted.
class ThreadCpuTimer {
 public:
  void start() { start_ = now(); }
  Millis elapsed() const { return now() - start_; }
  static Millis now();

 private:
  Millis start_ = now();
};

// A timer of device work queued by the host, e.g. CUDA events on a stream. start() and stop()
// enqueue markers around the work and must not wait; elapsed() waits for the stop marker and
// returns the device time between the two markers.
class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  virtual void start() = 0;
  virtual void stop() = 0;
  virtual Millis elapsed() = 0;
};

}  // namespace bench
