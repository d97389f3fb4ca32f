// The float64 reference of every op: the naive loops, each product, sum and function in double,
// over row-major contiguous tensors. Independent of every backend (no library is called).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "ops/data.hpp"

namespace ops {
namespace {

constexpr double kNormEps = 1e-5;  // layernorm and rmsnorm (ops/problem.hpp)

std::vector<std::int64_t> strides_of(const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> s(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

double activation(Op op, double x) {
  switch (op) {
    case Op::relu:
      return x > 0 ? x : 0;
    case Op::sigmoid:
      return 1 / (1 + std::exp(-x));
    case Op::tanh:
      return std::tanh(x);
    case Op::gelu_erf:
      return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case Op::gelu_tanh: {
      const double c = std::sqrt(2.0 / 3.14159265358979323846);
      return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x)));
    }
    case Op::silu:
      return x / (1 + std::exp(-x));
    default:
      throw std::logic_error("not an activation");
  }
}

double binary(Op op, double a, double b) {
  switch (op) {
    case Op::add:
      return a + b;
    case Op::sub:
      return a - b;
    case Op::mul:
      return a * b;
    case Op::div:
      return a / b;
    default:
      throw std::logic_error("not an element op");
  }
}

}  // namespace

std::vector<double> reference(const Problem& p, const std::vector<std::vector<float>>& in) {
  std::vector<double> out(static_cast<std::size_t>(p.output_elements()));
  const std::vector<std::int64_t>& shape = p.shape;
  switch (p.category()) {
    case Category::element: {
      // The second operand's index: its strides, 0 along a broadcast dimension.
      const std::vector<std::int64_t> rshape = p.rhs_shape(), rstride = strides_of(rshape),
                                      stride = strides_of(shape);
      for (std::size_t i = 0; i < out.size(); ++i) {
        std::int64_t rest = std::int64_t(i), j = 0;
        for (std::size_t d = 0; d < shape.size(); ++d) {
          const std::int64_t coord = rest / stride[d];
          rest %= stride[d];
          if (rshape[d] != 1) j += coord * rstride[d];
        }
        out[i] = binary(p.op, in[0][i], in[1][std::size_t(j)]);
      }
      break;
    }
    case Category::activation:
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = activation(p.op, in[0][i]);
      break;
    case Category::reduction: {
      const std::vector<std::int64_t> stride = strides_of(shape);
      const std::vector<std::int64_t> oshape = p.output_shape(), ostride = strides_of(oshape);
      std::fill(out.begin(), out.end(),
                p.op == Op::max ? -std::numeric_limits<double>::infinity() : 0.0);
      const std::int64_t n = p.input_elements();
      for (std::int64_t i = 0; i < n; ++i) {
        std::int64_t rest = i, o = 0;
        std::size_t od = 0;
        for (std::size_t d = 0; d < shape.size(); ++d) {
          const std::int64_t coord = rest / stride[d];
          rest %= stride[d];
          const bool reduced =
              p.axes.empty() || std::find(p.axes.begin(), p.axes.end(), int(d)) != p.axes.end();
          if (!reduced) o += coord * ostride[od++];
        }
        const double v = in[0][std::size_t(i)];
        out[std::size_t(o)] =
            p.op == Op::max ? std::max(out[std::size_t(o)], v) : out[std::size_t(o)] + v;
      }
      if (p.op == Op::mean) {
        const double count = double(n) / double(out.size());
        for (double& v : out) v /= count;
      }
      break;
    }
    case Category::normalization: {
      const std::int64_t cols = shape.back(), rows = p.input_elements() / cols;
      for (std::int64_t r = 0; r < rows; ++r) {
        const float* x = in[0].data() + r * cols;
        double* y = out.data() + r * cols;
        if (p.op == Op::softmax) {
          const double mx = *std::max_element(x, x + cols);
          double sum = 0;
          for (std::int64_t c = 0; c < cols; ++c) sum += y[c] = std::exp(x[c] - mx);
          for (std::int64_t c = 0; c < cols; ++c) y[c] /= sum;
        } else if (p.op == Op::layernorm) {
          double mean = 0, var = 0;
          for (std::int64_t c = 0; c < cols; ++c) mean += x[c];
          mean /= double(cols);
          for (std::int64_t c = 0; c < cols; ++c) var += (x[c] - mean) * (x[c] - mean);
          const double inv = 1 / std::sqrt(var / double(cols) + kNormEps);
          for (std::int64_t c = 0; c < cols; ++c)
            y[c] =
                (x[c] - mean) * inv * double(in[1][std::size_t(c)]) + double(in[2][std::size_t(c)]);
        } else {  // rmsnorm
          double ms = 0;
          for (std::int64_t c = 0; c < cols; ++c) ms += double(x[c]) * x[c];
          const double inv = 1 / std::sqrt(ms / double(cols) + kNormEps);
          for (std::int64_t c = 0; c < cols; ++c) y[c] = x[c] * inv * double(in[1][std::size_t(c)]);
        }
      }
      break;
    }
    case Category::matmul:
      for (std::int64_t b = 0; b < p.b; ++b) {
        const float* a = in[0].data() + b * p.m * p.k;
        const float* w = in[1].data() + b * p.k * p.n;
        for (std::int64_t i = 0; i < p.m; ++i) {  // row by row, B read along its rows
          double* row = out.data() + (b * p.m + i) * p.n;
          for (std::int64_t l = 0; l < p.k; ++l) {
            const double ail = a[i * p.k + l];
            const float* wl = w + l * p.n;
            for (std::int64_t j = 0; j < p.n; ++j) row[j] += ail * wl[j];
          }
        }
      }
      break;
    case Category::memory: {
      if (p.op == Op::copy) {
        std::copy(in[0].begin(), in[0].end(), out.begin());
        break;
      }
      if (p.op == Op::concat) {
        // Blocks of the inputs' extents from `axis` on, taken from each input in turn.
        const std::int64_t inner = std::accumulate(shape.begin() + p.axis, shape.end(),
                                                   std::int64_t(1), std::multiplies<>());
        const std::int64_t outer = p.input_elements() / inner;
        std::size_t o = 0;
        for (std::int64_t r = 0; r < outer; ++r)
          for (int t = 0; t < p.inputs; ++t)
            for (std::int64_t c = 0; c < inner; ++c)
              out[o++] = in[std::size_t(t)][std::size_t(r * inner + c)];
        break;
      }
      // transpose (the last two axes) and permute: output axis i reads input axis perm[i].
      std::vector<int> perm = p.perm;
      if (p.op == Op::transpose) {
        perm.resize(shape.size());
        std::iota(perm.begin(), perm.end(), 0);
        std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
      }
      const std::vector<std::int64_t> istride = strides_of(shape), oshape = p.output_shape(),
                                      ostride = strides_of(oshape);
      for (std::size_t o = 0; o < out.size(); ++o) {
        std::int64_t rest = std::int64_t(o), i = 0;
        for (std::size_t d = 0; d < oshape.size(); ++d) {
          const std::int64_t coord = rest / ostride[d];
          rest %= ostride[d];
          i += coord * istride[std::size_t(perm[d])];
        }
        out[o] = in[0][std::size_t(i)];
      }
      break;
    }
  }
  return out;
}

std::vector<double> matmul_reference_at(const Problem& p, const std::vector<std::vector<float>>& in,
                                        const std::vector<std::int64_t>& elements) {
  if (p.op != Op::matmul) throw std::logic_error("matmul_reference_at: not a matmul");
  std::vector<double> out;
  out.reserve(elements.size());
  for (std::int64_t e : elements) {
    const std::int64_t b = e / (p.m * p.n), i = e / p.n % p.m, j = e % p.n;
    const float* a = in[0].data() + (b * p.m + i) * p.k;
    const float* w = in[1].data() + b * p.k * p.n + j;
    double acc = 0;
    for (std::int64_t l = 0; l < p.k; ++l) acc += double(a[l]) * w[l * p.n];
    out.push_back(acc);
  }
  return out;
}

}  // namespace ops
