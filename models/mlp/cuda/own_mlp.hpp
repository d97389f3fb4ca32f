// The MLP suite's own_cuda backend (own_mlp.cpp): run_mlp's step on our Hopper GEMM engine
// (core/cuda/gemm/) with its fused epilogues, bf16, replayed as one CUDA graph.
#pragma once

#include <memory>

#include "models/mlp/backend.hpp"

namespace mlp {

std::unique_ptr<Backend> make_own_cuda_backend();

}  // namespace mlp
