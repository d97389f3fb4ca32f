#include "ops/data.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "core/random.hpp"

namespace ops {
namespace {

// v in [lo, hi) from uniform [-1, 1), rounded to dt.
std::vector<float> uniform(std::size_t n, std::uint64_t seed, DataType dt, float lo, float hi) {
  std::vector<float> v(n);
  bench::fill_random(v, seed, DataType::fp32);
  for (float& x : v) x = bench::round_to(dt, lo + (x + 1.0f) * 0.5f * (hi - lo));
  return v;
}

std::size_t count(std::int64_t n) {
  return static_cast<std::size_t>(n);
}

}  // namespace

HostData make_host_data(const Problem& p, std::uint64_t user_seed) {
  HostData d;
  const std::uint64_t seed = bench::descriptor_seed(p.str(), user_seed);
  const DataType dt = p.dtype;
  const std::size_t n = count(p.input_elements());
  auto next = [&](std::size_t size, float lo, float hi) {
    d.inputs.push_back(uniform(size, bench::splitmix64(seed + d.inputs.size()), dt, lo, hi));
  };
  switch (p.category()) {
    case Category::element: {
      next(n, -1, 1);
      const std::vector<std::int64_t> rhs = p.rhs_shape();
      const std::size_t m =
          count(std::accumulate(rhs.begin(), rhs.end(), std::int64_t(1), std::multiplies<>()));
      next(m, -1, 1);
      if (p.op == Op::div)  // divisors away from zero: magnitude in [0.5, 1.5)
        for (float& x : d.inputs[1]) x = bench::round_to(dt, (x < 0 ? -0.5f : 0.5f) + x);
      break;
    }
    case Category::activation:
      next(n, -4, 4);  // across every function's bend and into its tails
      break;
    case Category::normalization:
      next(n, -3, 3);
      if (p.op != Op::softmax) next(count(p.shape.back()), 0.5f, 1.5f);  // weight
      if (p.op == Op::layernorm) next(count(p.shape.back()), -1, 1);     // bias
      break;
    case Category::matmul:
      next(count(p.b * p.m * p.k), -1, 1);
      next(count(p.b * p.k * p.n), -1, 1);
      break;
    case Category::memory:
      for (int t = 0; t < (p.op == Op::concat ? p.inputs : 1); ++t) next(n, -1, 1);
      break;
    default:  // reductions
      next(n, -1, 1);
  }
  if (p.op == Op::matmul &&
      double(p.b) * double(p.m) * double(p.n) * double(p.k) > kFullReferenceMacs) {
    const std::int64_t total = p.output_elements();
    std::vector<std::int64_t> picked = {0, total - 1};
    for (std::size_t i = 0; picked.size() < kSampledElements; ++i)
      picked.push_back(
          std::int64_t(bench::splitmix64(seed ^ (0xc0ffeeULL + i)) % std::uint64_t(total)));
    std::sort(picked.begin(), picked.end());
    picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
    d.ref_index = std::move(picked);
    d.ref = matmul_reference_at(p, d.inputs, d.ref_index);
  } else {
    d.ref = reference(p, d.inputs);
  }
  d.ref_rms = bench::rms(d.ref.data(), d.ref.size());
  if (p.op == Op::layernorm || p.op == Op::rmsnorm) {
    const std::size_t cols = count(p.shape.back()), rows = n / cols;
    double w_max = 0;
    for (float w : d.inputs[1]) w_max = std::max(w_max, double(std::fabs(w)));
    for (std::size_t r = 0; r < rows; ++r) {
      const float* x = d.inputs[0].data() + r * cols;
      double mean = 0, sq = 0, x_max = 0;
      for (std::size_t c = 0; c < cols; ++c) {
        mean += x[c];
        sq += double(x[c]) * x[c];
        x_max = std::max(x_max, double(std::fabs(x[c])));
      }
      mean /= double(cols);
      const double second =
          p.op == Op::layernorm ? sq / double(cols) - mean * mean : sq / double(cols);
      d.norm_amplification =
          std::max(d.norm_amplification, x_max * w_max / std::sqrt(std::max(second, 0.0) + 1e-5));
    }
  }
  return d;
}

bench::Tolerance tolerance(const Problem& p, double ref_rms, double norm_amplification) {
  const double u_out = bench::unit_roundoff(p.dtype == DataType::tf32 ? DataType::fp32 : p.dtype);
  const double u32 = bench::unit_roundoff(DataType::fp32);
  switch (p.category()) {
    case Category::element:  // one operation in fp32 (or exact), then the output's rounding
      return {8 * u32 * ref_rms, 8 * u_out};
    case Category::activation:  // a few ulps of fp32 functions (exp, erf, tanh), then rounding
      return {64 * u32 * ref_rms, 8 * u_out};
    case Category::memory:  // data movement: exact
      return {0, 0};
    case Category::reduction:
      if (p.op == Op::max) return {0, 0};  // one of the inputs, exactly
      return bench::dot_tolerance(
          p.dtype, p.input_elements() / std::max<std::int64_t>(p.output_elements(), 1), ref_rms);
    case Category::normalization: {
      bench::Tolerance t = bench::dot_tolerance(p.dtype, p.shape.back(), ref_rms);
      t.atol += 8 * u32 * norm_amplification;  // a few roundings of terms of that size
      return t;
    }
    case Category::matmul:
      return bench::dot_tolerance(p.dtype, p.k, ref_rms);
  }
  return {};
}

bench::MemoryNeed memory_need(const Problem& p, bool on_gpu) {
  double in = 0;
  if (p.op == Op::matmul)
    in = double(p.b) * (double(p.m) * double(p.k) + double(p.k) * double(p.n));
  else
    in = double(p.input_elements()) * (p.op == Op::concat ? p.inputs : 2);
  const double out = double(p.output_elements());
  const bool sampled = p.op == Op::matmul &&
                       double(p.b) * double(p.m) * double(p.n) * double(p.k) > kFullReferenceMacs;
  bench::MemoryNeed need;
  need.host_bytes = 4 * in + 4 * out + (sampled ? 0 : 8 * out);
  if (on_gpu) need.device_bytes = p.bytes();
  return need;
}

bench::Correctness check_output(const Problem& p, const HostData& data, const float* got) {
  const bench::Tolerance tol = tolerance(p, data.ref_rms, data.norm_amplification);
  if (data.ref_index.empty())
    return bench::compare(got, data.ref.data(), static_cast<std::size_t>(p.output_elements()), tol);
  std::vector<float> sampled(data.ref_index.size());
  for (std::size_t i = 0; i < sampled.size(); ++i)
    sampled[i] = got[static_cast<std::size_t>(data.ref_index[i])];
  bench::Correctness c = bench::compare(sampled.data(), data.ref.data(), sampled.size(), tol);
  for (auto& m : c.first_mismatches) m.index = static_cast<std::size_t>(data.ref_index[m.index]);
  return c;
}

}  // namespace ops
