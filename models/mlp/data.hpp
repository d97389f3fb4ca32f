// Host data of one MLP case: the input and every layer's weight and bias, random and deterministic
// (the core's generator, seeded by the user's seed and the problem's sizes, never zeros), rounded
// to the problem's dtype; the float64 reference's results (ref_mlp.hpp computes them); and the
// gradient check that compares an implementation's loss and gradients with them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/compare.hpp"
#include "core/memory_fit.hpp"
#include "models/mlp/problem.hpp"

namespace mlp {

// The GeLU an implementation computes: erf, PyTorch's default (the lecture's
// torch.nn.functional.gelu), or tanh, the approximation cuBLASLt's GELU epilogues compute. The
// reference of a case uses the implementation's own form.
enum class Gelu { erf, tanh };
std::string to_string(Gelu g);

struct MlpData {
  std::vector<float> x;                    // [batch_size][dim]
  std::vector<std::vector<float>> weight;  // per layer, [out = dim][in = dim] (torch::nn::Linear)
  std::vector<std::vector<float>> bias;    // per layer, [dim]
};

// Values of x uniform in [-1, 1); weights and biases uniform in [-1/sqrt(dim), 1/sqrt(dim)), the
// bound of torch::nn::Linear's default initialization, so that activations keep their scale over
// the layers. The seed mixes the user's seed with dim, num_layers and batch_size (not num_steps or
// dtype): every dtype and step count sees the same values, rounded to the dtype.
MlpData make_data(const MlpProblem& p, std::uint64_t user_seed);

// Parameter names in gradient order: layers.0.weight, layers.0.bias, layers.1.weight, ...
std::vector<std::string> parameter_names(const MlpProblem& p);

// The float64 reference of one call: the last step's loss and every parameter's gradient
// accumulated over the call's steps, in parameter order.
struct Reference {
  double loss = 0;
  // mean(|output|) of the last step: the loss (a mean of signed values) is judged relative to it,
  // since the mean of outputs of both signs may cancel far below their size.
  double loss_scale = 0;
  std::vector<std::vector<double>> gradients;
  std::string how;  // e.g. "float64 LibTorch 1.13.0 on cpu, GeLU erf"
};

// Relative L2 error allowed for the loss and for each parameter's gradient: k(dtype) x
// sqrt(num_layers), k = 2.5e-6 (fp32), 5e-4 (tf32), 5e-3 (bf16): 1e-5, 2e-3 and 2e-2 at the
// lecture's 16 layers. Why: a GEMM of random operands has a relative error of the order of its
// operands' rounding u (fp32 6e-8; tf32 4.9e-4 on the operands; bf16 3.9e-3 on every stored
// activation and gradient), and a gradient passes through up to num_layers of them, whose
// independent errors add in quadrature; k is about 40 u for fp32 (different summation orders, erf
// vs its float form) and about u for tf32 and bf16 (several roundings per layer).
double gradient_tolerance(const MlpProblem& p);

struct GradientCheck {
  bench::Correctness correctness;  // rel_l2_err: the worst parameter's; elements: all gradients
  nlohmann::ordered_json detail;   // loss, loss_rel_err, worst parameter, per-parameter errors
};

// Compares the implementation's loss and gradients with the reference: each parameter's relative
// L2 error (||g - ref||_2 / ||ref||_2) and the loss's relative error must be within
// gradient_tolerance(p); NaN/Inf anywhere fails. correctness.mismatches counts the parameters that
// failed; first_mismatches the worst elements of the worst parameter.
GradientCheck check_gradients(const MlpProblem& p, double loss,
                              const std::vector<std::vector<float>>& gradients,
                              const Reference& ref);

// The square matmul case's inputs, A and B (n x n, row-major), uniform in [-1, 1) rounded to
// the dtype; and the float64 reference at kMatmulCheckElements sampled elements of C (the first
// and the last among them): a full one of 16384^3 would take hours.
struct MatmulData {
  std::vector<float> a, b;
  std::vector<std::int64_t> check_index;
  std::vector<double> check_ref;
};
inline constexpr std::size_t kMatmulCheckElements = 64;
MatmulData make_matmul_data(const MatmulProblem& p, std::uint64_t user_seed);

// The memory one case needs at least (core/memory_fit.hpp), counted from the problem:
//   MLP, P = num_layers x (dim^2 + dim) parameters, A = batch_size x dim x num_layers activations:
//     host: the inputs and parameters (float), the float64 reference's parameters, gradients and
//     activations (3 per layer: the Linear's output, the GeLU's, the gradient), the gradients
//     read back (float); on the CPU (on_gpu false) also the implementation's parameters,
//     gradients and activations in float;
//     device (on_gpu): parameters, gradients and 3 activations per layer in the dtype.
//   matmul: host A and B (float) and C read back; device A, B and C in the dtype.
bench::MemoryNeed memory_need(const Problem& p, bool on_gpu);

// The tolerance of a sampled C element: the core's dot-product rule for length n.
bench::Tolerance matmul_tolerance(const MatmulProblem& p, double ref_rms);

}  // namespace mlp
