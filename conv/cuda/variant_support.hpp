// Which of im2col_gemm_cuda's kernel variants (conv/cuda/variant_choice.hpp) run a problem on
// this device: the device's answers that the variant choice needs, and each variant's support
// answer with its reason. Used by the backend (conv/cuda/im2col_gemm_cuda.cpp) for --variant N,
// auto and search. Never throws: a CUDA error while asking the device is the answer.
#pragma once

#include "conv/backend.hpp"
#include "conv/cuda/variant_choice.hpp"

namespace conv {

// Which tensor-core kernel families run on the current device (each asked once per process).
VariantDevice variant_device();

// Whether variant v (variants 8 and 12: sub-variant sub, 0 for the variant's own) runs p here.
Support variant_support(const Problem& p, Variant v, int sub = 0);

}  // namespace conv
