// Our own CUDA backend: im2col + GEMM convolution with our kernels
// (conv/cuda/im2col_gemm_kernels.cu). Declared unconditionally; defined only when CUDA was found,
// and called only under MYCONV_HAVE_CUDA in conv/registry.cpp.
#pragma once

#include <memory>

#include "conv/backend.hpp"

namespace conv {

// options.variant selects the kernel variant: "1" (im2col + GEMM), "2" (implicit GEMM), "3"
// (implicit GEMM with precomputed rows), "" for the default (the fastest). Throws
// bench::UsageError for any other value.
std::unique_ptr<Backend> make_im2col_gemm_cuda_backend(const BackendOptions& options);

}  // namespace conv
