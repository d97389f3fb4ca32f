// own_cuda's fp32 step (own_mlp_sgemm.cpp): run_mlp's step in strict FP32 on the GEMM engine's
// SGEMMs with their fused epilogues, replayed as one CUDA graph. own_mlp.cpp's backend offers it
// for fp32 problems.
#pragma once

#include <memory>
#include <string>

#include "models/mlp/backend.hpp"

namespace mlp::cuda {

// Empty when the SGEMMs take p's GEMMs on this device (any dim and batch_size; compute
// capability 8.0 or newer), else why not. Never throws.
std::string sgemm_step_unsupported(const MlpProblem& p);

// The step's instance (check sgemm_step_unsupported first); sm_count: the device's SMs.
std::unique_ptr<Instance> make_sgemm_step(const MlpProblem& p, const MlpData& data, int sm_count);

}  // namespace mlp::cuda
