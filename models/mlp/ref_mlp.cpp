#include "models/mlp/ref_mlp.hpp"

#include <torch/cuda.h>
#include <torch/nn/functional/linear.h>
#include <torch/types.h>
#include <torch/version.h>

#include <stdexcept>

namespace mlp {

Reference reference(const MlpProblem& p, const MlpData& data, Gelu gelu) {
  const bool on_cuda = p.flops() > kCpuReferenceFlop && torch::cuda::is_available();
  const at::Device device = on_cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  const auto f64 = at::TensorOptions().dtype(at::kDouble).device(device);
  const c10::AutoGradMode grad_on(true);  // also when a caller runs in inference mode
  try {
    auto to_tensor = [&](const std::vector<float>& v, std::vector<std::int64_t> shape) {
      return torch::from_blob(const_cast<float*>(v.data()), shape, at::kFloat)
          .to(f64, /*non_blocking=*/false, /*copy=*/true);
    };
    const at::Tensor x = to_tensor(data.x, {p.batch_size, p.dim});
    std::vector<at::Tensor> params;
    for (std::int64_t l = 0; l < p.num_layers; ++l) {
      params.push_back(to_tensor(data.weight[l], {p.dim, p.dim}).requires_grad_(true));
      params.push_back(to_tensor(data.bias[l], {p.dim}).requires_grad_(true));
    }
    Reference ref;
    for (std::int64_t s = 0; s < p.num_steps; ++s) {
      at::Tensor y = x;
      for (std::int64_t l = 0; l < p.num_layers; ++l) {
        y = torch::nn::functional::linear(y, params[2 * l], params[2 * l + 1]);
        y = torch::gelu(y, gelu == Gelu::erf ? "none" : "tanh");
      }
      const at::Tensor loss = y.mean();
      loss.backward();
      ref.loss = loss.item<double>();
      ref.loss_scale = y.detach().abs().mean().item<double>();
    }
    for (const auto& t : params) {
      const at::Tensor g = t.grad().to(at::kCPU).contiguous();
      ref.gradients.emplace_back(g.data_ptr<double>(), g.data_ptr<double>() + g.numel());
    }
    ref.how = std::string("float64 LibTorch ") + TORCH_VERSION + " on " +
              (on_cuda ? "cuda" : "cpu") + ", GeLU " + to_string(gelu);
    return ref;
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw std::runtime_error("float64 reference: " + what.substr(0, what.find('\n')));
  }
}

}  // namespace mlp
