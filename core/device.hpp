// Device services the measurement needs beyond a timer: evicting caches between samples, reading
// clocks, and capturing a batch of calls into a replayable graph. The interface is generic; the
// CUDA implementation lives in core/cuda/cuda_services.hpp, so suites and the measurement loop
// stay free of device headers. Host-cache eviction for CPU work is here too.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace bench {

// Clocks of one device at one moment, in MHz. reasons: why the device runs below its maximum,
// as the driver reports them (e.g. "idle", "sw_power_cap", "hw_slowdown"); empty when none.
struct ClockSample {
  double sm_mhz = 0, mem_mhz = 0;
  double sm_max_mhz = 0, mem_max_mhz = 0;
  std::vector<std::string> reasons;
};

// A case counts as throttled when its SM clock, read before or after sampling, fell below this
// fraction of the maximum SM clock.
inline constexpr double kThrottledFraction = 0.75;

// {"sm_mhz_before", "sm_mhz_after", "mem_mhz_before", "mem_mhz_after", "sm_max_mhz",
//  "mem_max_mhz", "reasons_before", "reasons_after"} for the result record.
nlohmann::ordered_json clocks_json(const ClockSample& before, const ClockSample& after);
bool is_throttled(const ClockSample& before, const ClockSample& after);

// A captured batch of device work that can be launched again (a CUDA graph).
class Replay {
 public:
  virtual ~Replay() = default;
  // Enqueues the whole batch on the stream it was captured from; does not wait.
  virtual void launch() = 0;
  // Calls of the captured body the batch holds.
  virtual int calls() const = 0;
};

class DeviceServices {
 public:
  virtual ~DeviceServices() = default;
  // Evicts the device's last-level cache by writing a buffer of cache_flush_bytes() and waits
  // until that is done. Runs outside any timed region.
  virtual void flush_cache() = 0;
  virtual std::size_t cache_flush_bytes() const = 0;
  // Current and maximum clocks of the device the benchmark runs on; nullopt, with the reason in
  // *why, when they cannot be read (no management library, no permission).
  virtual std::optional<ClockSample> clocks(std::string* why) = 0;
  // Captures `calls` calls of body, each enqueuing work on stream, into one replayable batch.
  // Returns null, with the reason in *why, when the work cannot be captured (it synchronizes,
  // allocates, or runs on another stream or context). Never throws for a capture failure.
  virtual std::unique_ptr<Replay> capture(void* stream, const std::function<void()>& body,
                                          int calls, std::string* why) = 0;
};

// Evicts the CPU caches by writing, then reading, a buffer of twice the last-level cache size
// (sysconf, 64 MiB when unknown). For CPU work under --cold-cache.
class HostCacheFlusher {
 public:
  HostCacheFlusher();
  void flush();
  std::size_t bytes() const { return buffer_.size(); }

 private:
  std::vector<unsigned char> buffer_;
  unsigned char sink_ = 0;
};

}  // namespace bench
