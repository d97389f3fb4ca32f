#include "core/device.hpp"

#include <unistd.h>

#include <algorithm>

namespace bench {

nlohmann::ordered_json clocks_json(const ClockSample& before, const ClockSample& after) {
  return {{"sm_mhz_before", before.sm_mhz},   {"sm_mhz_after", after.sm_mhz},
          {"mem_mhz_before", before.mem_mhz}, {"mem_mhz_after", after.mem_mhz},
          {"sm_max_mhz", before.sm_max_mhz},  {"mem_max_mhz", before.mem_max_mhz},
          {"reasons_before", before.reasons}, {"reasons_after", after.reasons}};
}

bool is_throttled(const ClockSample& before, const ClockSample& after) {
  const double max = std::max(before.sm_max_mhz, after.sm_max_mhz);
  if (max <= 0) return false;
  return std::min(before.sm_mhz, after.sm_mhz) < kThrottledFraction * max;
}

static std::size_t last_level_cache_bytes() {
  long size = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
  size = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (size <= 0) size = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  return size > 0 ? static_cast<std::size_t>(size) : std::size_t{32} << 20;
}

HostCacheFlusher::HostCacheFlusher() : buffer_(2 * last_level_cache_bytes()) {}

void HostCacheFlusher::flush() {
  // Write every line, then read every line, so that both dirty and clean copies of the
  // benchmark's data leave the cache hierarchy.
  const std::size_t line = 64;
  for (std::size_t i = 0; i < buffer_.size(); i += line) buffer_[i] = static_cast<unsigned char>(i);
  unsigned char acc = 0;
  for (std::size_t i = 0; i < buffer_.size(); i += line) acc ^= buffer_[i];
  // The sink is a member, so the reads cannot be removed.
  sink_ = static_cast<unsigned char>(sink_ + acc);
}

}  // namespace bench
