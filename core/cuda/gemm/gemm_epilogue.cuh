// The GEMM engine's epilogue pieces (core/cuda/gemm/gemm_sm90.cu's and gemm_small.cu's kernels;
// sgemm.cu takes the GELU functions): what each FP32 result pair becomes (the epilogue functors:
// identity, and bias, bias + GELU or residual in one functor), and how pairs are converted and
// stored (16-bit pairs gathered by shuffles inside a quad of lanes into 16-byte vectors; FP32
// pairs stored as they are). Device code for the engine's translation units only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/cuda/gemm/gemm.hpp"         // EpilogueKind
#include "core/cuda/gemm/gemm_config.hpp"  // quad_source_lane, quad_send_block

namespace bench::gemm::epilogue {

// ---- Epilogues: what each FP32 result pair (columns j, j + 1 of element index `at`) becomes ----

template <class T>
__device__ __forceinline__ float2 load_pair(const T* p) {  // p: 4-byte aligned
  if constexpr (std::is_same_v<T, __half>)
    return __half22float2(*reinterpret_cast<const __half2*>(p));
  else
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
}
__device__ __forceinline__ float gelu_erf(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
}
__device__ __forceinline__ float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
}

__device__ __forceinline__ float gelu_erf_grad(float x) {  // Phi(x) + x phi(x)
  return 0.5f * (1.0f + erff(x * 0.70710678118654752f)) +
         x * 0.39894228040143268f * __expf(-0.5f * x * x);
}

// kColumnSums: the kernels add each column's FP32 results to column_sums (EpilogueDgelu).
struct EpilogueIdentity {
  static constexpr bool kColumnSums = false;
  __device__ __forceinline__ float2 operator()(std::int64_t, int, float2 v) const { return v; }
};
// Every other epilogue in one kernel per tile, schedule and type: the kind is uniform over the
// grid (a branch per pair that every thread takes alike), so one kernel for the four kinds costs
// a few instructions per pair where four kernels cost four compilations on every build.
template <class T>
__device__ __forceinline__ void store_pair(T* p, float2 v);

template <class T>
struct EpilogueFused {
  static constexpr bool kColumnSums = false;
  EpilogueKind kind;
  const T* bias;      // the bias kinds: n values
  const T* residual;  // residual: C's shape
  T* aux;             // bias_gelu_erf_aux: C's shape, the pre-activation
  __device__ __forceinline__ float2 operator()(std::int64_t at, int j, float2 v) const {
    if (kind == EpilogueKind::identity) return v;  // the small-tile path's identity
    if (kind == EpilogueKind::residual) {
      const float2 r = load_pair(residual + at);
      return make_float2(v.x + r.x, v.y + r.y);
    }
    const float2 b = load_pair(bias + j);
    v = make_float2(v.x + b.x, v.y + b.y);
    if (kind == EpilogueKind::bias_gelu_erf_aux) store_pair(aux + at, v);
    if (kind == EpilogueKind::bias_gelu_erf || kind == EpilogueKind::bias_gelu_erf_aux)
      return make_float2(gelu_erf(v.x), gelu_erf(v.y));
    if (kind == EpilogueKind::bias_gelu_tanh) return make_float2(gelu_tanh(v.x), gelu_tanh(v.y));
    return v;  // bias
  }
};

// dgelu_erf: C = A B * gelu'(aux), the values also to aux_t transposed where given; the kernels
// add the results' column sums (kColumnSums) where column_sums is given.
template <class T>
struct EpilogueDgelu {
  static constexpr bool kColumnSums = true;
  const T* aux;        // C's shape: the pre-activation
  T* aux_t;            // null, or [batch][n][m]
  float* column_sums;  // null, or n values
  std::int64_t m, n;
  __device__ __forceinline__ float2 operator()(std::int64_t at, int j, float2 v) const {
    const float2 z = load_pair(aux + at);
    v = make_float2(v.x * gelu_erf_grad(z.x), v.y * gelu_erf_grad(z.y));
    if (aux_t) {
      const std::int64_t row = at / n, b = row / m, i = row - b * m;
      T* p = aux_t + (b * n + j) * m + i;
      p[0] = T(v.x);
      p[m] = T(v.y);
    }
    return v;
  }
  // Adds s (the FP32 sums of columns j, j + 1 over some rows) to the column sums.
  __device__ __forceinline__ void add_columns(int j, float2 s) const {
    if (!column_sums) return;
    atomicAdd(column_sums + j, s.x);
    atomicAdd(column_sums + j + 1, s.y);
  }
};

template <class T>
__device__ __forceinline__ void store_pair(T* p, float2 v) {  // p: aligned to the pair
  if constexpr (std::is_same_v<T, float>)
    *reinterpret_cast<float2*>(p) = v;
  else if constexpr (std::is_same_v<T, __half>)
    *reinterpret_cast<__half2*>(p) = __floats2half2_rn(v.x, v.y);
  else
    *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(v.x, v.y);
}

// The pair as stored: two values of T in one 32-bit word, the first in the low half.
template <class T>
__device__ __forceinline__ std::uint32_t pack_pair(float2 v) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(v.x, v.y);
    std::uint32_t u;
    memcpy(&u, &h, sizeof u);
    return u;
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(v.x, v.y);
    std::uint32_t u;
    memcpy(&u, &h, sizeof u);
    return u;
  }
}
// Inside each quad of lanes (lane % 4 = q): lane q's v[i] is pair q of column block i; returns
// the four pairs of column block q (pair 0 first). Round r: lane q takes from lane (q + r) % 4 the
// value that lane holds for block q; each lane picks what it sends and where what it gets goes
// by selects, so that v and the result stay in registers.
__device__ __forceinline__ uint4 quad_transpose(const std::uint32_t (&v)[4], int q) {
  std::uint32_t out[4] = {0, 0, 0, 0};
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int send_i = quad_send_block(q, r);  // gemm_config.hpp
    std::uint32_t send = v[0];
    send = send_i == 1 ? v[1] : send;
    send = send_i == 2 ? v[2] : send;
    send = send_i == 3 ? v[3] : send;
    const int from = quad_source_lane(q, r);
    const std::uint32_t got = r == 0 ? send : __shfl_sync(0xFFFFFFFFu, send, from, 4);
#pragma unroll
    for (int p = 0; p < 4; ++p) out[p] = p == from ? got : out[p];
  }
  return make_uint4(out[0], out[1], out[2], out[3]);
}

}  // namespace bench::gemm::epilogue
