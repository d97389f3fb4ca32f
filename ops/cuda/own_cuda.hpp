// Our CUDA op kernels as a backend (own_cuda): see ops/cuda/*.cu for the kernels and their
// numbered variants.
#pragma once

#include <memory>

#include "ops/backend.hpp"

namespace ops {

// options.variant: "" (the best per op) or a variant number the op has.
std::unique_ptr<Backend> make_own_cuda_backend(const BackendOptions& options);

}  // namespace ops
