// Our own CUDA backend: im2col + GEMM convolution with our kernels
// (conv/cuda/im2col_gemm_kernels.cu). Declared unconditionally; defined only when CUDA was found,
// and called only under MYCONV_HAVE_CUDA in experiments/registry/conv.cpp.
#pragma once

#include <memory>

#include "conv/backend.hpp"

namespace conv {

// options.variant selects the kernel variant: FP32 on CUDA cores "1" (im2col + GEMM), "2"
// (implicit GEMM), "3" (implicit GEMM with precomputed rows); TF32/FP16/BF16 on tensor cores "4"
// (implicit GEMM), "5" (im2col + GEMM) and "6" (nhwc repack + implicit GEMM); any dtype "7"
// (direct small-OC kernel) and "8" (direct depthwise kernel); "9" to "13", the sub-variants and
// the auto (the default, "") and search settings: conv/cuda/variant_choice.hpp, which lists
// auto's rules in order. A variant that cannot run the problem (its dtype, or variant 8 a
// problem that is not depthwise) answers Support::no with the reason. Throws bench::UsageError
// for any other value.
std::unique_ptr<Backend> make_im2col_gemm_cuda_backend(const BackendOptions& options);

}  // namespace conv
