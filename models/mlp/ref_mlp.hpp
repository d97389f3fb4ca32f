// The float64 reference of the MLP suite: the lecture's run_mlp in LibTorch with double tensors,
// on the same data (data.hpp), with the GeLU of the implementation checked. Built only with
// LibTorch (MYCONV_HAVE_TORCH).
#pragma once

#include "models/mlp/data.hpp"
#include "models/mlp/problem.hpp"

namespace mlp {

// Problems of more float64 work than this run on a CUDA device when this LibTorch has one (a
// dim-4096 case would take minutes on the host); the rest on the CPU. Reference::how says which.
inline constexpr double kCpuReferenceFlop = 2e10;

// One call of run_mlp in float64: gradients from zero, accumulated over p.num_steps steps; the
// loss of the last step. Throws std::runtime_error on a LibTorch error.
Reference reference(const MlpProblem& p, const MlpData& data, Gelu gelu);

}  // namespace mlp
