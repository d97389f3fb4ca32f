// Host data of one op case: deterministic random inputs (never zeros, ranges chosen per op: a
// divisor away from zero, activations across their bends), rounded to the problem's dtype, and
// the float64 reference output (ref_ops.cpp), with the tolerance to judge an output by.
#pragma once

#include <cstdint>
#include <vector>

#include "core/compare.hpp"
#include "ops/problem.hpp"

namespace ops {

struct HostData {
  // The inputs in their order: element ops a, b; normalizations x, weight (, bias); matmul A
  // [b][m][k], B [b][k][n]; concat its `inputs` tensors; the others x. Row-major, contiguous.
  std::vector<std::vector<float>> inputs;
  std::vector<double> ref;  // float64 reference output, row-major in output_shape()
  double ref_rms = 0;
};

HostData make_host_data(const Problem& p, std::uint64_t user_seed);

// The float64 reference of p on inputs (each product, sum and function in double).
std::vector<double> reference(const Problem& p, const std::vector<std::vector<float>>& inputs);

// How far an output may be from the reference: the rounding of the output to the dtype, and for
// sums (reductions, normalizations, matmul) the accumulation over their length in that dtype.
bench::Tolerance tolerance(const Problem& p, double ref_rms);

}  // namespace ops
