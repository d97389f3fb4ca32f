// Our kernels of the MLP step that are not GEMMs (step_kernels.cu): the cuBLASLt step
// (baselines/mlp/cublaslt_fused.cpp) runs the first two between its cuBLASLt calls, our own step
// (own_mlp.cpp) all but add_to between its GEMMs on the engine.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace mlp::cuda {

// *out = sum of x[0..n) (fp32 or bf16 elements), accumulated in fp32; out zeroed first.
void sum_to(const void* x, bool bf16, std::int64_t n, float* out, cudaStream_t s);
// dst[i] += src[i] for i < n (fp32 or bf16 elements, the sum in fp32).
void add_to(void* dst, const void* src, bool bf16, std::int64_t n, cudaStream_t s);

// The gradient of the loss (the mean of gelu(z) over its rows x cols elements) at the last
// layer's pre-activation z [rows][cols] (fp32 or bf16 elements): dz = gelu'(z) / (rows x cols)
// (GeLU erf), written to dz [rows][cols] and, where dz_t is not null, transposed to dz_t
// [cols][rows]; each column's fp32 sum over the rows added to column_sums[col] (atomically).
void loss_backward(const void* z, bool bf16, std::int64_t rows, std::int64_t cols, void* dz,
                   void* dz_t, float* column_sums, cudaStream_t s);
// dst[i] = bf16(src[i]) for i < n.
void to_bf16(const float* src, void* dst, std::int64_t n, cudaStream_t s);

}  // namespace mlp::cuda
