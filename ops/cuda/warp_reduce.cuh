// Device helpers shared by the reduction and normalization kernels (ops/cuda/reduction.cu,
// normalization.cu): the storage types' conversions to and from float, 16-byte (and narrower)
// vector loads that yield floats, the combining operations (sum, max with NaN propagation), and
// warp / block reductions over __shfl_xor_sync. Everything computes in float. Included only by
// .cu files (it is device code).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/cuda/element.cuh"

namespace ops::cuda::detail {

// ---- Storage types <-> float --------------------------------------------------------------------

using bench::from_float;  // core/cuda/element.cuh
using bench::to_float;

// ---- Vector loads and stores --------------------------------------------------------------------

// The unsigned type of a BYTES-wide load or store.
template <int BYTES>
struct RawVec;
template <>
struct RawVec<16> {
  using type = uint4;
};
template <>
struct RawVec<8> {
  using type = uint2;
};
template <>
struct RawVec<4> {
  using type = unsigned int;
};
template <>
struct RawVec<2> {
  using type = unsigned short;
};

// V neighbouring elements at p (aligned to V * sizeof(T)) as floats, one load through the
// read-only path.
template <typename T, int V>
__device__ __forceinline__ void load_vec(const T* p, float (&out)[V]) {
  using Raw = typename RawVec<int(sizeof(T)) * V>::type;
  const Raw raw = __ldg(reinterpret_cast<const Raw*>(p));
  T v[V];
  memcpy(v, &raw, sizeof(raw));
#pragma unroll
  for (int k = 0; k < V; ++k) out[k] = to_float(v[k]);
}

// V floats rounded to T, stored at p (aligned to V * sizeof(T)) in one store.
template <typename T, int V>
__device__ __forceinline__ void store_vec(T* p, const float (&in)[V]) {
  using Raw = typename RawVec<int(sizeof(T)) * V>::type;
  T v[V];
#pragma unroll
  for (int k = 0; k < V; ++k) v[k] = from_float<T>(in[k]);
  Raw raw;
  memcpy(&raw, v, sizeof(raw));
  *reinterpret_cast<Raw*>(p) = raw;
}

// Elements per 16-byte vector.
template <typename T>
inline constexpr int kVec16 = int(16 / sizeof(T));

// ---- Combining operations -----------------------------------------------------------------------

struct SumOp {
  static __device__ __forceinline__ float identity() { return 0.0f; }
  static __device__ __forceinline__ float combine(float a, float b) { return a + b; }
};

// Max like torch.max: a NaN anywhere gives NaN (fmaxf would drop it); -inf is the identity, so
// the result is always one of the inputs, exactly.
struct MaxOp {
  static __device__ __forceinline__ float identity() { return -INFINITY; }
  static __device__ __forceinline__ float combine(float a, float b) {
    return (a > b || isnan(a)) ? a : b;
  }
};

// ---- Warp and block reductions ------------------------------------------------------------------

// Reduces v over aligned groups of WIDTH lanes (a power of two <= 32) by a butterfly; every lane
// of a group ends with the group's result (the same bits: each step combines the same two values
// on both sides). All 32 lanes must take part.
template <class Op, int WIDTH = 32>
__device__ __forceinline__ float warp_reduce(float v) {
#pragma unroll
  for (int offset = WIDTH / 2; offset > 0; offset /= 2)
    v = Op::combine(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Reduces v over the whole block (BLOCK threads, a multiple of 32) in a fixed order: warps by
// butterfly, then the warps' results in warp order by the first warp. Every thread gets the
// result. `scratch` holds BLOCK / 32 + 1 floats; the function may be called again at once (it
// ends with a barrier that protects scratch).
template <class Op, int BLOCK>
__device__ __forceinline__ float block_reduce(float v, float* scratch) {
  constexpr int kWarps = BLOCK / 32;
  static_assert(BLOCK % 32 == 0 && kWarps <= 32 && (kWarps & (kWarps - 1)) == 0,
                "a power-of-two number of warps, at most 1024 threads");
  v = warp_reduce<Op>(v);
  if constexpr (kWarps == 1) return v;
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < kWarps ? scratch[lane] : Op::identity();
    w = warp_reduce<Op, (kWarps > 1 ? kWarps : 2)>(w);
    if (lane == 0) scratch[kWarps] = w;
  }
  __syncthreads();
  const float r = scratch[kWarps];
  __syncthreads();  // scratch may be written again by the next call
  return r;
}

}  // namespace ops::cuda::detail
