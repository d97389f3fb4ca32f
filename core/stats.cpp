#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace bench {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Summary summarize(std::vector<double> samples) {
  Summary s;
  s.samples = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());

  std::vector<double> kept = samples;
  if (samples.size() >= 4) {
    const double q1 = quantile_sorted(samples, 0.25);
    const double q3 = quantile_sorted(samples, 0.75);
    const double iqr = q3 - q1;
    const double lo = q1 - 1.5 * iqr, hi = q3 + 1.5 * iqr;
    kept.clear();
    for (double v : samples)
      if (v >= lo && v <= hi) kept.push_back(v);
  }
  s.outliers = samples.size() - kept.size();

  const auto n = static_cast<double>(kept.size());
  s.min = kept.front();
  s.max = kept.back();
  s.median = quantile_sorted(kept, 0.5);
  s.p10 = quantile_sorted(kept, 0.1);
  s.p90 = quantile_sorted(kept, 0.9);
  s.mean = std::accumulate(kept.begin(), kept.end(), 0.0) / n;
  if (kept.size() > 1) {
    double ss = 0;
    for (double v : kept) ss += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(ss / (n - 1));
  }
  s.cv = s.mean != 0 ? s.stddev / s.mean : 0;
  return s;
}

}  // namespace bench
