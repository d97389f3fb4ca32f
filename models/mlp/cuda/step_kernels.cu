// The MLP step's kernels that are not GEMMs: the sum of the last activation (the loss is its
// mean); the accumulation of a bias gradient of a later step (cuBLASLt's BGRAD epilogue
// overwrites its output); our own step's loss gradient at the last layer (with its transpose and
// column sums, as the engine's dgelu epilogue gives them for the other layers) and the bias
// gradients' conversion from their fp32 sums.
#include <cuda_bf16.h>

#include "core/cuda/cuda_check.hpp"
#include "models/mlp/cuda/step_kernels.hpp"

namespace mlp::cuda {
namespace {

__device__ float load(const float* p, std::int64_t i) {
  return p[i];
}
__device__ float load(const __nv_bfloat16* p, std::int64_t i) {
  return __bfloat162float(p[i]);
}
__device__ void store(float* p, std::int64_t i, float v) {
  p[i] = v;
}
__device__ void store(__nv_bfloat16* p, std::int64_t i, float v) {
  p[i] = __float2bfloat16(v);
}

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

__device__ float gelu_erf_grad(float x) {  // Phi(x) + x phi(x)
  return 0.5f * (1.0f + erff(x * 0.70710678118654752f)) +
         x * 0.39894228040143268f * __expf(-0.5f * x * x);
}

// A block of 32 x 8 threads takes a tile of 32 rows x 32 columns: each thread 4 rows of one
// column (coalesced along the row), the tile through shared memory for the transposed store
// (coalesced along dz_t's rows; none where dz_t is null), and one atomic a column.
constexpr int kTile = 32, kTileRows = 8;
template <typename T>
__global__ void __launch_bounds__(kTile* kTileRows)
    loss_backward_kernel(const T* __restrict__ z, std::int64_t rows, std::int64_t cols, float scale,
                         T* __restrict__ dz, T* __restrict__ dz_t,
                         float* __restrict__ column_sums) {
  __shared__ float tile[kTile][kTile + 1];
  const std::int64_t r0 = std::int64_t(blockIdx.y) * kTile, c0 = std::int64_t(blockIdx.x) * kTile;
  const std::int64_t c = c0 + threadIdx.x;
  float sum = 0;
  for (int i = int(threadIdx.y); i < kTile; i += kTileRows) {
    const std::int64_t r = r0 + i;
    float g = 0;
    if (r < rows && c < cols) {
      g = gelu_erf_grad(load(z, r * cols + c)) * scale;
      store(dz, r * cols + c, g);
    }
    tile[i][threadIdx.x] = g;
    sum += g;
  }
  __syncthreads();
  if (dz_t) {
    for (int i = int(threadIdx.y); i < kTile; i += kTileRows) {
      const std::int64_t cc = c0 + i, r = r0 + threadIdx.x;
      if (cc < cols && r < rows) store(dz_t, cc * rows + r, tile[threadIdx.x][i]);
    }
  }
  __syncthreads();
  tile[threadIdx.y][threadIdx.x] = sum;  // the 8 partial sums of each column
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float s = 0;
    for (int i = 0; i < kTileRows; ++i) s += tile[i][threadIdx.x];
    atomicAdd(column_sums + c, s);
  }
}

__global__ void to_bf16_kernel(const float* src, __nv_bfloat16* dst, std::int64_t n) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] = __float2bfloat16(src[i]);
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

void loss_backward(const void* z, bool bf16, std::int64_t rows, std::int64_t cols, void* dz,
                   void* dz_t, float* column_sums, cudaStream_t s) {
  const dim3 grid(unsigned((cols + kTile - 1) / kTile), unsigned((rows + kTile - 1) / kTile));
  const float scale = float(1.0 / double(rows * cols));
  if (bf16)
    loss_backward_kernel<<<grid, dim3(kTile, kTileRows), 0, s>>>(
        static_cast<const __nv_bfloat16*>(z), rows, cols, scale, static_cast<__nv_bfloat16*>(dz),
        static_cast<__nv_bfloat16*>(dz_t), column_sums);
  else
    loss_backward_kernel<<<grid, dim3(kTile, kTileRows), 0, s>>>(
        static_cast<const float*>(z), rows, cols, scale, static_cast<float*>(dz),
        static_cast<float*>(dz_t), column_sums);
  CUDA_CHECK(cudaGetLastError());
}

void to_bf16(const float* src, void* dst, std::int64_t n, cudaStream_t s) {
  to_bf16_kernel<<<unsigned((n + 255) / 256), 256, 0, s>>>(src, static_cast<__nv_bfloat16*>(dst),
                                                           n);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace mlp::cuda
