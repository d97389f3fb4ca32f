// What the LibTorch MLP backends share (libtorch_eager_cpu.cpp, libtorch_cuda.cpp): the lecture's
// model as a torch::nn::Module (num_layers x Linear(dim, dim) -> GeLU, parameters named
// layers.<i>.weight/bias), loaded with the case's data in the problem's dtype; one step (forward,
// mean loss, backward) with the forward and the backward in named ranges for the profiler; the
// gradients read back; and the square matmul (torch::mm) of --matmul.
#pragma once

#include <ATen/record_function.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/types.h>
#include <torch/utils.h>
#include <torch/version.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/torch/libtorch_common.hpp"
#include "models/mlp/backend.hpp"

namespace mlp::libtorch {

using bench::libtorch::rethrow;
using bench::libtorch::scalar_type;

struct MlpImpl : torch::nn::Module {
  MlpImpl(std::int64_t dim, std::int64_t num_layers) {
    for (std::int64_t l = 0; l < num_layers; ++l) layers->push_back(torch::nn::Linear(dim, dim));
    register_module("layers", layers);
  }
  // The lecture's forward: x = gelu(layer(x)) for every layer (GeLU erf, PyTorch's default).
  at::Tensor forward(at::Tensor x) {
    for (const auto& layer : *layers) x = torch::gelu(layer->as<torch::nn::Linear>()->forward(x));
    return x;
  }
  torch::nn::ModuleList layers;
};
TORCH_MODULE(Mlp);

inline at::Tensor host_tensor(const std::vector<float>& v, std::vector<std::int64_t> shape) {
  return torch::from_blob(const_cast<float*>(v.data()), shape, at::kFloat);
}

// The model with the case's weights, on device, parameters in the problem's dtype (tf32: fp32).
inline Mlp make_model(const MlpProblem& p, const MlpData& data, at::Device device) {
  Mlp model(p.dim, p.num_layers);
  {
    const torch::NoGradGuard no_grad;
    std::int64_t l = 0;
    for (const auto& layer : *model->layers) {
      auto* lin = layer->as<torch::nn::Linear>();
      lin->weight.copy_(host_tensor(data.weight[std::size_t(l)], {p.dim, p.dim}));
      lin->bias.copy_(host_tensor(data.bias[std::size_t(l)], {p.dim}));
      ++l;
    }
  }
  model->to(device, scalar_type(p.dtype));
  return model;
}

inline at::Tensor make_input(const MlpProblem& p, const MlpData& data, at::Device device) {
  return host_tensor(data.x, {p.batch_size, p.dim})
      .to(at::TensorOptions().dtype(scalar_type(p.dtype)).device(device), false, true);
}

// The forward of one step with its loss, in a range named "forward" (the profile's stacks).
inline at::Tensor forward_loss(Mlp& model, const at::Tensor& x) {
  RECORD_USER_SCOPE("forward");
  return model->forward(x).mean();
}

inline void backward(const at::Tensor& loss) {
  RECORD_USER_SCOPE("backward");
  loss.backward();
}

// Gradients to zero (in place, once they exist): each call's result is one call's gradients, so
// it can be checked. The lecture's run_mlp never zeroes them; this adds one small memset per
// parameter.
inline void zero_grads(Mlp& model) {
  for (auto& t : model->parameters())
    if (t.grad().defined()) t.mutable_grad().zero_();
}

inline void poison_grads(Mlp& model) {
  const torch::NoGradGuard no_grad;
  for (auto& t : model->parameters())
    if (t.grad().defined()) t.mutable_grad().fill_(std::numeric_limits<float>::quiet_NaN());
}

inline std::vector<std::vector<float>> read_grads(Mlp& model) {
  std::vector<std::vector<float>> out;
  for (const auto& t : model->parameters()) {
    if (!t.grad().defined()) throw std::runtime_error("libtorch: a parameter has no gradient");
    const at::Tensor g = t.grad().to(at::kCPU).to(at::kFloat).contiguous();
    out.emplace_back(g.data_ptr<float>(), g.data_ptr<float>() + g.numel());
  }
  return out;
}

// C elements at row-major indices, as double.
inline std::vector<double> read_elements(const at::Tensor& c,
                                         const std::vector<std::int64_t>& index) {
  const at::Tensor idx = torch::tensor(index, at::kLong).to(c.device());
  const at::Tensor v = c.reshape({-1}).index_select(0, idx).to(at::kCPU).to(at::kDouble);
  return std::vector<double>(v.data_ptr<double>(), v.data_ptr<double>() + v.numel());
}

inline nlohmann::ordered_json model_extra(const MlpProblem& p) {
  return {{"model", "torch::nn::ModuleList of " + std::to_string(p.num_layers) +
                        " torch::nn::Linear(" + std::to_string(p.dim) + ", " +
                        std::to_string(p.dim) + "), torch::gelu after each (erf)"},
          {"loss", "output.mean()"},
          {"parameters_dtype", bench::to_string(p.dtype == DataType::tf32 ? DataType::fp32
                                                                           : p.dtype)},
          {"master_weights", "none: parameters and gradients in the parameters' dtype"},
          {"gradients", "zeroed in place at the start of each call (run_mlp never zeroes them)"}};
}

}  // namespace mlp::libtorch
