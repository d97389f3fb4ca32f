// Factories of the MLP backends in baselines/mlp/ (one .cpp each, except that the two CUDA
// LibTorch backends share libtorch_cuda.cpp). Declared unconditionally; each is defined only when
// its library was found, and called only under the matching guard in experiments/registry/mlp.cpp.
#pragma once

#include <memory>

#include "models/mlp/backend.hpp"

namespace mlp {

std::unique_ptr<Backend> make_libtorch_eager_cpu_backend();
std::unique_ptr<Backend> make_libtorch_eager_cuda_backend();
std::unique_ptr<Backend> make_libtorch_graph_backend();
std::unique_ptr<Backend> make_cublaslt_fused_backend();

}  // namespace mlp
