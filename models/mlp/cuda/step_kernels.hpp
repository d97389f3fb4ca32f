// Our kernels of the MLP step that are not GEMMs (step_kernels.cu), used by the cublaslt_fused
// backend (baselines/mlp/cublaslt_fused.cpp) between its cuBLASLt calls.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace mlp::cuda {

// *out = sum of x[0..n) (fp32 or bf16 elements), accumulated in fp32; out zeroed first.
void sum_to(const void* x, bool bf16, std::int64_t n, float* out, cudaStream_t s);
// dst[i] += src[i] for i < n (fp32 or bf16 elements, the sum in fp32).
void add_to(void* dst, const void* src, bool bf16, std::int64_t n, cudaStream_t s);

}  // namespace mlp::cuda
