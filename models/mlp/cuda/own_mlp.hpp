// The MLP suite's own_cuda backend (own_mlp.cpp): run_mlp's step on our GEMM engine
// (core/cuda/gemm/) with its fused epilogues, replayed as one CUDA graph: bf16 on the Hopper
// tensor-core path, fp32 on the strict-FP32 SGEMMs (own_mlp_sgemm.cpp).
#pragma once

#include <memory>

#include "models/mlp/backend.hpp"

namespace mlp {

std::unique_ptr<Backend> make_own_cuda_backend();

}  // namespace mlp
