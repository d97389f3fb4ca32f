#include "core/compare.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace bench {

Tolerance dot_tolerance(DataType dt, std::int64_t k, double ref_rms) {
  constexpr double c = 8;
  const double u_acc = 16 * unit_roundoff(DataType::fp32);
  const double u_in = dt == DataType::tf32 ? unit_roundoff(DataType::tf32) : 0;
  const double u_out = unit_roundoff(dt == DataType::tf32 ? DataType::fp32 : dt);
  Tolerance t;
  t.rtol = c * u_out;
  t.atol =
      c * ref_rms * (u_in + std::sqrt(static_cast<double>(std::max<std::int64_t>(k, 1))) * u_acc);
  return t;
}

double rms(const double* values, std::size_t n) {
  if (n == 0) return 0;
  double ss = 0;
  for (std::size_t i = 0; i < n; ++i) ss += values[i] * values[i];
  return std::sqrt(ss / static_cast<double>(n));
}

Correctness compare(const float* out, const double* ref, std::size_t n, const Tolerance& tol) {
  CompareSums s;
  s.elements = n;
  if (n > 0) s.first_out = out[0];
  for (std::size_t i = 0; i < n; ++i) {
    const double got = out[i], expected = ref[i];
    s.ref2 += expected * expected;
    if (i > 0) {
      // Bitwise compare so that NaN (e.g. a poisoned, unwritten buffer) counts as constant too.
      s.out_constant =
          s.out_constant && (out[i] == out[0] || (std::isnan(got) && std::isnan(out[0])));
      s.ref_constant = s.ref_constant && expected == ref[0];
    }
    if (!std::isfinite(got)) {
      ++s.non_finite;
      ++s.mismatches;
      if (s.first_mismatches.size() < 5) s.first_mismatches.push_back({i, got, expected});
      continue;
    }
    const double diff = std::fabs(got - expected);
    s.err2 += diff * diff;
    s.max_abs_err = std::max(s.max_abs_err, diff);
    if (diff > tol.atol + tol.rtol * std::fabs(expected)) {
      ++s.mismatches;
      if (s.first_mismatches.size() < 5) s.first_mismatches.push_back({i, got, expected});
    }
  }
  return finish_compare(s, tol);
}

Correctness finish_compare(const CompareSums& s, const Tolerance& tol) {
  Correctness c;
  c.tolerance = tol;
  c.elements = s.elements;
  c.max_abs_err = s.max_abs_err;
  c.mismatches = s.mismatches;
  c.non_finite = s.non_finite;
  c.first_mismatches = s.first_mismatches;
  const std::size_t n = s.elements;
  c.rel_l2_err = s.ref2 > 0 ? std::sqrt(s.err2 / s.ref2) : std::sqrt(s.err2);
  if (c.non_finite > 0) c.rel_l2_err = INFINITY, c.max_abs_err = INFINITY;
  c.mistrusted = n > 1 && s.out_constant && !s.ref_constant;

  std::ostringstream msg;
  if (n == 0) {
    msg << "no output elements";
  } else if (c.non_finite > 0) {
    msg << c.non_finite << " of " << n << " outputs are NaN or Inf";
  } else if (c.mistrusted) {
    msg << "output is constant (" << s.first_out << ") while the reference is not: mistrusted";
  } else if (c.mismatches > 0) {
    msg << c.mismatches << " of " << n << " outputs outside atol " << tol.atol << " + rtol "
        << tol.rtol << "*|ref|";
  } else {
    msg << "ok";
  }
  c.message = msg.str();
  c.passed = n > 0 && c.mismatches == 0 && !c.mistrusted;
  return c;
}

}  // namespace bench
