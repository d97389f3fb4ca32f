// Factories of the op backends in baselines/ops/ (one .cpp each). Declared unconditionally; each is
// defined only when its library was found, and called only under the matching MYCONV_HAVE_* guard
// in experiments/registry/ops.cpp.
// The LibTorch and oneDNN factories are their loaders' (baselines/libtorch_loader.cpp,
// onednn_loader.cpp): the backends' code lives in a module of its own.
#pragma once

#include <memory>

#include "ops/backend.hpp"

namespace ops {

std::unique_ptr<Backend> make_libtorch_cpu_ops_backend(const BackendOptions& options);
std::unique_ptr<Backend> make_libtorch_cuda_ops_backend(const BackendOptions& options);
std::unique_ptr<Backend> make_onednn_cpu_ops_backend(const BackendOptions& options);
// CUB (reductions, transforms) and cuBLASLt (matmul), both from the CUDA toolkit.
std::unique_ptr<Backend> make_cub_cuda_backend(const BackendOptions& options);
std::unique_ptr<Backend> make_cublaslt_backend(const BackendOptions& options);

}  // namespace ops
