#include "models/transformer/cuda/decode_kernels.hpp"

#include <algorithm>

#include "core/cuda/cuda_check.hpp"
#include "models/transformer/cuda/elem.cuh"

namespace transformer::cuda {
namespace {

// One block per (batch row, head of qkv), one thread per element of the head.
template <typename T>
__global__ void rope_write_kv_kernel(T* qkv, T* cache_k, T* cache_v, const float* inv_freq,
                                     const std::int64_t* pos_ptr, int nq, int nkv, int d,
                                     std::int64_t max_len) {
  const int heads = nq + 2 * nkv;
  const int row = blockIdx.x / heads, head = blockIdx.x % heads, i = threadIdx.x;
  const std::int64_t pos = *pos_ptr;
  T* x = qkv + (std::int64_t(row) * heads + head) * d;
  float out = to_f(x[i]);
  if (inv_freq && head < nq + nkv) {  // q or k: rotated
    const int half = d / 2;
    const float xi = out;
    const float partner = to_f(x[i < half ? i + half : i - half]);
    const float rot = i < half ? -partner : partner;  // rotate_half(x)[i]
    const float freq = __fmul_rn(static_cast<float>(pos), inv_freq[i % half]);
    const float c = round_to<T>(cosf(freq)), s = round_to<T>(sinf(freq));
    out = round_to<T>(__fadd_rn(round_to<T>(__fmul_rn(xi, c)), round_to<T>(__fmul_rn(rot, s))));
    __syncthreads();  // every thread has read its partner before any writes
    x[i] = from_f<T>(out);
  }
  if (head < nq) return;
  const bool is_k = head < nq + nkv;
  const int kv_head = is_k ? head - nq : head - nq - nkv;
  T* cache = is_k ? cache_k : cache_v;
  cache[((std::int64_t(row) * nkv + kv_head) * max_len + pos) * d + i] = from_f<T>(out);
}

template <typename T>
__global__ void silu_mul_kernel(const T* gu, T* out, std::int64_t b, std::int64_t inter) {
  const std::int64_t n = b * inter;
  for (std::int64_t k = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; k < n;
       k += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = k / inter, c = k % inter;
    const float g = to_f(gu[r * 2 * inter + c]), u = to_f(gu[r * 2 * inter + inter + c]);
    const float silu = round_to<T>(g / (1.0f + expf(-g)));  // ATen's silu, in float
    out[k] = from_f<T>(silu * u);
  }
}

// A key that orders (value, index) pairs as argmax wants: larger value first, NaN above all,
// then the smaller index.
__device__ unsigned long long argmax_key(float v, std::int64_t i) {
  unsigned int bits = __float_as_uint(v);
  unsigned int ordered = bits & 0x80000000u ? ~bits : bits | 0x80000000u;
  if (v != v) ordered = 0xFFFFFFFFu;
  return (static_cast<unsigned long long>(ordered) << 32) |
         (0xFFFFFFFFu - static_cast<unsigned int>(i));
}

__device__ unsigned long long max_key(unsigned long long a, unsigned long long b) {
  return a > b ? a : b;
}

// Blocks of a row each reduce a slice of it into one atomicMax on the row's key (zeroed before).
template <typename T>
__global__ void argmax_kernel(const T* x, std::int64_t n, unsigned long long* keys) {
  const T* row = x + blockIdx.y * n;
  unsigned long long best = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    best = max_key(best, argmax_key(to_f(row[i]), i));
  for (int o = 16; o > 0; o >>= 1) best = max_key(best, __shfl_down_sync(0xffffffffu, best, o));
  __shared__ unsigned long long warp[32];
  if (threadIdx.x % 32 == 0) warp[threadIdx.x / 32] = best;
  __syncthreads();
  if (threadIdx.x < 32) {
    best = threadIdx.x < blockDim.x / 32 ? warp[threadIdx.x] : 0;
    for (int o = 16; o > 0; o >>= 1) best = max_key(best, __shfl_down_sync(0xffffffffu, best, o));
    if (threadIdx.x == 0) atomicMax(keys + blockIdx.y, best);
  }
}

__global__ void argmax_index_kernel(const unsigned long long* keys, std::int64_t rows,
                                    std::int64_t* out) {
  const std::int64_t r = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (r < rows) out[r] = 0xFFFFFFFFll - static_cast<std::int64_t>(keys[r] & 0xFFFFFFFFull);
}

template <typename F>
void dispatch(Elem e, F&& f) {
  switch (e) {
    case Elem::f32: f(float{}); break;
    case Elem::f16: f(__half{}); break;
    case Elem::bf16: f(__nv_bfloat16{}); break;
  }
}

}  // namespace

void rope_write_kv(void* qkv, void* cache_k, void* cache_v, const float* inv_freq,
                   const std::int64_t* pos, int b, int nq, int nkv, int d, std::int64_t max_len,
                   Elem e, cudaStream_t s) {
  dispatch(e, [&](auto t) {
    using T = decltype(t);
    rope_write_kv_kernel<T><<<b * (nq + 2 * nkv), d, 0, s>>>(
        static_cast<T*>(qkv), static_cast<T*>(cache_k), static_cast<T*>(cache_v), inv_freq, pos,
        nq, nkv, d, max_len);
  });
  CUDA_CHECK(cudaGetLastError());
}

void silu_mul(const void* gu, void* out, std::int64_t b, std::int64_t inter, Elem e,
              cudaStream_t s) {
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((b * inter + 255) / 256, 4096));
  dispatch(e, [&](auto t) {
    using T = decltype(t);
    silu_mul_kernel<T><<<blocks, 256, 0, s>>>(static_cast<const T*>(gu), static_cast<T*>(out), b,
                                              inter);
  });
  CUDA_CHECK(cudaGetLastError());
}

void argmax_rows(const void* x, std::int64_t rows, std::int64_t n, std::int64_t* out,
                 unsigned long long* keys, Elem e, cudaStream_t s) {
  CUDA_CHECK(cudaMemsetAsync(keys, 0, sizeof(unsigned long long) * rows, s));
  // About 8 elements a thread: a vocabulary of 150k spreads over ~70 blocks of 256.
  const auto per_row = static_cast<unsigned>(std::min<std::int64_t>((n + 2047) / 2048, 256));
  dispatch(e, [&](auto t) {
    using T = decltype(t);
    argmax_kernel<T><<<dim3(per_row, static_cast<unsigned>(rows)), 256, 0, s>>>(
        static_cast<const T*>(x), n, keys);
  });
  argmax_index_kernel<<<static_cast<unsigned>((rows + 255) / 256), 256, 0, s>>>(keys, rows, out);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace transformer::cuda
