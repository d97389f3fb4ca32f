// Checking an output against a float64 reference: per-element tolerance atol + rtol*|ref|,
// NaN/Inf caught, a constant output mistrusted, first mismatches kept for the report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace bench {

struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

// Tolerance of a dot-product-shaped output (conv, matmul) of reduction length k whose reference
// has root-mean-square ref_rms. Let u = unit_roundoff(dt), c = 8 (safety factor):
//   rtol = c * u_out                       rounding of the output to its storage type
//   atol = c * ref_rms * (u_in + sqrt(k) * u_acc)
// u_in is the rounding of operands inside the backend (tf32 only: the harness already rounds
// fp16/bf16 inputs, so the reference sees the very same values), u_acc the fp32 accumulation with
// 16x headroom for reordered sums (Winograd, FFT, split-K). Rounding errors of a sum of k terms
// grow like sqrt(k) times the terms' size (Higham's probabilistic bound); ref_rms / sqrt(k) is that
// size.
Tolerance dot_tolerance(DataType dt, std::int64_t k, double ref_rms);

struct Mismatch {
  std::size_t index = 0;
  double got = 0, expected = 0;
};

struct Correctness {
  bool passed = false;
  double max_abs_err = 0;
  double rel_l2_err = 0;  // ||out - ref||_2 / ||ref||_2
  Tolerance tolerance;
  std::size_t elements = 0;
  std::size_t mismatches = 0;  // elements outside tolerance (non-finite ones included)
  std::size_t non_finite = 0;  // NaN or Inf in the output
  bool mistrusted = false;     // output constant (e.g. all zeros) though the reference is not
  std::vector<Mismatch> first_mismatches;  // up to 5, in index order
  std::string message;                     // one line: why it failed, or "ok"
};

// Compares out[i] with ref[i] for i < n.
Correctness compare(const float* out, const double* ref, std::size_t n, const Tolerance& tol);

// sqrt(mean(ref^2)).
double rms(const double* values, std::size_t n);

}  // namespace bench
