// Robust summary statistics of timing samples.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace bench {

// Outlier rule: Tukey's fences. A sample outside [Q1 - 1.5*IQR, Q3 + 1.5*IQR] (quartiles by
// linear interpolation over all samples) is rejected; every statistic below is computed over the
// kept samples only. Fewer than 4 samples: nothing is rejected.
inline constexpr const char* kOutlierRule = "tukey_1.5iqr";

struct Summary {
  double min = 0, median = 0, mean = 0, p10 = 0, p90 = 0, max = 0;
  double stddev = 0;         // sample standard deviation (n-1); 0 for a single sample
  double cv = 0;             // stddev / mean; 0 when mean is 0
  std::size_t samples = 0;   // samples taken, outliers included
  std::size_t outliers = 0;  // samples rejected by kOutlierRule
};

// Summarizes samples (any unit; the caller names it). An empty input gives an all-zero Summary.
Summary summarize(std::vector<double> samples);

// Quantile q in [0, 1] of sorted values by linear interpolation between closest ranks.
double quantile_sorted(const std::vector<double>& sorted, double q);

}  // namespace bench
