// Our matmul, C[b][m][n] = A[b][m][k] B[b][k][n], row-major and contiguous, in every dtype:
// numbered variants side by side (llm.c's dev/cuda habit); the backend ops/cuda/own_cuda.cpp
// runs the first of variants(p) unless --variant names another, and checks it against the
// float64 reference (ops/ref_ops.cpp) like every op backend. This file holds the kernels and
// their launches (matmul_launch); which variants run a problem, the plans of variants 2 and 3,
// the workspace and the descriptions are host code in matmul_plan.cpp.
//
// Build: part of the normal build when CUDA is found (ops_cuda); variant 3 needs sm_80 or newer,
// variant 4 a build for sm_90a (core/cuda/gemm/gemm_sm90.cu, its own target) and an sm_90 GPU.
// Registers and spills (none in any kernel here; 120-128 registers for the main ones):
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c ops/cuda/matmul.cu -o /dev/null
// Run (on a GPU):
//   build/experiments/myops --backend own_cuda --problem matmul:m4096n4096k4096:bf16 [--variant N]
//
// Variants, best first:
//   1  naive: a thread per output, FP32 accumulation, every dtype (tf32 computed in full FP32):
//      the correctness baseline.
//   2  fp32: strict FP32 on CUDA cores (PyTorch's default fp32 matmul allows no TF32), a shared-
//      memory tiled SGEMM: 128x128 block tile of 256 threads, 8x8 outputs per thread as 2x2
//      slices of 4x4 spread over the tile (conflict-free float4 shared reads), k slices of 8 with
//      A staged transposed (As[k][m]) and B as it is (Bs[k][n]), double-buffered through
//      registers (the next slice loads while the current one multiplies; one barrier a slice).
//      Written for this file: conv's SGEMM (conv/cuda/im2col_gemm_kernels.cu) has the same tile
//      but its loads are fused with the im2col gather, and that file is not shared yet.
//   3  tf32, fp16, bf16 on tensor cores, from the pieces conv's tensor-core kernels use
//      (core/cuda/mma.cuh): mma.sync m16n8k16 (fp16, bf16) or m16n8k8 (tf32), FP32 accumulators.
//      A's tile has k contiguous (rows m, 64-byte k slices at an 80-byte stride, ldmatrix), like
//      conv's weights. B is staged as it is in memory, rows k with n contiguous, at a padded
//      stride (mma_k_rows_stride): ldmatrix.trans for 16-bit values, 4-byte shared loads for
//      tf32 (no 32-bit ldmatrix.trans exists). cp.async copies, zero-filled past the edges
//      (src-size 0), keep 3 slices in flight in 4 stages, one barrier a slice; tf32 operands are
//      rounded (cvt.rna) in place once landed. Where K or N is not a multiple of the 16-byte
//      vector (8 fp16/bf16 or 4 fp32 values), the same pipeline loads through registers. The
//      epilogue converts to the dtype, stages the tile in shared memory and writes 16-byte rows.
//   4  fp16, bf16, tf32 on Hopper: the GEMM engine of core/cuda/gemm/ (wgmma fed by TMA, one
//      producer and two consumer warpgroups, persistent, 128x256 or 128x128 tiles by gemm_plan's
//      rule; tf32 on B first transposed to K-major and rounded to nearest tf32 in the
//      workspace, since wgmma reads 32-bit operands K-major only), where its tensor copies take
//      the shape (k and n multiples of 8); else variant 3. Split-K
//      where the tiles fill at most half the SMs (gemm_split_rule). How to time it beside
//      variant 3 and cuBLASLt: the engine's header.
//   5-8  the engine with one choice of variant 4's rule forced, so that one run times the choices
//      side by side (where the engine takes the shape): 5 split-K forced (the rule's splits,
//      else enough to fill the SMs, at least 2), 6 split-K off (the tile rule alone), 7 the
//      128x128 tile, 8 the 128x256 tile (7 and 8 with the rule's split-K for that tile).
//   9  the engine's ping-pong schedule (128x128 tiles, the consumer warpgroups on alternate
//      tiles, one's epilogue under the other's MMAs; the rule's split-K), to time against 4.
//   10 fp16, bf16 with m <= 16 on sm_90: the skinny-M kernel of matmul_skinny.cu (C^T = B^T A^T
//      on mma.sync, B streamed in 16-byte vectors, split-K over a thread block cluster summed
//      through distributed shared memory); offered last, by --variant 10, until timed.
//   11-14 fp32 on CUDA cores, strict FP32: warp-tiled SGEMMs of core/cuda/gemm/sgemm.cu on a
//   multi-stage
//      cp.async pipeline (sm_80+), one configuration each (matmul_sgemm.hpp): 11 CUTLASS's SIMT
//      policy (128x128x8, 8 warps of 32x64, 8x8 a thread, 4 stages, 2 blocks/SM), 12 the same
//      with k slices of 16 (3 stages), 13 4 warps of 64x64 (16x8 a thread), k slices of 16, 14
//      128x256x8 in 8 warps of 64x64 (16x8 a thread), one block/SM.
//   16-20 the same kernel with the fragments double-buffered in registers: 16 variant 12 with 4
//      stages, 17 256x128x16 in 16 warps of 32x64 (one block of 512 threads/SM), 18 128x256x16
//      in 8 warps of 64x64, 4 stages, one block/SM, 19 the same with k slices of 32 (3 stages),
//      20 256x128x16 in 8 warps of 64x64 (4 stages).
//   15 fp32 with FP32 accuracy on tensor cores, 3xTF32 (matmul_3xtf32.cu): the operands split
//      into big and small tf32 parts in the workspace, A' = [A_big|A_big|A_small], B' =
//      [B_big|B_small|B_big] along k, then one tf32 GEMM of depth 3k (the engine on sm_90 where
//      n % 8 == 0, else variant 3).
//   Variant 12 is fp32's default on sm_80+ (timed against cuBLAS: matmul_plan.cpp), 2 elsewhere;
//   the other SGEMMs and 15 are offered after them, by --variant N.
// Small grids split K (variant 2; variant 3 with its 64x64 tile): each split writes its FP32
// partial C to the workspace, then a second kernel sums them in split order (deterministic).
// Output tiles go in groups of 8 tile rows, column-major within a group, so that blocks running
// together share A and B tiles in L2. The batch is grid z (beyond 65535: v2 launches again, v3
// loops); the splits are grid y.
//
// Development figures, not yet reproduced through myops: a scratch harness on 2026-11-23/24,
// over code before its last edits (results/ will hold myops's own runs).
// Measured on an NVIDIA H200 (132 SMs, CUDA 13.0, sm_90 build; mean of 10 calls after 3, inputs
// warm in L2), TFLOP/s, beside cuBLAS (cublasGemmStridedBatchedEx, default algorithm; fp32 with
// CUBLAS_COMPUTE_32F). These runs were of an earlier state: v2's k loop unrolled (120 bytes of
// spills), and 128x256 tiles (8 warps of 64x64) where marked *; the code now has neither (see
// Sgemm, Mma128x128) and is still to be timed. tf32 and fp16 were checked, not timed.
//   fp32 v2 / cuBLAS: 512^3 14.7/17.9, 1024^3 24.4/37.5, 2048^3 35.3/50.2, 4096^3 37.2/51.3
//     (0.72x), 8192^3 37.8/51.2; m2048 n896 k896 26.5/39.3, n128 k896 18.2/22.6, n4864 k896
//     34.1/44.3, n896 k4864 30.0/50.1, n151936 k896 38.7/48.4; b8m512n512k64 18.1/17.2,
//     b32m512n512k512 35.3/47.8.
//   bf16 v3 / cuBLAS: 512^3 29/30 (64x64, split 2), 1024^3 107/188 (64x64, split 2), 2048^3
//     315/670 (128x128), 4096^3 277/793*, 8192^3 283/799*; m2048 n896 k896 141/249 (64x64),
//     n128 k896 43/57 (64x64, split 3), n4864 k896 198/601*, n896 k4864 168/639 (64x64),
//     n151936 k896 266/734*; b8m512n512k64 47/24 (64x64), b32m512n512k512 216/451*.
// So v3 reaches 0.3-0.5x cuBLAS on large bf16 problems (cuBLAS runs wgmma there; what limits
// mma.sync on Hopper: core/cuda/mma.cuh) and v2 0.6-0.8x in fp32. Not yet tried on the GPU:
// fragments double-buffered across k steps (CUTLASS's warp-level pipelining), 128-byte k slices.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/gemm/block_work.cuh"
#include "core/cuda/mma.cuh"
#include "core/cuda/split_reduce.cuh"
#include "ops/cuda/kernels.hpp"
#include "ops/cuda/launch.cuh"
#include "ops/cuda/matmul_3xtf32.hpp"
#include "ops/cuda/matmul_engine.hpp"
#include "ops/cuda/matmul_plan.hpp"
#include "ops/cuda/matmul_sgemm.hpp"
#include "ops/cuda/matmul_skinny.hpp"

namespace ops::cuda {
namespace {

using bench::MmaDtype;
using bench::gemm::fp32_matmul_block;
using bench::gemm::matmul_block_work;
using bench::gemm::MatmulBlockWork;
using bench::gemm::store_four_columns;

// The problem as the kernels see it; variants 2 and 3 need m, n, k and the tile count in int.
struct Gemm {
  std::int64_t b;
  int m, n, k;
};

// ---- Variant 1: naive ---------------------------------------------------------------------------

// Storage <-> FP32 (round to nearest even into the storage type).
template <class S>
__device__ __forceinline__ float to_float(S x) {
  if constexpr (std::is_same_v<S, float>)
    return x;
  else if constexpr (std::is_same_v<S, __half>)
    return __half2float(x);
  else
    return __bfloat162float(x);
}
template <class S>
__device__ __forceinline__ S from_float(float x) {
  if constexpr (std::is_same_v<S, float>)
    return x;
  else if constexpr (std::is_same_v<S, __half>)
    return __float2half_rn(x);
  else
    return __float2bfloat16_rn(x);
}

// 16x16 threads per block: x along n (B's rows and C read and written coalesced), y along m;
// grid y and z loop where m / 16 or b exceed the grid's limits.
template <class S>
__global__ void naive_kernel(const S* __restrict__ a, const S* __restrict__ bm, S* __restrict__ c,
                             std::int64_t batches, std::int64_t m, std::int64_t n, std::int64_t k) {
  const std::int64_t j = blockIdx.x * std::int64_t(16) + threadIdx.x;
  if (j >= n) return;
  for (std::int64_t batch = blockIdx.z; batch < batches; batch += gridDim.z)
    for (std::int64_t i = blockIdx.y * std::int64_t(16) + threadIdx.y; i < m;
         i += std::int64_t(gridDim.y) * 16) {
      const S* ar = a + (batch * m + i) * k;
      const S* bc = bm + batch * k * n + j;
      float acc = 0;
      for (std::int64_t l = 0; l < k; ++l) acc = fmaf(to_float(ar[l]), to_float(bc[l * n]), acc);
      c[(batch * m + i) * n + j] = from_float<S>(acc);
    }
}

template <class S>
void launch_naive(const OpArgs& args) {
  const Problem& p = *args.p;
  const dim3 grid(unsigned((p.n + 15) / 16),
                  unsigned(std::min<std::int64_t>((p.m + 15) / 16, 65535)),
                  unsigned(std::min<std::int64_t>(p.b, 65535)));
  naive_kernel<S><<<grid, dim3(16, 16), 0, args.stream>>>(
      static_cast<const S*>(args.inputs[0]), static_cast<const S*>(args.inputs[1]),
      static_cast<S*>(args.output), p.b, p.m, p.n, p.k);
  CUDA_CHECK_LAST_LAUNCH();
}

// ---- Split-K's second pass (variants 2, 3, 11-14, 16-20) ---------------------------------------

// C = the sum of the splits' FP32 partials (partial + s * elements), in split order.
template <MmaDtype T>
__global__ void split_reduce_kernel(const float* __restrict__ partial, int splits,
                                    std::int64_t elements, void* __restrict__ c) {
  bench::split_reduce<T>(partial, splits, elements, c);
}

template <MmaDtype T>
void launch_split_reduce(const float* partial, int splits, std::int64_t elements, void* c,
                         cudaStream_t stream) {
  const std::int64_t blocks = std::min<std::int64_t>((elements + 4 * 256 - 1) / (4 * 256), 1 << 20);
  split_reduce_kernel<T><<<unsigned(blocks), 256, 0, stream>>>(partial, splits, elements, c);
  CUDA_CHECK_LAST_LAUNCH();
}

// ---- Variant 2: FP32 SGEMM on CUDA cores --------------------------------------------------------

// 128x128 block tile, k slices of 8, 256 threads of 8x8 outputs: two slices of 4 rows BM / 2
// apart times two of 4 columns BN / 2 apart, so that a warp's float4 shared reads are
// conflict-free (A: 2 distinct addresses, broadcast; B: 16 consecutive float4). The loop over a
// slice's 8 k stays rolled: unrolled, ptxas spills 80 bytes at the 128-register cap that two
// blocks per SM (__launch_bounds__(256, 2)) impose.
struct Sgemm {
  static constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8, kThreads = 256;
  static constexpr int kThreadCols = BN / TN, kRowBand = BM / 2, kColBand = BN / 2;
  static constexpr int kPad = 4;  // transposed A stores spread over banks; rows stay aligned
  static_assert(BM * BK / 4 == kThreads && BK * BN / 4 == kThreads, "one float4 of A and of B");
};

// Four consecutive floats of a row of a row-major matrix: one 16-byte load where rows are 16-byte
// aligned (vector_ok) and the four are in range, else element by element with zeros outside.
__device__ __forceinline__ float4 load_float4(const float* p, bool row_ok, int col, int cols,
                                              bool vector_ok) {
  if (vector_ok && row_ok && col < cols) return __ldg(reinterpret_cast<const float4*>(p));
  float4 v;
  v.x = row_ok && col + 0 < cols ? __ldg(p + 0) : 0.0f;
  v.y = row_ok && col + 1 < cols ? __ldg(p + 1) : 0.0f;
  v.z = row_ok && col + 2 < cols ? __ldg(p + 2) : 0.0f;
  v.w = row_ok && col + 3 < cols ? __ldg(p + 3) : 0.0f;
  return v;
}

// One batch (a, b, c at its matrices; blockIdx.z = batch - the launch's first). Split s
// (blockIdx.y of `splits`) multiplies the k slices [mma_split_begin(s), ..(s + 1)) and, with
// splits > 1, writes its FP32 partial C to c + s * split_stride.
__global__ void __launch_bounds__(Sgemm::kThreads, 2)
    sgemm_kernel(const float* __restrict__ a, const float* __restrict__ bm, float* __restrict__ c,
                 const Gemm g, int tiles_m, int tiles_n, std::int64_t split_stride) {
  using T = Sgemm;
  __shared__ __align__(16) float As[2][T::BK][T::BM + T::kPad];
  __shared__ __align__(16) float Bs[2][T::BK][T::BN + T::kPad];
  const int tid = threadIdx.x, tx = tid % T::kThreadCols, ty = tid / T::kThreadCols;
  const MatmulBlockWork work = fp32_matmul_block<T::BM, T::BN, T::BK>(
      a, bm, c, g.m, g.n, g.k, tiles_m, tiles_n, split_stride);
  const int m0 = work.m0, n0 = work.n0, first = work.first, slices = work.slices;
  // This thread's float4 of each slice: A row a_row, k a_k + k0; B row b_k + k0, column b_n.
  const int a_row = m0 + tid / (T::BK / 4), a_k = tid % (T::BK / 4) * 4;
  const int b_k = tid / (T::BN / 4), b_n = n0 + tid % (T::BN / 4) * 4;
  const bool a_vec = g.k % 4 == 0, b_vec = g.n % 4 == 0;
  const float* ap = a + std::int64_t(a_row) * g.k + a_k;
  const float* bp = bm + std::int64_t(b_k) * g.n + b_n;
  float4 ra, rb;
  auto load = [&](int k0) {
    ra = load_float4(ap + k0, a_row < g.m, a_k + k0, g.k, a_vec);
    rb = load_float4(bp + std::int64_t(k0) * g.n, b_k + k0 < g.k, b_n, g.n, b_vec);
  };
  auto store = [&](int buf) {  // A transposed (As[k][m]), B as it is
    As[buf][a_k + 0][tid / (T::BK / 4)] = ra.x;
    As[buf][a_k + 1][tid / (T::BK / 4)] = ra.y;
    As[buf][a_k + 2][tid / (T::BK / 4)] = ra.z;
    As[buf][a_k + 3][tid / (T::BK / 4)] = ra.w;
    *reinterpret_cast<float4*>(&Bs[buf][b_k][b_n - n0]) = rb;
  };
  load(first * T::BK);
  store(0);
  __syncthreads();
  float acc[T::TM][T::TN] = {};
  for (int s = 0; s < slices; ++s) {
    const int cur = s & 1;
    const bool more = s + 1 < slices;
    if (more) load((first + s + 1) * T::BK);  // in flight during the multiply below
#pragma unroll 1
    for (int kk = 0; kk < T::BK; ++kk) {
      float ar[T::TM], br[T::TN];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float4 x = *reinterpret_cast<const float4*>(&As[cur][kk][h * T::kRowBand + ty * 4]);
        const float4 y = *reinterpret_cast<const float4*>(&Bs[cur][kk][h * T::kColBand + tx * 4]);
        ar[4 * h + 0] = x.x, ar[4 * h + 1] = x.y, ar[4 * h + 2] = x.z, ar[4 * h + 3] = x.w;
        br[4 * h + 0] = y.x, br[4 * h + 1] = y.y, br[4 * h + 2] = y.z, br[4 * h + 3] = y.w;
      }
#pragma unroll
      for (int i = 0; i < T::TM; ++i)
#pragma unroll
        for (int j = 0; j < T::TN; ++j) acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
    }
    if (more) store(cur ^ 1);  // everyone finished reading that buffer before the last barrier
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < T::TM; ++i) {
    const int row = m0 + (i / 4) * T::kRowBand + ty * 4 + i % 4;
    if (row >= g.m) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = n0 + h * T::kColBand + tx * 4;
      store_four_columns(c + std::int64_t(row) * g.n + col, col, g.n, b_vec, &acc[i][4 * h]);
    }
  }
}

// ---- Variant 3: tensor cores --------------------------------------------------------------------

// Block tile BM x BN in warps of WM x WN, kStages shared stages; __launch_bounds__ minimum
// blocks per SM kMinBlocks; kCanSplit: split-K (FP32 partial tiles, staged in shared memory).
template <int BM_, int BN_, int WM_, int WN_, int kStages_, int kMinBlocks_, bool kCanSplit_>
struct MatmulTile : bench::MmaWarpTiling<BM_, BN_, WM_, WN_> {
  static constexpr int kStages = kStages_, kMinBlocks = kMinBlocks_;
  static constexpr bool kCanSplit = kCanSplit_;
};
// Measured on the H200 (bf16): 128x128 in 8 warps of 64x32 (two blocks per SM) 315 TFLOP/s at
// 2048^3; 128x256 in 8 warps of 64x64 (one block per SM, 240 registers) 277-283 at 4096^3 and
// 8192^3, so the larger tile is not kept. Register loads (unaligned K or N) hold more registers:
// a lower minimum of blocks.
using Mma128x128 = MatmulTile<128, 128, 64, 32, 4, 2, false>;
using Mma64x64 = MatmulTile<64, 64, 32, 32, 4, 4, true>;
using Mma64x64Regs = MatmulTile<64, 64, 32, 32, 4, 2, true>;

// Shared-memory layout of one stage: A (BM rows of a k slice, k contiguous), then B (BK rows of
// BN values); the epilogue reuses the stages for the output tile.
template <class Tile, MmaDtype T>
struct MatmulLayout {
  static constexpr int kBytes = bench::MmaTraits<T>::kBytes, BK = bench::MmaTraits<T>::kSliceK;
  static constexpr int kAStage = Tile::BM * bench::kMmaRowStride;
  static constexpr int kBStride = bench::mma_k_rows_stride(Tile::BN, kBytes);
  static constexpr int kStage = kAStage + BK * kBStride;
  static constexpr int kMain = Tile::kStages * kStage;
  // The staged output tile: in the dtype, or FP32 where the tile splits K.
  static constexpr int kOut =
      Tile::BM * bench::mma_staging_stride(Tile::BN) * (Tile::kCanSplit ? 4 : kBytes);
  static constexpr int kShared = kMain > kOut ? kMain : kOut;
};

// The block's output tile (accumulators as OT: the dtype, or FP32 partials) into the m x n matrix
// at `out`: staged in shared memory (free: a barrier after the last operand reads), then 16-byte
// row vectors where n allows, element stores otherwise.
template <class Tile, MmaDtype OT>
__device__ __forceinline__ void store_tile(const float (&acc)[Tile::MI][Tile::NI][4],
                                           unsigned char* smem, unsigned char* out, const Gemm& g,
                                           int m0, int n0) {
  constexpr int kBytes = bench::mma_dtype_bytes(OT), kVec = bench::mma_vec_elements(kBytes);
  constexpr int kStride = bench::mma_staging_stride(Tile::BN), kPerRow = Tile::BN / kVec;
  const int tid = threadIdx.x, warp = tid >> 5;
  bench::stage_accumulators<Tile::MI, Tile::NI, OT, false>(
      acc, smem, kStride, warp / Tile::kWarpsN * Tile::WM, warp % Tile::kWarpsN * Tile::WN,
      tid & 31);
  __syncthreads();
  for (int id = tid; id < Tile::BM * kPerRow; id += Tile::kThreads) {
    const int r = id / kPerRow, cl = id % kPerRow * kVec;
    const int row = m0 + r, col = n0 + cl;
    if (row >= g.m || col >= g.n) continue;
    const unsigned char* s = smem + (r * kStride + cl) * kBytes;
    unsigned char* o = out + (std::int64_t(row) * g.n + col) * kBytes;
    if (g.n % kVec == 0)
      *reinterpret_cast<uint4*>(o) = *reinterpret_cast<const uint4*>(s);
    else
      for (int e = 0; e < kVec && col + e < g.n; ++e)
        memcpy(o + e * kBytes, s + e * kBytes, kBytes);
  }
}

template <class Tile, MmaDtype T, bool kAsync>
__global__ void __launch_bounds__(Tile::kThreads, Tile::kMinBlocks)
    mma_matmul_kernel(const void* __restrict__ a, const void* __restrict__ bm, void* __restrict__ c,
                      const Gemm g, int tiles_m, int tiles_n, int splits,
                      float* __restrict__ partial) {
#if !BENCH_MMA_OK
  __trap();  // built for an architecture without mma.sync bf16/tf32: never launched there
#endif
  using L = MatmulLayout<Tile, T>;
  using BFrag = bench::MmaBRowsK<L::kBStride, T>;
  extern __shared__ __align__(16) unsigned char smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / Tile::kWarpsN, warp_n = warp % Tile::kWarpsN;
  const int split = blockIdx.y;
  const MatmulBlockWork work = matmul_block_work(blockIdx.x, tiles_m, tiles_n, Tile::BM, Tile::BN,
                                                 g.k, L::BK, split, splits);
  const int m0 = work.m0, n0 = work.n0, first = work.first, slices = work.slices;
  const bench::LdmatrixRow arow = bench::ldmatrix_a_row(lane);
  const unsigned a_lane =
      (warp_m * Tile::WM + arow.row) * bench::kMmaRowStride + arow.chunk * bench::kMmaVecBytes;
  const unsigned b_lane = L::kAStage + warp_n * Tile::WN * L::kBytes + BFrag::lane_offset(lane);
  const unsigned smem_base = bench::shared_address(smem);

  for (std::int64_t batch = blockIdx.z; batch < g.b; batch += gridDim.z) {
    const auto* ab = static_cast<const unsigned char*>(a) + batch * g.m * g.k * L::kBytes;
    bench::MmaRowSlice<Tile::BM, Tile::kThreads, T, kAsync> aload(ab, g.m, g.k, m0, tid);
    const bench::MmaKRowsSlice<L::BK, Tile::BN, Tile::kThreads, T, kAsync, L::kAStage> bload{
        static_cast<const unsigned char*>(bm) + batch * g.k * g.n * L::kBytes, g.k, g.n, n0, tid};

    // Prologue: the first kStages - 1 slices, one commit group per slice (empty ones too, so
    // that wait_group counts slices).
#pragma unroll
    for (int s = 0; s < Tile::kStages - 1; ++s) {
      if (s < slices) {
        aload.copy((first + s) * L::BK, smem + s * L::kStage);
        bload.copy((first + s) * L::BK, smem + s * L::kStage);
      }
      bench::cp_async_commit();
    }
    float acc[Tile::MI][Tile::NI][4];
    bench::zero_accumulators(acc);
    int stage = 0;  // slice s lives in stage s % kStages
    for (int s = 0; s < slices; ++s) {
      bench::cp_async_wait<Tile::kStages - 2>();  // this thread's copies of slice s have landed
      if constexpr (kAsync && T == MmaDtype::tf32) {
        aload.round_tf32(smem + stage * L::kStage);
        bload.round_tf32(smem + stage * L::kStage);
      }
      // Everyone's copies of slice s are visible, and everyone is done with slice s - 1, whose
      // stage the next copies overwrite.
      __syncthreads();
      const int next = s + Tile::kStages - 1;
      const int next_stage = stage == 0 ? Tile::kStages - 1 : stage - 1;
      if (next < slices) {
        aload.copy((first + next) * L::BK, smem + next_stage * L::kStage);
        bload.copy((first + next) * L::BK, smem + next_stage * L::kStage);
      }
      bench::cp_async_commit();
      const unsigned st = smem_base + stage * L::kStage;
      bench::mma_warp_slice<Tile::MI, Tile::NI, T, BFrag>(acc, st + a_lane, st + b_lane);
      stage = stage + 1 == Tile::kStages ? 0 : stage + 1;
    }
    bench::cp_async_wait<0>();
    __syncthreads();  // the stages are free for the output tile

    const std::int64_t c_offset = batch * g.m * g.n;
    if constexpr (Tile::kCanSplit) {
      if (splits > 1) {
        store_tile<Tile, MmaDtype::tf32>(
            acc, smem,
            reinterpret_cast<unsigned char*>(partial + split * g.b * g.m * g.n + c_offset), g, m0,
            n0);
        __syncthreads();  // the next batch's prologue overwrites the staged tile
        continue;
      }
    }
    store_tile<Tile, T>(acc, smem, static_cast<unsigned char*>(c) + c_offset * L::kBytes, g, m0,
                        n0);
    __syncthreads();  // the next batch's prologue overwrites the staged tile
  }
}

// ---- Launches -----------------------------------------------------------------------------------

// plan_of (matmul_plan.cpp) splits K only on the 64x64 tiles, whose FP32 staging fits.
static_assert(Mma64x64::kCanSplit && Mma64x64Regs::kCanSplit && !Mma128x128::kCanSplit);

Gemm gemm_of(const Problem& p) {
  return {p.b, int(p.m), int(p.n), int(p.k)};
}

void launch_sgemm(const OpArgs& args, const Plan& plan) {
  const Problem& p = *args.p;
  const auto* a = static_cast<const float*>(args.inputs[0]);
  const auto* b = static_cast<const float*>(args.inputs[1]);
  float* c =
      plan.splits > 1 ? static_cast<float*>(args.workspace) : static_cast<float*>(args.output);
  const std::int64_t split_stride = p.b * p.m * p.n;
  // Grid z is the batch, at most 65535 a launch.
  for (std::int64_t b0 = 0; b0 < p.b; b0 += 65535) {
    const std::int64_t nb = std::min<std::int64_t>(p.b - b0, 65535);
    sgemm_kernel<<<dim3(unsigned(plan.tiles), unsigned(plan.splits), unsigned(nb)), Sgemm::kThreads,
                   0, args.stream>>>(a + b0 * p.m * p.k, b + b0 * p.k * p.n, c + b0 * p.m * p.n,
                                     gemm_of(p), int((p.m + 127) / 128), int((p.n + 127) / 128),
                                     split_stride);
    CUDA_CHECK_LAST_LAUNCH();
  }
}

template <class Tile, MmaDtype T, bool kAsync>
void launch_mma(const OpArgs& args, const Plan& plan) {
  const Problem& p = *args.p;
  const auto kernel = mma_matmul_kernel<Tile, T, kAsync>;
  constexpr int kShared = MatmulLayout<Tile, T>::kShared;
  static const bool opted_in = bench::allow_shared_bytes(kernel, kShared);
  (void)opted_in;
  // Grid z is the batch; blocks loop over it beyond 65535.
  const dim3 grid(unsigned(plan.tiles), unsigned(plan.splits),
                  unsigned(std::min<std::int64_t>(p.b, 65535)));
  kernel<<<grid, Tile::kThreads, kShared, args.stream>>>(
      args.inputs[0], args.inputs[1], args.output, gemm_of(p), int((p.m + Tile::BM - 1) / Tile::BM),
      int((p.n + Tile::BN - 1) / Tile::BN), plan.splits, static_cast<float*>(args.workspace));
  CUDA_CHECK_LAST_LAUNCH();
}

template <MmaDtype T>
void launch_mma(const OpArgs& args, const Plan& plan) {
  if (!vector_rows(*args.p))
    launch_mma<Mma64x64Regs, T, false>(args, plan);
  else if (plan.bm == 128)
    launch_mma<Mma128x128, T, true>(args, plan);
  else
    launch_mma<Mma64x64, T, true>(args, plan);
}

}  // namespace

void split_reduce_fp32(const float* partial, int splits, std::int64_t elements, float* c,
                       cudaStream_t stream) {
  launch_split_reduce<MmaDtype::tf32>(partial, splits, elements, c, stream);
}

void matmul_launch(const OpArgs& args, int variant) {
  const Problem& p = *args.p;
  for (const void* ptr : {args.inputs[0], args.inputs[1], static_cast<const void*>(args.output)})
    if (reinterpret_cast<std::uintptr_t>(ptr) % 16 != 0)
      throw std::invalid_argument("matmul: tensors must be 16-byte aligned");
  const bool fp32 = p.dtype == DataType::fp32 || p.dtype == DataType::tf32;
  if (variant == 1) {
    if (fp32) return launch_naive<float>(args);
    if (p.dtype == DataType::fp16) return launch_naive<__half>(args);
    return launch_naive<__nv_bfloat16>(args);
  }
  if (engine_variant(variant) && engine_runs(p)) return engine_launch(args, variant);
  if (variant == kSkinnyVariant) return skinny_launch(args);
  if (sgemm_variant(variant)) return sgemm_launch(args, variant);
  if (variant == kTf32x3Variant) return tf32x3_launch(args);
  if ((variant != 2 && variant != 3) || (variant == 2) != (p.dtype == DataType::fp32))
    throw std::logic_error("matmul: variant " + std::to_string(variant) + " does not run " +
                           bench::to_string(p.dtype));
  const Plan plan = plan_of(p, variant);
  if (plan.splits > 1 && !args.workspace)
    throw std::logic_error("matmul: split-K needs the workspace (workspace_bytes)");
  const MmaDtype t = mma_dtype(p.dtype);  // tf32 also for variant 2: FP32 partials and output
  if (variant == 2)
    launch_sgemm(args, plan);
  else if (t == MmaDtype::tf32)
    launch_mma<MmaDtype::tf32>(args, plan);
  else if (t == MmaDtype::fp16)
    launch_mma<MmaDtype::fp16>(args, plan);
  else
    launch_mma<MmaDtype::bf16>(args, plan);
  if (plan.splits <= 1) return;
  const auto* partial = static_cast<const float*>(args.workspace);
  const std::int64_t elements = p.b * p.m * p.n;
  if (t == MmaDtype::tf32)
    launch_split_reduce<MmaDtype::tf32>(partial, plan.splits, elements, args.output, args.stream);
  else if (t == MmaDtype::fp16)
    launch_split_reduce<MmaDtype::fp16>(partial, plan.splits, elements, args.output, args.stream);
  else
    launch_split_reduce<MmaDtype::bf16>(partial, plan.splits, elements, args.output, args.stream);
}

}  // namespace ops::cuda
