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

// What a pass over the elements gathers, the whole input of the decision (finish_compare): the host
// loop (compare) and the device reduction (core/cuda/compare_cuda.hpp) fill the same fields with
// the same per-element arithmetic; only the order of the two sums differs.
struct CompareSums {
  std::size_t elements = 0;
  double err2 = 0;  // sum of (out - ref)^2 over the finite outputs
  double ref2 = 0;  // sum of ref^2
  double max_abs_err = 0;
  std::size_t mismatches = 0;  // outside atol + rtol*|ref|, non-finite ones included
  std::size_t non_finite = 0;
  bool out_constant = true;  // every out[i] equals out[0] (NaN counts as equal to NaN)
  bool ref_constant = true;
  float first_out = 0;                     // out[0], for the message of a constant output
  std::vector<Mismatch> first_mismatches;  // up to 5, in index order
};

// The decision and its message from the sums: passed, the error figures, mistrusted.
Correctness finish_compare(const CompareSums& sums, const Tolerance& tol);

// An output still in device memory, as a backend stores it: `count` values of `dtype`'s storage
// type (float for fp32 and tf32, the 16-bit patterns for fp16 and bf16) in the problem's layout,
// written by work on `stream` (a cudaStream_t; null: the legacy default stream).
struct DeviceValues {
  const void* data = nullptr;
  DataType dtype = DataType::fp32;
  std::size_t count = 0;
  void* stream = nullptr;
};

// sqrt(mean(ref^2)).
double rms(const double* values, std::size_t n);

}  // namespace bench
