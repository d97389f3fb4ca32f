// Device helpers of the depthwise kernels (conv/cuda/depthwise_kernels.cu,
// conv/cuda/depthwise_strip_kernels.cu): elements of the storage types (float, __half,
// __nv_bfloat16) loaded as floats and stored rounded to nearest, one at a time or as one 2-, 4-,
// 8- or 16-byte vector; float rows of shared memory read with the widest aligned loads; and raw
// 32-bit words of packed elements (Words), loaded as vectors first and converted later, a pair of
// 16-bit elements per word. Device code only (include from .cu files).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <type_traits>

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

// N elements packed in 32-bit words (one fp32 or two 16-bit elements per word, element e in word
// e / kPerWord, the low half first): the registers of loads in flight, converted when used.
template <class T, int N>
struct Words {
  static constexpr int kPerWord = 32 / Elem<T>::kBits;
  static constexpr int kWords = (N + kPerWord - 1) / kPerWord;
  unsigned int w[kWords];

  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int i = 0; i < kWords; ++i) w[i] = 0u;
  }
  // Element e as a float (exact): fp32 a move, fp16 one conversion of a half-word, bf16 a shift
  // or a mask.
  __device__ __forceinline__ float get(int e) const {
    const unsigned int word = w[e / kPerWord];
    if constexpr (kPerWord == 1) {
      return __uint_as_float(word);
    } else if constexpr (std::is_same_v<T, __half>) {
      __half2 h;
      memcpy(&h, &word, 4);
      return e % 2 == 0 ? __low2float(h) : __high2float(h);
    } else {
      return __uint_as_float(e % 2 == 0 ? word << 16 : word & 0xFFFF0000u);
    }
  }
  // Elements e0 .. e0 + M - 1 from memory at p (aligned to M elements): one load of M * sizeof(T)
  // bytes (4, 8 or 16) into whole words, or, for a 2-byte element, one load into its half-word
  // (the word zeroed first where e0 is even).
  template <int M>
  __device__ __forceinline__ void load(int e0, const T* p) {
    constexpr int kBytes = int(sizeof(T)) * M;
    static_assert(kBytes == 2 || kBytes == 4 || kBytes == 8 || kBytes == 16, "vector size");
    if constexpr (kBytes == 16) {
      const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
      const int i = e0 / kPerWord;
      w[i] = v.x;
      w[i + 1] = v.y;
      w[i + 2] = v.z;
      w[i + 3] = v.w;
    } else if constexpr (kBytes == 8) {
      const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
      const int i = e0 / kPerWord;
      w[i] = v.x;
      w[i + 1] = v.y;
    } else if constexpr (kBytes == 4) {
      w[e0 / kPerWord] = __ldg(reinterpret_cast<const unsigned int*>(p));
    } else {
      const unsigned int h = __ldg(reinterpret_cast<const unsigned short*>(p));
      unsigned int& word = w[e0 / 2];
      word = e0 % 2 == 0 ? h : word | (h << 16);
    }
  }
};

// M floats rounded to T and stored at p (aligned to M elements) as one 2-, 4-, 8- or 16-byte
// store; 16-bit pairs converted together (one cvt.rn.f16x2.f32 / .bf16x2 each).
template <class T, int M>
__device__ __forceinline__ void store_rounded(T* p, const float* x) {
  constexpr int kBytes = int(sizeof(T)) * M;
  static_assert(kBytes == 2 || kBytes == 4 || kBytes == 8 || kBytes == 16, "vector size");
  unsigned int w[kBytes >= 4 ? kBytes / 4 : 1];
  if constexpr (sizeof(T) == 4) {
#pragma unroll
    for (int i = 0; i < M; ++i) w[i] = __float_as_uint(x[i]);
  } else if constexpr (M == 1) {
    w[0] = Elem<T>::bits(x[0]);
  } else {
#pragma unroll
    for (int i = 0; i < M / 2; ++i) {
      if constexpr (std::is_same_v<T, __half>) {
        const __half2 h = __floats2half2_rn(x[2 * i], x[2 * i + 1]);
        memcpy(&w[i], &h, 4);
      } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(x[2 * i], x[2 * i + 1]);
        memcpy(&w[i], &h, 4);
      }
    }
  }
  if constexpr (kBytes == 16)
    *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
  else if constexpr (kBytes == 8)
    *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
  else if constexpr (kBytes == 4)
    *reinterpret_cast<unsigned int*>(p) = w[0];
  else
    *reinterpret_cast<unsigned short*>(p) = static_cast<unsigned short>(w[0]);
}

}  // namespace depthwise_io
}  // namespace conv
