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
#include "core/cuda/pdl.cuh"

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

// Values 2 e and 2 e + 1 of v (e < q) in the storage type, 2 q contiguous outputs at `index`: one
// 16-, 8- or 4-byte store in 16-bit types, two, one or one half of a 16-byte store in tf32.
template <MmaDtype T, int kQ>
__device__ __forceinline__ void store_run(unsigned char* dst, std::int64_t index,
                                          const float (&v)[4][4], int h) {
  if constexpr (T == MmaDtype::tf32) {
    float* out = reinterpret_cast<float*>(dst) + index;
    if constexpr (kQ == 1) {
      *reinterpret_cast<float2*>(out) = make_float2(v[0][2 * h], v[0][2 * h + 1]);
    } else {
#pragma unroll
      for (int e = 0; e < kQ; e += 2)
        *reinterpret_cast<float4*>(out + 2 * e) =
            make_float4(v[e][2 * h], v[e][2 * h + 1], v[e + 1][2 * h], v[e + 1][2 * h + 1]);
    }
  } else {
    unsigned w[4];
#pragma unroll
    for (int e = 0; e < kQ; ++e) {
      if constexpr (T == MmaDtype::fp16) {
        const __half2 x = __floats2half2_rn(v[e][2 * h], v[e][2 * h + 1]);
        w[e] = *reinterpret_cast<const unsigned*>(&x);
      } else {
        const __nv_bfloat162 x = __floats2bfloat162_rn(v[e][2 * h], v[e][2 * h + 1]);
        w[e] = *reinterpret_cast<const unsigned*>(&x);
      }
    }
    unsigned char* out = dst + index * 2;
    if constexpr (kQ == 4)
      *reinterpret_cast<uint4*>(out) = make_uint4(w[0], w[1], w[2], w[3]);
    else if constexpr (kQ == 2)
      *reinterpret_cast<uint2*>(out) = make_uint2(w[0], w[1]);
    else
      *reinterpret_cast<unsigned*>(out) = w[0];
  }
}

// A warp's 16-row groups, row0 on, against kQ column tiles of 8 from column n0: the MMAs over the
// chunks, then the stores. The columns are permuted as the k order is: the accumulators lane t
// holds of tile e (the MMA's columns 2t, 2t + 1) are the outputs n0 + 2 kQ t + 2 e (+1), so that
// each lane's 2 kQ outputs of a row are contiguous (thin_1x1_output_column); the lane that feeds
// the MMA's column g of tile e reads that output's weight row.
template <MmaDtype T, int kCap, int kGroups, int kQ>
__device__ __forceinline__ void column_run(const uint4 (&a)[kGroups][2][kCap],
                                           const uint4* __restrict__ w_s, int row_vectors,
                                           int chunks, int n0, int g, int t, std::int64_t row0,
                                           std::int64_t m, int n, unsigned char* __restrict__ dst) {
  float acc[kGroups][4][4];
#pragma unroll
  for (int gi = 0; gi < kGroups; ++gi)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[gi][e][0] = acc[gi][e][1] = acc[gi][e][2] = acc[gi][e][3] = 0;
#pragma unroll
  for (int e = 0; e < kQ; ++e) {
    const uint4* w_row = w_s + thin_1x1_output_column(n0, kQ, e, g) * row_vectors + t;
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
        bench::mma_step<T>(acc[gi][e], a0, b0);
        bench::mma_step<T>(acc[gi][e], a1, b1);
      }
    }
  }
  const int col = n0 + 2 * kQ * t;
#pragma unroll
  for (int gi = 0; gi < kGroups; ++gi)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const std::int64_t row = row0 + gi * 16 + h * 8 + g;
      if (row < m) store_run<T, kQ>(dst, row * n + col, acc[gi], h);
    }
}

// Rows g and g + 8 of each 16-row group from row0: lane t's 16 bytes of each 64-byte chunk
// (physical k 8t .. 8t + 7 of it in 16-bit types, 4t .. 4t + 3 in tf32), zero past m and k,
// tf32 rounded.
template <MmaDtype T, int kCap, int kGroups>
__device__ __forceinline__ void load_rows(uint4 (&a)[kGroups][2][kCap],
                                          const unsigned char* __restrict__ src, std::int64_t row0,
                                          std::int64_t m, int row_bytes, int chunks, int g, int t) {
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
      }
    }
}

template <MmaDtype T, int kCap, int kGroups>
__device__ __forceinline__ void round_rows(uint4 (&a)[kGroups][2][kCap]) {
#pragma unroll
  for (int gi = 0; gi < kGroups; ++gi)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int c = 0; c < kCap; ++c) a[gi][h][c] = round_vector<T>(a[gi][h][c]);
}

// kCap: the chunks the A fragments hold (a row's k in 64-byte chunks, `chunks` of them used);
// kGroups: the 16-row groups a warp takes at once. Where thin_1x1_prefetch(kCap), a warp loads its
// next task's rows before it multiplies the current ones, so that its loads stay in flight through
// its MMAs and stores.
template <MmaDtype T, int kCap, int kGroups>
__global__ void __launch_bounds__(kThinThreads)
    thin_1x1_kernel(const unsigned char* __restrict__ src, const unsigned char* __restrict__ wei,
                    unsigned char* __restrict__ dst, std::int64_t m, int n, int k, int chunks) {
#if BENCH_MMA_OK
  constexpr int kBytes = bench::mma_dtype_bytes(T);
  constexpr bool kPrefetch = thin_1x1_prefetch(kCap);
  constexpr int kWarps = kThinThreads / 32;
  extern __shared__ uint4 w_s[];
  const int row_bytes = k * kBytes;
  const int row_vectors = thin_1x1_row_vectors(chunks);
  const int used_vectors = chunks * 4;
  // Programmatic dependent launch (Thin1x1Plan::pdl): the next kernel may be scheduled now;
  // nothing global is touched before the kernel before this one is done.
  bench::launch_dependents();
  bench::wait_for_previous();

  // The weights, rows zero-filled past k, tf32 rounded once here.
  for (int i = threadIdx.x; i < n * used_vectors; i += kThinThreads) {
    const int r = i / used_vectors, v = i - r * used_vectors;
    uint4 value = make_uint4(0, 0, 0, 0);
    if (v * 16 < row_bytes)
      value = round_vector<T>(
          *reinterpret_cast<const uint4*>(wei + std::int64_t(r) * row_bytes + v * 16));
    w_s[r * row_vectors + v] = value;
  }

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const std::int64_t rows = std::int64_t(kThinRowsPerGroup) * kGroups;
  const std::int64_t tasks = (m + rows - 1) / rows;
  const std::int64_t stride = std::int64_t(gridDim.x) * kWarps;
  const int tiles = n / 8;
  std::int64_t task = std::int64_t(blockIdx.x) * kWarps + warp;
  uint4 next[kGroups][2][kCap];
  if (kPrefetch && task < tasks)
    load_rows<T, kCap, kGroups>(next, src, task * rows, m, row_bytes, chunks, g, t);
  __syncthreads();  // the weights
  for (; task < tasks; task += stride) {
    const std::int64_t row0 = task * rows;
    uint4 a[kGroups][2][kCap];
    if constexpr (kPrefetch) {
#pragma unroll
      for (int gi = 0; gi < kGroups; ++gi)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int c = 0; c < kCap; ++c) a[gi][h][c] = next[gi][h][c];
      if (task + stride < tasks)
        load_rows<T, kCap, kGroups>(next, src, row0 + stride * rows, m, row_bytes, chunks, g, t);
    } else {
      load_rows<T, kCap, kGroups>(a, src, row0, m, row_bytes, chunks, g, t);
    }
    round_rows<T, kCap, kGroups>(a);
    // Runs of 4 tiles in 16-bit types (a lane's 8 outputs: 16 bytes), 2 in tf32 (4 floats). In
    // tf32, against runs of 4 (two 16-byte stores a lane) in a separate device call, runs of 2
    // measured 1.02-1.12x faster on the layers auto gives variant 13 and 1.22-1.80x slower on
    // MobileNet-v2's expands (results/h200/20261128_conv_thin_1x1/, README).
    constexpr int kRun = T == MmaDtype::tf32 ? 2 : 4;
    int j = 0;
    for (; j + kRun <= tiles; j += kRun)
      column_run<T, kCap, kGroups, kRun>(a, w_s, row_vectors, chunks, 8 * j, g, t, row0, m, n, dst);
    if (j + 2 <= tiles) {
      column_run<T, kCap, kGroups, 2>(a, w_s, row_vectors, chunks, 8 * j, g, t, row0, m, n, dst);
      j += 2;
    }
    if (j < tiles)
      column_run<T, kCap, kGroups, 1>(a, w_s, row_vectors, chunks, 8 * j, g, t, row0, m, n, dst);
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
KernelFn kernel_of(int capacity, int groups) {
  if (groups == 2 && capacity == 1) return thin_1x1_kernel<T, 1, 2>;
  if (groups == 2 && capacity == 2) return thin_1x1_kernel<T, 2, 2>;
  if (groups == 1 && capacity == 1) return thin_1x1_kernel<T, 1, 1>;
  if (groups == 1 && capacity == 2) return thin_1x1_kernel<T, 2, 1>;
  if (groups == 1 && capacity == 4) return thin_1x1_kernel<T, 4, 1>;
  if (groups == 1 && capacity == 8) return thin_1x1_kernel<T, 8, 1>;
  throw std::logic_error("variant 13: no kernel holds " + std::to_string(capacity) + " chunks in " +
                         std::to_string(groups) + " groups a warp");
}

// The kernel for `chunks` and `groups` in `type`, allowed kThinMaxSharedBytes of dynamic shared
// memory (set once per kernel: above 48 KB it must be asked for).
KernelFn prepared_kernel(MmaType type, int chunks, int groups) {
  const int capacity = thin_1x1_chunk_capacity(chunks);
  const KernelFn f = type == MmaType::tf32   ? kernel_of<MmaDtype::tf32>(capacity, groups)
                     : type == MmaType::fp16 ? kernel_of<MmaDtype::fp16>(capacity, groups)
                                             : kernel_of<MmaDtype::bf16>(capacity, groups);
  static bool set[3][9][3] = {};
  bool& done = set[int(type)][capacity][groups];
  if (!done) {
    CUDA_CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(kThinMaxSharedBytes)));
    done = true;
  }
  return f;
}

}  // namespace

int thin_1x1_blocks_per_sm(MmaType type, int chunks, int groups, std::size_t smem_bytes) {
  int blocks = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &blocks, prepared_kernel(type, chunks, groups), kThinThreads, smem_bytes));
  return blocks;
}

void launch_thin_1x1(MmaType type, const Thin1x1Plan& t, const void* src, const void* wei,
                     void* dst, cudaStream_t stream) {
  if (t.blocks < 1 || t.n % 8 != 0 || t.chunks < 1 || t.chunks > kThinMaxChunks ||
      t.smem_bytes > kThinMaxSharedBytes || !thin_1x1_groups_allowed(t.capacity, t.groups_per_warp))
    throw std::logic_error("variant 13: a plan thin_1x1_plan did not make");
  const KernelFn f = prepared_kernel(type, t.chunks, t.groups_per_warp);
  bench::launch_pdl(f, dim3(unsigned(t.blocks)), dim3(kThinThreads), t.smem_bytes, t.pdl, stream,
                    static_cast<const unsigned char*>(src), static_cast<const unsigned char*>(wei),
                    static_cast<unsigned char*>(dst), t.m, t.n, t.k, t.chunks);
}

}  // namespace conv
