#include "core/peak.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace bench {

nlohmann::ordered_json measure_cpu_copy_bandwidth() {
  const std::size_t n = std::size_t(kCpuCopyArrayMiB) * (1u << 20) / sizeof(double);
  const int threads = std::max(1u, std::thread::hardware_concurrency());
  std::unique_ptr<double[]> a, b;
  try {
    // Not value-initialized: each thread first touches its own part (pages land near it).
    a.reset(new double[n]);
    b.reset(new double[n]);
  } catch (const std::bad_alloc&) {
    return {{"why", "cannot allocate two " + std::to_string(kCpuCopyArrayMiB) + " MiB arrays"}};
  }
  auto parallel = [&](auto&& body) {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const std::size_t lo = n * std::size_t(t) / std::size_t(threads);
        const std::size_t hi = n * std::size_t(t + 1) / std::size_t(threads);
        body(lo, hi);
      });
    for (auto& th : pool) th.join();
  };
  parallel([&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) a[i] = 0, b[i] = double(i);
  });
  double best = 1e300;
  for (int rep = 0; rep < 6; ++rep) {  // the first is the warm-up
    const auto t0 = std::chrono::steady_clock::now();
    parallel([&](std::size_t lo, std::size_t hi) {
      double* __restrict dst = a.get();
      const double* __restrict src = b.get();
      for (std::size_t i = lo; i < hi; ++i) dst[i] = src[i];
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rep > 0) best = std::min(best, s);
  }
  // The copy must be observed, or the loop could be dropped.
  if (a[n / 2] != double(n / 2)) return {{"why", "the copy kernel copied wrongly"}};
  nlohmann::ordered_json j;
  j["measured_copy_gbs"] = 2.0 * double(n) * sizeof(double) / best / 1e9;
  j["threads"] = threads;
  j["array_mib"] = kCpuCopyArrayMiB;
  j["method"] = "STREAM copy a[i] = b[i] of doubles, " + std::to_string(threads) +
                " threads, best of 5 after a warm-up, read + write bytes counted";
  return j;
}

}  // namespace bench
