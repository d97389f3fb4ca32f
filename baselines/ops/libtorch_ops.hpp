// The op calls both LibTorch op backends (libtorch_cpu.cpp, libtorch_cuda.cpp) make: for each op
// the PyTorch call a user would write (a + b, torch::softmax(x, -1), x.amax(dims), torch::matmul,
// ...), each returning a new tensor as PyTorch code does; the inputs as tensors of the problem's
// dtype; the output back as host floats. Every score of the op suite is against these calls, so
// they are the idioms of PyTorch code, not the fastest formulation we could find.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/types.h>  // torch:: tensors and ATen ops (torch/torch.h adds nn, optim, data, jit)
#include <torch/version.h>

#include "core/torch/libtorch_common.hpp"
#include "ops/data.hpp"
#include "ops/problem.hpp"

// torch.rms_norm came with PyTorch 2.4; before it, RMSNorm is composed of elementary ops.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define MYCONV_TORCH_HAS_RMS_NORM 1
#else
#define MYCONV_TORCH_HAS_RMS_NORM 0
#endif

namespace ops::libtorch {

using bench::libtorch::rethrow;
using bench::libtorch::scalar_type;

constexpr double kNormEps = 1e-5;  // layernorm and rmsnorm (ops/problem.hpp)

// Which RMSNorm runs: the native op where this LibTorch has it, else Hugging Face's composition
// (transformers' Qwen2RMSNorm / LlamaRMSNorm: upcast to fp32, x * rsqrt(mean(x^2) + eps), back to
// the input's dtype, times the weight).
inline const char* rms_norm_form() {
  return MYCONV_TORCH_HAS_RMS_NORM
             ? "native torch::rms_norm (LibTorch >= 2.4)"
             : "composed as in transformers' Qwen2RMSNorm (no torch::rms_norm before LibTorch 2.4)";
}

// Shapes of the input tensors, in HostData::inputs order (ops/data.hpp).
inline std::vector<std::vector<std::int64_t>> input_shapes(const Problem& p) {
  switch (p.category()) {
    case Category::element:
      return {p.shape, p.rhs_shape()};
    case Category::normalization: {
      const std::vector<std::int64_t> cols = {p.shape.back()};
      if (p.op == Op::softmax) return {p.shape};
      if (p.op == Op::rmsnorm) return {p.shape, cols};
      return {p.shape, cols, cols};  // layernorm: weight, bias
    }
    case Category::matmul:
      if (p.b > 1) return {{p.b, p.m, p.k}, {p.b, p.k, p.n}};
      return {{p.m, p.k}, {p.k, p.n}};
    case Category::memory:
      return std::vector<std::vector<std::int64_t>>(
          p.op == Op::concat ? std::size_t(p.inputs) : std::size_t(1), p.shape);
    default:  // activations, reductions
      return {p.shape};
  }
}

// The inputs as new contiguous tensors of the problem's dtype on device (host floats through
// from_blob, converted by ATen). Synchronous for a CPU device; on CUDA, in the current stream.
inline std::vector<at::Tensor> make_inputs(const Problem& p, const HostData& data,
                                           at::Device device) {
  const auto shapes = input_shapes(p);
  if (shapes.size() != data.inputs.size())
    throw std::logic_error("libtorch: " + std::to_string(data.inputs.size()) + " host inputs for " +
                           std::to_string(shapes.size()) + " tensors");
  std::vector<at::Tensor> in;
  const at::TensorOptions options = at::TensorOptions().dtype(scalar_type(p.dtype)).device(device);
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const at::Tensor host =
        torch::from_blob(const_cast<float*>(data.inputs[i].data()), shapes[i], at::kFloat);
    in.push_back(host.to(options, /*non_blocking=*/false, /*copy=*/true));
  }
  return in;
}

// The PyTorch call of p on its inputs: a new output tensor each call.
inline at::Tensor call(const Problem& p, const std::vector<at::Tensor>& in) {
  const at::Tensor& x = in[0];
  const std::vector<std::int64_t> axes(p.axes.begin(), p.axes.end());
  switch (p.op) {
    case Op::add:
      return in[0] + in[1];  // broadcast by the tensors' shapes
    case Op::sub:
      return in[0] - in[1];
    case Op::mul:
      return in[0] * in[1];
    case Op::div:
      return in[0] / in[1];
    case Op::relu:
      return torch::relu(x);
    case Op::sigmoid:
      return torch::sigmoid(x);
    case Op::tanh:
      return torch::tanh(x);
    case Op::gelu_erf:
      return torch::gelu(x);
    case Op::gelu_tanh:
      return torch::gelu(x, "tanh");
    case Op::silu:
      return torch::silu(x);
    case Op::sum:
      return axes.empty() ? x.sum() : x.sum(at::IntArrayRef(axes));
    case Op::mean:
      return axes.empty() ? x.mean() : x.mean(at::IntArrayRef(axes));
    case Op::max:  // amax: the values only (max(dim) also computes the indices)
      return axes.empty() ? x.max() : x.amax(at::IntArrayRef(axes));
    case Op::softmax:
      return torch::softmax(x, -1);
    case Op::layernorm:
      return torch::layer_norm(x, {p.shape.back()}, in[1], in[2], kNormEps);
    case Op::rmsnorm: {
#if MYCONV_TORCH_HAS_RMS_NORM
      return torch::rms_norm(x, {p.shape.back()}, in[1], kNormEps);
#else
      const at::Tensor h = x.to(at::kFloat);  // no copy for fp32
      return in[1] *
             (h * torch::rsqrt(h.pow(2).mean(-1, /*keepdim=*/true) + kNormEps)).to(x.scalar_type());
#endif
    }
    case Op::matmul:
      return torch::matmul(in[0], in[1]);
    case Op::copy:
      return x.clone();
    case Op::transpose:
      return x.transpose(-2, -1).contiguous();
    case Op::permute:
      return x.permute(std::vector<std::int64_t>(p.perm.begin(), p.perm.end())).contiguous();
    case Op::concat:
      return torch::cat(in, p.axis);
  }
  throw std::logic_error("libtorch: unknown op");
}

// The call as PyTorch code, for the result's algorithm field.
inline std::string call_text(const Problem& p) {
  std::string axes;
  for (std::size_t i = 0; i < p.axes.size(); ++i)
    axes += (i ? ", " : "") + std::to_string(p.axes[i]);
  switch (p.op) {
    case Op::add:
      return p.rhs.empty() ? "a + b" : "a + b (broadcast)";
    case Op::sub:
      return p.rhs.empty() ? "a - b" : "a - b (broadcast)";
    case Op::mul:
      return p.rhs.empty() ? "a * b" : "a * b (broadcast)";
    case Op::div:
      return p.rhs.empty() ? "a / b" : "a / b (broadcast)";
    case Op::gelu_erf:
      return "torch.nn.functional.gelu(x)";
    case Op::gelu_tanh:
      return "torch.nn.functional.gelu(x, approximate='tanh')";
    case Op::relu:
    case Op::sigmoid:
    case Op::tanh:
      return "torch." + to_string(p.op) + "(x)";
    case Op::silu:
      return "torch.nn.functional.silu(x)";
    case Op::sum:
    case Op::mean:
      return "x." + to_string(p.op) + "(" + (axes.empty() ? "" : "dim=(" + axes + ")") + ")";
    case Op::max:
      return axes.empty() ? "x.max()" : "x.amax(dim=(" + axes + "))";
    case Op::softmax:
      return "torch.softmax(x, -1)";
    case Op::layernorm:
      return "torch.nn.functional.layer_norm(x, (" + std::to_string(p.shape.back()) +
             ",), w, b, 1e-5)";
    case Op::rmsnorm:
      return MYCONV_TORCH_HAS_RMS_NORM
                 ? "torch.nn.functional.rms_norm(x, (" + std::to_string(p.shape.back()) +
                       ",), w, 1e-5)"
                 : "w * (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype), "
                   "h = x.float()";
    case Op::matmul:
      return "torch.matmul(a, b)";
    case Op::copy:
      return "x.clone()";
    case Op::transpose:
      return "x.transpose(-2, -1).contiguous()";
    case Op::permute: {
      std::string perm;
      for (std::size_t i = 0; i < p.perm.size(); ++i)
        perm += (i ? ", " : "") + std::to_string(p.perm[i]);
      return "x.permute(" + perm + ").contiguous()";
    }
    case Op::concat:
      return "torch.cat([" + std::to_string(p.inputs) + " tensors], " + std::to_string(p.axis) +
             ")";
  }
  return "?";
}

// A tensor of the output's shape and dtype filled with NaN: what read_output sees until the next
// call replaces it.
inline at::Tensor nan_output(const Problem& p, at::Device device) {
  return at::full(p.output_shape(), std::numeric_limits<float>::quiet_NaN(),
                  at::TensorOptions().dtype(scalar_type(p.dtype)).device(device));
}

// Copies the output (any device and dtype) to dst as p.output_elements() floats, row-major; a
// tensor of another shape is an error (the call is not what the problem means).
inline void copy_to_host(const Problem& p, const at::Tensor& t, float* dst) {
  if (t.sizes().vec() != p.output_shape())
    throw std::runtime_error("libtorch: output of shape " + c10::str(t.sizes()) + ", expected " +
                             c10::str(at::IntArrayRef(p.output_shape())));
  const at::Tensor h = t.to(at::kFloat).contiguous().to(at::kCPU);
  std::memcpy(dst, h.data_ptr<float>(), sizeof(float) * static_cast<std::size_t>(h.numel()));
}

}  // namespace ops::libtorch
