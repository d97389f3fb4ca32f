#include "models/transformer/decode_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/cuda/cuda_check.hpp"

namespace transformer::cuda {
namespace {

// Element type <-> float, and the rounding to the element type that an ATen op's output does.
__device__ float to_f(float v) { return v; }
__device__ float to_f(__half v) { return __half2float(v); }
__device__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ T from_f(float v);
template <>
__device__ float from_f<float>(float v) { return v; }
template <>
__device__ __half from_f<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <typename T>
__device__ float round_to(float v) { return to_f(from_f<T>(v)); }

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

// One block per row.
template <typename T>
__global__ void argmax_kernel(const T* x, std::int64_t n, std::int64_t* out) {
  const T* row = x + blockIdx.x * n;
  unsigned long long best = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const unsigned long long k = argmax_key(to_f(row[i]), i);
    best = k > best ? k : best;
  }
  for (int o = 16; o > 0; o >>= 1) {
    const unsigned long long other = __shfl_down_sync(0xffffffffu, best, o);
    best = other > best ? other : best;
  }
  __shared__ unsigned long long warp[32];
  if (threadIdx.x % 32 == 0) warp[threadIdx.x / 32] = best;
  __syncthreads();
  if (threadIdx.x < 32) {
    best = threadIdx.x < blockDim.x / 32 ? warp[threadIdx.x] : 0;
    for (int o = 16; o > 0; o >>= 1) {
      const unsigned long long other = __shfl_down_sync(0xffffffffu, best, o);
      best = other > best ? other : best;
    }
    if (threadIdx.x == 0) out[blockIdx.x] = 0xFFFFFFFFll - static_cast<std::int64_t>(best & 0xFFFFFFFFu);
  }
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

void argmax_rows(const void* x, std::int64_t rows, std::int64_t n, std::int64_t* out, Elem e,
                 cudaStream_t s) {
  dispatch(e, [&](auto t) {
    using T = decltype(t);
    argmax_kernel<T><<<static_cast<unsigned>(rows), 1024, 0, s>>>(static_cast<const T*>(x), n,
                                                                  out);
  });
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace transformer::cuda
