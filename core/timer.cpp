#include "core/timer.hpp"

#include <ctime>

namespace bench {

Millis ThreadCpuTimer::now() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return Millis(static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6);
}

}  // namespace bench
