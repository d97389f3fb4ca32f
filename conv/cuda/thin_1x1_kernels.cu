// Variant 13's kernel: the streaming 1x1 GEMM (the design and its k order:
// conv/cuda/thin_1x1_config.hpp).
#include "conv/cuda/thin_1x1_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/mma.cuh"

namespace conv {
namespace {

using bench::MmaDtype;

template <MmaDtype T>
__device__ __forceinline__ uint4 round_vector(uint4 v) {
  if constexpr (T == MmaDtype::tf32) {
    v.x = bench::round_to_tf32(v.x);
    v.y = bench::round_to_tf32(v.y);
    v.z = bench::round_to_tf32(v.z);
    v.w = bench::round_to_tf32(v.w);
  }
  return v;
}

// Two FP32 results of one row, columns col and col + 1, in the storage type.
template <MmaDtype T>
__device__ __forceinline__ void store_pair(unsigned char* dst, std::int64_t index, float x,
                                           float y) {
  if constexpr (T == MmaDtype::tf32) {
    *reinterpret_cast<float2*>(dst + index * 4) = make_float2(x, y);
  } else if constexpr (T == MmaDtype::fp16) {
    *reinterpret_cast<__half2*>(dst + index * 2) = __floats2half2_rn(x, y);
  } else {
    *reinterpret_cast<__nv_bfloat162*>(dst + index * 2) = __floats2bfloat162_rn(x, y);
  }
}

// kCap: the chunks the A fragments hold (a row's k in 64-byte chunks, `chunks` of them used).
template <MmaDtype T, int kCap>
__global__ void __launch_bounds__(kThinThreads)
    thin_1x1_kernel(const unsigned char* __restrict__ src, const unsigned char* __restrict__ wei,
                    unsigned char* __restrict__ dst, std::int64_t m, int n, int k, int chunks) {
#if BENCH_MMA_OK
  constexpr int kBytes = bench::mma_dtype_bytes(T);
  constexpr int kGroups = thin_1x1_groups_per_warp(kCap);
  constexpr int kWarps = kThinThreads / 32;
  extern __shared__ uint4 w_s[];
  const int row_bytes = k * kBytes;
  const int row_vectors = thin_1x1_row_vectors(chunks);
  const int used_vectors = chunks * 4;

  // The weights, rows zero-filled past k, tf32 rounded once here.
  for (int i = threadIdx.x; i < n * used_vectors; i += kThinThreads) {
    const int r = i / used_vectors, v = i - r * used_vectors;
    uint4 value = make_uint4(0, 0, 0, 0);
    if (v * 16 < row_bytes)
      value = round_vector<T>(
          *reinterpret_cast<const uint4*>(wei + std::int64_t(r) * row_bytes + v * 16));
    w_s[r * row_vectors + v] = value;
  }
  __syncthreads();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const std::int64_t rows = std::int64_t(kThinRowsPerGroup) * kGroups;
  const std::int64_t tasks = (m + rows - 1) / rows;
  for (std::int64_t task = std::int64_t(blockIdx.x) * kWarps + warp; task < tasks;
       task += std::int64_t(gridDim.x) * kWarps) {
    const std::int64_t row0 = task * rows;
    // a[group][half][chunk]: rows g and g + 8 of each 16-row group, lane t's 16 bytes of each
    // 64-byte chunk (physical k 8t .. 8t + 7 of it in 16-bit types, 4t .. 4t + 3 in tf32).
    uint4 a[kGroups][2][kCap];
#pragma unroll
    for (int gi = 0; gi < kGroups; ++gi)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const std::int64_t row = row0 + gi * 16 + h * 8 + g;
#pragma unroll
        for (int c = 0; c < kCap; ++c) {
          const int kb = c * kThinChunkBytes + t * 16;
          a[gi][h][c] = c < chunks && row < m && kb < row_bytes
                            ? __ldcs(reinterpret_cast<const uint4*>(src + row * row_bytes + kb))
                            : make_uint4(0, 0, 0, 0);
          a[gi][h][c] = round_vector<T>(a[gi][h][c]);
        }
      }
    for (int j = 0; j < n / 8; ++j) {
      float acc[kGroups][4];
#pragma unroll
      for (int gi = 0; gi < kGroups; ++gi) acc[gi][0] = acc[gi][1] = acc[gi][2] = acc[gi][3] = 0;
      const uint4* w_row = w_s + (j * 8 + g) * row_vectors + t;
#pragma unroll
      for (int c = 0; c < kCap; ++c) {
        if (c >= chunks) break;
        const uint4 b = w_row[c * 4];
        // Step 0 takes the lane's first two words (logical k 2t, 2t+1 and 2t+8, 2t+9; tf32 t and
        // t + 4), step 1 the last two.
        const unsigned b0[2] = {b.x, b.y}, b1[2] = {b.z, b.w};
#pragma unroll
        for (int gi = 0; gi < kGroups; ++gi) {
          const uint4 lo = a[gi][0][c], hi = a[gi][1][c];
          const unsigned a0[4] = {lo.x, hi.x, lo.y, hi.y}, a1[4] = {lo.z, hi.z, lo.w, hi.w};
          bench::mma_step<T>(acc[gi], a0, b0);
          bench::mma_step<T>(acc[gi], a1, b1);
        }
      }
      const int col = j * 8 + 2 * t;
#pragma unroll
      for (int gi = 0; gi < kGroups; ++gi)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const std::int64_t row = row0 + gi * 16 + h * 8 + g;
          if (row < m) store_pair<T>(dst, row * n + col, acc[gi][2 * h], acc[gi][2 * h + 1]);
        }
    }
  }
#else
  (void)src;
  (void)wei;
  (void)dst;
  (void)m;
  (void)n;
  (void)k;
  (void)chunks;
  __trap();
#endif
}

using KernelFn = void (*)(const unsigned char*, const unsigned char*, unsigned char*, std::int64_t,
                          int, int, int);

template <MmaDtype T>
KernelFn kernel_of(int capacity) {
  switch (capacity) {
    case 1:
      return thin_1x1_kernel<T, 1>;
    case 2:
      return thin_1x1_kernel<T, 2>;
    case 4:
      return thin_1x1_kernel<T, 4>;
    case 8:
      return thin_1x1_kernel<T, 8>;
  }
  throw std::logic_error("variant 13: no kernel holds " + std::to_string(capacity) + " chunks");
}

// The kernel for `chunks` in `type`, allowed kThinMaxSharedBytes of dynamic shared memory (set
// once per kernel: above 48 KB it must be asked for).
KernelFn prepared_kernel(MmaType type, int chunks) {
  const int capacity = thin_1x1_chunk_capacity(chunks);
  const KernelFn f = type == MmaType::tf32   ? kernel_of<MmaDtype::tf32>(capacity)
                     : type == MmaType::fp16 ? kernel_of<MmaDtype::fp16>(capacity)
                                             : kernel_of<MmaDtype::bf16>(capacity);
  static bool set[3][9] = {};
  bool& done = set[int(type)][capacity];
  if (!done) {
    CUDA_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(kThinMaxSharedBytes)));
    done = true;
  }
  return f;
}

}  // namespace

int thin_1x1_blocks_per_sm(MmaType type, int chunks, std::size_t smem_bytes) {
  int blocks = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, prepared_kernel(type, chunks),
                                                           kThinThreads, smem_bytes));
  return blocks;
}

void launch_thin_1x1(MmaType type, const Thin1x1Plan& t, const void* src, const void* wei,
                     void* dst, cudaStream_t stream) {
  if (t.blocks < 1 || t.n % 8 != 0 || t.chunks < 1 || t.chunks > kThinMaxChunks ||
      t.smem_bytes > kThinMaxSharedBytes)
    throw std::logic_error("variant 13: a plan thin_1x1_plan did not make");
  const KernelFn f = prepared_kernel(type, t.chunks);
  f<<<t.blocks, kThinThreads, t.smem_bytes, stream>>>(
      static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(wei),
      static_cast<unsigned char*>(dst), t.m, t.n, t.k, t.chunks);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace conv
