// Host data of one op case: deterministic random inputs (never zeros, ranges chosen per op: a
// divisor away from zero, activations across their bends), rounded to the problem's dtype, and
// the float64 reference output (ref_ops.cpp), with the tolerance to judge an output by.
#pragma once

#include <cstdint>
#include <vector>

#include "core/compare.hpp"
#include "core/memory_fit.hpp"
#include "ops/problem.hpp"

namespace ops {

struct HostData {
  // The inputs in their order: element ops a, b; normalizations x, weight (, bias); matmul A
  // [b][m][k], B [b][k][n]; concat its `inputs` tensors; the others x. Row-major, contiguous.
  std::vector<std::vector<float>> inputs;
  // float64 reference output, row-major in output_shape(); or, when ref_index is not empty, the
  // reference of those output elements only (a sampled check, benchdnn's way for large matmuls:
  // kSampledElements of them, the first and the last among them).
  std::vector<double> ref;
  std::vector<std::int64_t> ref_index;
  double ref_rms = 0;
  // layernorm and rmsnorm: the largest, over rows, of max|x| / sqrt(var + eps) (layernorm) or
  // max|x| / sqrt(mean(x^2) + eps) (rmsnorm), times max|weight|: how much a rounding error of the
  // order of |x| is amplified in the output (a row of near-zero variance amplifies it by up to
  // 1/sqrt(eps) = 316). 0 for the other ops.
  double norm_amplification = 0;
};

// Matmuls of more multiply-adds than this get a sampled reference (a full float64 one of 4096^3
// would take minutes).
inline constexpr double kFullReferenceMacs = 1u << 30;
inline constexpr std::size_t kSampledElements = 4096;

HostData make_host_data(const Problem& p, std::uint64_t user_seed);

// The memory one case of p needs at least (core/memory_fit.hpp): on the host its inputs and the
// output read back as float, and the float64 reference (a sampled matmul's is small); on the
// device (on_gpu) its inputs and output in the dtype (bytes()).
bench::MemoryNeed memory_need(const Problem& p, bool on_gpu);

// The float64 reference of the given output elements of a matmul.
std::vector<double> matmul_reference_at(const Problem& p,
                                        const std::vector<std::vector<float>>& inputs,
                                        const std::vector<std::int64_t>& elements);

// The float64 reference of p on inputs (each product, sum and function in double).
std::vector<double> reference(const Problem& p, const std::vector<std::vector<float>>& inputs);

// How far an output may be from the reference: the rounding of the output to the dtype, and for
// sums (reductions, normalizations, matmul) the accumulation over their length in that dtype; for
// layernorm and rmsnorm also fp32 rounding errors of the size of the inputs, amplified by
// norm_amplification (the statistics' cancellation in implementations that compute the variance
// as E[x^2] - E[x]^2, e.g. PyTorch's CPU kernels).
bench::Tolerance tolerance(const Problem& p, double ref_rms, double norm_amplification = 0);

// An output (p.output_elements() values, row-major) against data's reference with p's tolerance:
// every element, or where the reference is sampled (data.ref_index) those elements, the
// mismatches then numbered as output elements.
bench::Correctness check_output(const Problem& p, const HostData& data, const float* got);

}  // namespace ops
