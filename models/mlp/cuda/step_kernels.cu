// The two small kernels of the cuBLASLt MLP step (baselines/mlp/cublaslt_fused.cpp) that are not
// GEMMs: the sum of the last activation (the loss is its mean) and the accumulation of a bias
// gradient of a later step (the BGRAD epilogue overwrites its output).
#include <cuda_bf16.h>

#include "core/cuda/cuda_check.hpp"
#include "models/mlp/cuda/step_kernels.hpp"

namespace mlp::cuda {
namespace {

__device__ float load(const float* p, std::int64_t i) { return p[i]; }
__device__ float load(const __nv_bfloat16* p, std::int64_t i) { return __bfloat162float(p[i]); }
__device__ void store(float* p, std::int64_t i, float v) { p[i] = v; }
__device__ void store(__nv_bfloat16* p, std::int64_t i, float v) { p[i] = __float2bfloat16(v); }

template <typename T>
__global__ void sum_kernel(const T* x, std::int64_t n, float* out) {
  float s = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    s += load(x, i);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  __shared__ float warp[32];
  if (threadIdx.x % 32 == 0) warp[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < blockDim.x / 32 ? warp[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) atomicAdd(out, s);
  }
}

template <typename T>
__global__ void add_kernel(T* dst, const T* src, std::int64_t n) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i < n) store(dst, i, load(dst, i) + load(src, i));
}

}  // namespace

void sum_to(const void* x, bool bf16, std::int64_t n, float* out, cudaStream_t s) {
  CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float), s));
  const int blocks = static_cast<int>(std::min<std::int64_t>((n + 255) / 256, 1024));
  if (bf16)
    sum_kernel<<<blocks, 256, 0, s>>>(static_cast<const __nv_bfloat16*>(x), n, out);
  else
    sum_kernel<<<blocks, 256, 0, s>>>(static_cast<const float*>(x), n, out);
  CUDA_CHECK(cudaGetLastError());
}

void add_to(void* dst, const void* src, bool bf16, std::int64_t n, cudaStream_t s) {
  const auto blocks = static_cast<unsigned>((n + 255) / 256);
  if (bf16)
    add_kernel<<<blocks, 256, 0, s>>>(static_cast<__nv_bfloat16*>(dst),
                                      static_cast<const __nv_bfloat16*>(src), n);
  else
    add_kernel<<<blocks, 256, 0, s>>>(static_cast<float*>(dst), static_cast<const float*>(src), n);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace mlp::cuda
