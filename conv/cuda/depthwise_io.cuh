// Device helpers of the depthwise kernels (conv/cuda/depthwise_kernels.cu): elements of the
// storage types (float, __half, __nv_bfloat16) loaded as floats and stored rounded to nearest,
// one at a time or as one 2-, 4-, 8- or 16-byte vector, and float rows of shared memory read
// with the widest aligned loads. Device code only (include from .cu files).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace conv {
namespace depthwise_io {

// The bits of one stored element and their conversions to and from float (rounded to nearest).
template <class T>
struct Elem;
template <>
struct Elem<float> {
  static constexpr int kBits = 32;
  static __device__ __forceinline__ float to_float(unsigned int b) { return __uint_as_float(b); }
  static __device__ __forceinline__ unsigned int bits(float v) { return __float_as_uint(v); }
};
template <>
struct Elem<__half> {
  static constexpr int kBits = 16;
  static __device__ __forceinline__ float to_float(unsigned int b) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(b)));
  }
  static __device__ __forceinline__ unsigned int bits(float v) {
    return __half_as_ushort(__float2half_rn(v));
  }
};
template <>
struct Elem<__nv_bfloat16> {
  static constexpr int kBits = 16;
  static __device__ __forceinline__ float to_float(unsigned int b) {
    return __bfloat162float(__ushort_as_bfloat16(static_cast<unsigned short>(b)));
  }
  static __device__ __forceinline__ unsigned int bits(float v) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
  }
};

template <class T>
__device__ __forceinline__ float load1(const T* p) {
  if constexpr (sizeof(T) == 4)
    return __ldg(reinterpret_cast<const float*>(p));
  else
    return Elem<T>::to_float(__ldg(reinterpret_cast<const unsigned short*>(p)));
}

template <class T>
__device__ __forceinline__ void store1(T* p, float v) {
  if constexpr (sizeof(T) == 4)
    *reinterpret_cast<float*>(p) = v;
  else
    *reinterpret_cast<unsigned short*>(p) = static_cast<unsigned short>(Elem<T>::bits(v));
}

// N consecutive elements at p, aligned to their size (2, 4, 8 or 16 bytes): one load.
template <class T, int N>
__device__ __forceinline__ void load_vec(const T* p, float (&x)[N]) {
  constexpr int kBytes = int(sizeof(T)) * N;
  static_assert(kBytes == 2 || kBytes == 4 || kBytes == 8 || kBytes == 16, "vector size");
  constexpr int kPerWord = 32 / Elem<T>::kBits;
  unsigned int w[kBytes >= 4 ? kBytes / 4 : 1];
  if constexpr (kBytes == 16) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
    w[0] = v.x;
    w[1] = v.y;
    w[2] = v.z;
    w[3] = v.w;
  } else if constexpr (kBytes == 8) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
    w[0] = v.x;
    w[1] = v.y;
  } else if constexpr (kBytes == 4) {
    w[0] = __ldg(reinterpret_cast<const unsigned int*>(p));
  } else {
    w[0] = __ldg(reinterpret_cast<const unsigned short*>(p));
  }
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const unsigned int word = w[i / kPerWord];
    x[i] = Elem<T>::to_float(kPerWord == 1 ? word : (word >> (16 * (i % kPerWord))) & 0xFFFFu);
  }
}

// N consecutive elements at p, aligned to their size: one store.
template <class T, int N>
__device__ __forceinline__ void store_vec(T* p, const float (&x)[N]) {
  constexpr int kBytes = int(sizeof(T)) * N;
  static_assert(kBytes == 2 || kBytes == 4 || kBytes == 8 || kBytes == 16, "vector size");
  constexpr int kPerWord = 32 / Elem<T>::kBits;
  unsigned int w[kBytes >= 4 ? kBytes / 4 : 1] = {};
#pragma unroll
  for (int i = 0; i < N; ++i) w[i / kPerWord] |= Elem<T>::bits(x[i]) << (16 * (i % kPerWord));
  if constexpr (kBytes == 16)
    *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
  else if constexpr (kBytes == 8)
    *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
  else if constexpr (kBytes == 4)
    *reinterpret_cast<unsigned int*>(p) = w[0];
  else
    *reinterpret_cast<unsigned short*>(p) = static_cast<unsigned short>(w[0]);
}

// N consecutive floats of shared memory at p (16-byte aligned): 16-byte loads, then 8, then 4.
template <int N>
__device__ __forceinline__ void load_smem(const float* p, float (&x)[N]) {
#pragma unroll
  for (int i = 0; i + 4 <= N; i += 4) {
    const float4 v = *reinterpret_cast<const float4*>(p + i);
    x[i] = v.x;
    x[i + 1] = v.y;
    x[i + 2] = v.z;
    x[i + 3] = v.w;
  }
  constexpr int kDone = N / 4 * 4;
  if constexpr (N - kDone >= 2) {
    const float2 v = *reinterpret_cast<const float2*>(p + kDone);
    x[kDone] = v.x;
    x[kDone + 1] = v.y;
  }
  if constexpr ((N - kDone) % 2 == 1) x[N - 1] = p[N - 1];
}

// x[e] for a runtime e without local memory.
template <int V>
__device__ __forceinline__ float pick(const float (&x)[V], int e) {
  float v = x[0];
#pragma unroll
  for (int k = 1; k < V; ++k) v = e == k ? x[k] : v;
  return v;
}

}  // namespace depthwise_io
}  // namespace conv
