// What own_cuda's decode kernels (own_decode_kernels.cu and own_gemv_mma_kernels.cu: the GEMVs,
// own_attention_kernels.cu: the split-KV attention) share: 16-byte vectors of the element type,
// warp reductions, programmatic dependent launch (core/cuda/pdl.cuh's), asynchronous copies to
// shared memory and the host's launch helpers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/pdl.cuh"
#include "models/transformer/cuda/decode_kernels.hpp"
#include "models/transformer/cuda/elem.cuh"

namespace transformer::cuda::own_device {

template <typename T>
__host__ __device__ constexpr int vec_elems() {
  return 16 / static_cast<int>(sizeof(T));
}

template <typename T>
__device__ __forceinline__ void unpack(const uint4& u, float* f) {
  const T* e = reinterpret_cast<const T*>(&u);
#pragma unroll
  for (int i = 0; i < vec_elems<T>(); ++i) f[i] = to_f(e[i]);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Programmatic dependent launch (core/cuda/pdl.cuh): what a kernel does before
// wait_for_previous() reads nothing an earlier kernel writes (only weights).
using bench::launch_dependents;
using bench::launch_pdl;
using bench::wait_for_previous;

// Pulls bytes [first, bytes) of p into L2, one 128-byte line every `step` bytes (first and step
// multiples of 128): issued before wait_for_previous(), the DRAM latency overlaps the previous
// kernel's tail. A prefetch never faults and returns nothing.
__device__ __forceinline__ void prefetch_l2(const void* p, std::size_t bytes, std::size_t first,
                                            std::size_t step) {
  const char* c = static_cast<const char*>(p);
  for (std::size_t off = first; off < bytes; off += step)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(c + off));
}

// 16 bytes global -> shared without a register round trip (sm_80+), cached in L2 only; every
// copy a thread issued is complete after cp_async_wait_all() (then a barrier makes all threads'
// copies visible to the block).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;" ::: "memory");
}

template <typename F>
void dispatch(Elem e, F&& f) {
  switch (e) {
    case Elem::f32:
      f(float{});
      break;
    case Elem::f16:
      f(__half{});
      break;
    case Elem::bf16:
      f(__nv_bfloat16{});
      break;
  }
}

inline std::size_t elem_bytes(Elem e) {
  return e == Elem::f32 ? 4 : 2;
}

// The most dynamic shared memory a block of ours asks for (an H100 allows 227 KiB).
constexpr std::size_t kMaxShared = 200 * 1024;
// Shared memory of a multiprocessor that blocks may take (sm_90: 228 KiB, 1 KiB of it reserved a
// block); only for sizing grids to what fits at once.
constexpr std::size_t kSharedPerSm = 226 * 1024;

// Raises a kernel's dynamic shared memory limit to bytes once per larger size (the eager step
// before a capture raises it: the capture then makes no such call). Also at 48 KiB and under:
// the default limit counts the kernel's static shared memory too.
template <typename K>
void allow_shared(K kernel, std::size_t bytes, std::size_t& allowed) {
  if (bytes == 0 || bytes <= allowed) return;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)));
  allowed = bytes;
}

}  // namespace transformer::cuda::own_device
