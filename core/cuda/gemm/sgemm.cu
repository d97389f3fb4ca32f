// The GEMM engine's strict-FP32 SGEMMs on CUDA cores (core/cuda/gemm/sgemm.hpp). Written from
// the techniques of the best-known SGEMMs: CUTLASS's SIMT policy
// (cutlass/gemm/threadblock/default_mma_core_simt.h and its sm80 multistage pipeline) and
// siboehm's warp-tiling kernel ("How to optimize a CUDA matmul kernel").
//
// The kernel, per block of (bm / wm) x (bn / wn) warps (one template instance per configuration
// of kSgemmConfigs, operand layout and epilogue family):
//   - shared memory: `stages` stages, each A's slice as As[k][m] (m contiguous, rows padded by 4
//     floats) and B's as Bs[k][n] (padded by 4 floats where B is K-major); cp.async copies keep
//     stages - 1 slices in flight, one barrier a slice (CUTLASS's multistage loop: wait for slice
//     s, barrier, issue slice s + stages - 1 into the stage slice s - 1 left, multiply slice s).
//   - an operand whose rows run along k (A row-major, B K-major): 4-byte cp.async per value,
//     which transposes on the way, so any k works; 8 lanes read 32 contiguous bytes of a row and
//     write 8 k rows of the stage whose stride (4 mod 32 floats) puts the warp's 32 stores in 32
//     banks. An operand whose rows run along m or n (A M-major, B row-major): 16-byte cp.async
//     where that extent % 4 == 0 (rows 16-byte aligned), else 4-byte copies. Values past m, n or
//     k are zero-filled by the copy (src-size 0).
//   - warp tiling: a warp owns a wm x wn tile; its lanes stand lane_rows x (32 / lane_rows), each
//     with 4x4 blocks of outputs repeated every lane_rows * 4 rows and every (32 / lane_rows) * 4
//     columns, so that each k step reads A's and B's fragments as float4s (A: lane_rows distinct
//     addresses, B: 32 / lane_rows, each at most 128 contiguous bytes: one wavefront, no bank
//     conflict) and runs (wm / lane_rows) x (wn * lane_rows / 32) FMAs per thread on them. The k
//     loop of a slice is fully unrolled.
//   - fragments (frag_pipeline): two register buffers, step kk + 1's loaded while step kk's are
//     multiplied, across slices too (the barrier sits in a slice's last step, CUTLASS's
//     mma_multistage.h); the others load each step's fragments before its FMAs and leave the
//     overlap to the compiler's scheduling of the unrolled loop, which cannot cross the barrier.
//   - epilogue: each 4x4 block's rows as float4 stores where n % 4 == 0, else value by value,
//     inside m and n. The fused family applies the epilogue's kind (uniform over the grid) to
//     each value first, and for dgelu_erf sums each thread's columns, then the lanes of a column
//     by shuffles, one atomic add per column and warp row. With split-K (grid y) the raw FP32
//     partials go to the workspace and split_epilogue_kernel sums them in split order, applying
//     the epilogue there.
//   - order: output tiles in groups of 8 tile rows, column-major within a group (blocks running
//     together share A and B in L2); the batch is grid z (65535 a launch, launched again beyond).
//
// Instances built (compile time counts): the op suite's configurations 11-20 with row-major
// operands and the identity epilogue; 64 and 32 with every layout the MLP's step uses (A
// row-major or M-major, B row-major or K-major; not both transposed) and the fused epilogue
// family.
//
// Build: part of bench_gemm_simt (with sgemm_plan.cpp: the plans and checks); sm_80 or newer
// (cp.async; elsewhere the kernels __trap() and sgemm_unsupported_reason says no). Registers and
// spills (sm_90, CUDA 13.0):
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c core/cuda/gemm/sgemm.cu -o /dev/null
//   v11 128x128x8, 256 threads, 4 stages: 128 registers (the cap of 2 blocks/SM); v12
//   128x128x16, 3 stages: 128; v13 128x128x16, 128 threads of 16x8, 3 stages: 217; v14
//   128x256x8, 256 threads of 16x8, 3 stages, 1 block/SM: 217; v16 128x128x16, 4 stages,
//   fragments double-buffered: 126; v17 256x128x16, 512 threads of 8x8, 3 stages, 1 block/SM,
//   double-buffered: 128 (the cap of 512 threads); v18 128x256x16, 256 threads of 16x8, 4
//   stages, 1 block/SM, double-buffered: 214; v19 128x256x32, 3 stages, and v20 256x128x16, 8
//   warps of 64x64, 4 stages (both 1 block/SM, double-buffered): 213-217; no spills.
#include "core/cuda/gemm/sgemm.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/gemm/block_work.cuh"
#include "core/cuda/gemm/gemm_epilogue.cuh"  // gelu_erf, gelu_tanh, gelu_erf_grad
#include "core/cuda/mma.cuh"

namespace bench::gemm {
namespace {

// A configuration's derived sizes; kBKMajor: B is K-major (its stage rows padded).
template <int kIndex, bool kBKMajor>
struct Sg {
  static constexpr SgemmConfig c = kSgemmConfigs[kIndex];
  static constexpr int BM = c.bm, BN = c.bn, BK = c.bk, WM = c.wm, WN = c.wn;
  static constexpr int kStages = c.stages, kMinBlocks = c.min_blocks;
  static constexpr bool kFragPipeline = c.frag_pipeline;
  static constexpr int kWarpsN = BN / WN, kWarps = (BM / WM) * kWarpsN, kThreads = kWarps * 32;
  static constexpr int LY = c.lane_rows, LX = 32 / LY;          // lanes along m and along n
  static constexpr int HM = WM / (LY * 4), HN = WN / (LX * 4);  // 4x4 blocks a thread
  static constexpr int TM = HM * 4, TN = HN * 4;
  // Floats of a stage row: As always padded (4 mod 32: conflict-free transposing stores), Bs
  // where its copies transpose.
  static constexpr int kAStride = BM + 4, kBStride = BN + (kBKMajor ? 4 : 0);
  static constexpr int kAFloats = BK * kAStride, kBFloats = BK * kBStride;
  static constexpr int kStageFloats = kAFloats + kBFloats;
  static constexpr int kSharedBytes = kStages * kStageFloats * 4;
  static_assert(BM % WM == 0 && BN % WN == 0 && 32 % LY == 0, "warps tile the block");
  static_assert(WM % (LY * 4) == 0 && WN % (LX * 4) == 0, "4x4 blocks tile the warp tile");
  static_assert(kStages >= 2, "a pipeline");
  static_assert(!kFragPipeline || BK % 2 == 0, "slice s + 1's first fragments go to buffer 0");
};

// The problem as the kernel sees it (m, n, k and the tile count in int:
// sgemm_unsupported_reason).
struct Dims {
  int m, n, k;
};

// 4 bytes global -> shared, cached in L1 (.ca: the 8 lanes of a row piece share a sector);
// src_bytes 0 writes a zero and reads nothing (src must still be a valid address).
__device__ __forceinline__ void cp_async_4(unsigned dst, const void* src, int src_bytes) {
#if BENCH_MMA_OK
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
#endif
}

// The copies of one operand's slices into stages of [BK][kStride] floats (row r of the stage
// holds k = r, its columns the operand's R extent from r0), one slice each call (the source
// pointer and k0 walk along k, so that no per-copy address outlives a call).
//   kAlongK: the operand's rows run along k (X[r][k], rows of `k` values): copy j of a thread is
//     value (row0 + jr * kRowsPerCopy, jk * 8 + k_lo) of the slice (jr = j % kPasses, jk = j /
//     kPasses); a warp's copy is 4 rows x 8 consecutive k (32-byte pieces of rows), stored at
//     [k][row].
//   else: X[k][r], rows of `extent` values: copy j is the float4 at (k_row0 + j * kRowsPerCopy,
//     col) of the slice, or its values one by one where extent % 4 != 0.
template <int kThreads, int BR, int BK, int kStride, bool kAlongK>
struct SliceCopy {
  static constexpr int kRowsPerCopy = kAlongK ? kThreads / 8 : kThreads / (BR / 4);
  static constexpr int kPasses = kAlongK ? BR / kRowsPerCopy : 1;
  static constexpr int kCopies = kAlongK ? kPasses * (BK / 8) : BK / kRowsPerCopy;
  static_assert(!kAlongK || (BK % 8 == 0 && BR % kRowsPerCopy == 0 && kPasses <= 32),
                "whole row pieces");
  static_assert(kAlongK || (kThreads % (BR / 4) == 0 && BK % kRowsPerCopy == 0),
                "whole float4 rows");

  const float* base;  // the matrix: the source of zero-filling copies
  const float* ptr;   // this thread's first source in the next slice
  unsigned dst;       // its first destination in stage 0
  int k0, k, extent;
  unsigned rows_ok;  // kAlongK: bit jr, row row0 + jr * kRowsPerCopy inside the extent
  int col_in;        // else: the values of this thread's four columns inside the extent (0-4)
  bool vec;

  // x: the matrix; r0: the tile's first row (kAlongK) or column; extent: the rows' (kAlongK) or
  // columns' count; smem: the operand's offset in stage 0 (bytes, shared window).
  __device__ __forceinline__ SliceCopy(const float* x, int r0, int extent_, int k_, int first_k,
                                       unsigned smem, int tid)
      : base(x), k0(first_k), k(k_), extent(extent_), rows_ok(0), col_in(0), vec(false) {
    if constexpr (kAlongK) {
      const int k_lo = tid % 8, row0 = tid / 8;
#pragma unroll
      for (int jr = 0; jr < kPasses; ++jr)
        rows_ok |= unsigned(r0 + row0 + jr * kRowsPerCopy < extent) << jr;
      ptr = x + std::int64_t(r0 + row0) * k + k_lo + k0;
      dst = smem + unsigned((k_lo * kStride + row0) * 4);
    } else {
      const int col = tid % (BR / 4) * 4, k_row0 = tid / (BR / 4);
      const int left = extent - (r0 + col);
      col_in = left >= 4 ? 4 : (left > 0 ? left : 0);
      vec = extent % 4 == 0;
      ptr = x + std::int64_t(k0 + k_row0) * extent + r0 + col;
      dst = smem + unsigned((k_row0 * kStride + col) * 4);
    }
  }

  // Issues this thread's copies of the next slice into the stage at byte offset st.
  __device__ __forceinline__ void copy(unsigned st, int tid) {
    if constexpr (kAlongK) {
      const int k_lo = tid % 8;
#pragma unroll
      for (int j = 0; j < kCopies; ++j) {
        const int jr = j % kPasses, jk = j / kPasses;
        const bool ok = (rows_ok >> jr & 1u) && k0 + jk * 8 + k_lo < k;
        const float* src = ptr + std::int64_t(jr * kRowsPerCopy) * k + jk * 8;
        cp_async_4(dst + st + unsigned((jk * 8 * kStride + jr * kRowsPerCopy) * 4), ok ? src : base,
                   ok ? 4 : 0);
      }
      ptr += BK;
    } else {
      const int k_row0 = tid / (BR / 4);
#pragma unroll
      for (int j = 0; j < kCopies; ++j) {
        const bool k_ok = k0 + k_row0 + j * kRowsPerCopy < k;
        const float* src = ptr + std::int64_t(j * kRowsPerCopy) * extent;
        const unsigned d = dst + st + unsigned(j * kRowsPerCopy * kStride * 4);
        if (vec) {
          const bool ok = k_ok && col_in == 4;
          bench::cp_async_16(d, ok ? src : base, ok ? 16 : 0);
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const bool ok = k_ok && e < col_in;
            cp_async_4(d + 4 * e, ok ? src + e : base, ok ? 4 : 0);
          }
        }
      }
      ptr += std::int64_t(BK) * extent;
    }
    k0 += BK;
  }
};

// The fused epilogue family: the kind is uniform over the grid (a branch per value that every
// thread takes alike), one kernel for every kind. Tensors FP32, at the element's index.
struct Epi {
  EpilogueKind kind = EpilogueKind::identity;
  const float* bias = nullptr;
  const float* residual = nullptr;
  float* aux = nullptr;
  float* column_sums = nullptr;
};

// The epilogue of value v at element index `at`, column j.
__device__ __forceinline__ float apply(const Epi& e, std::int64_t at, int j, float v) {
  switch (e.kind) {
    case EpilogueKind::identity:
      return v;
    case EpilogueKind::residual:
      return v + e.residual[at];
    case EpilogueKind::dgelu_erf:
      return v * epilogue::gelu_erf_grad(e.aux[at]);
    default:
      break;
  }
  v += e.bias[j];
  if (e.kind == EpilogueKind::bias_gelu_erf_aux) e.aux[at] = v;
  if (e.kind == EpilogueKind::bias_gelu_erf || e.kind == EpilogueKind::bias_gelu_erf_aux)
    return epilogue::gelu_erf(v);
  if (e.kind == EpilogueKind::bias_gelu_tanh) return epilogue::gelu_tanh(v);
  return v;  // bias
}

template <int kIndex, bool kAMMajor, bool kBKMajor, bool kFused>
__global__ void __launch_bounds__(Sg<kIndex, kBKMajor>::kThreads, Sg<kIndex, kBKMajor>::kMinBlocks)
    sgemm_kernel(const float* __restrict__ a, const float* __restrict__ bm, float* __restrict__ c,
                 const Dims g, int tiles_m, int tiles_n, std::int64_t split_stride, const Epi epi) {
#if !BENCH_MMA_OK
  __trap();  // built for an architecture without cp.async: never launched there
#endif
  using T = Sg<kIndex, kBKMajor>;
  extern __shared__ __align__(16) float smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const MatmulBlockWork work = fp32_matmul_block<T::BM, T::BN, T::BK>(
      a, bm, c, g.m, g.n, g.k, tiles_m, tiles_n, split_stride);
  const int m0 = work.m0, n0 = work.n0, first = work.first, slices = work.slices;
  const unsigned smem_base = bench::shared_address(smem);

  SliceCopy<T::kThreads, T::BM, T::BK, T::kAStride, !kAMMajor> a_copy(
      a, m0, g.m, g.k, first * T::BK, smem_base, tid);
  SliceCopy<T::kThreads, T::BN, T::BK, T::kBStride, kBKMajor> b_copy(
      bm, n0, g.n, g.k, first * T::BK, smem_base + unsigned(T::kAFloats * 4), tid);
  auto copy_next_slice = [&](int stage) {
    const unsigned st = unsigned(stage * T::kStageFloats * 4);
    a_copy.copy(st, tid);
    b_copy.copy(st, tid);
  };

  // Prologue: slices 0 .. stages - 2, one commit group each (empty ones too, so that wait_group
  // counts slices).
#pragma unroll
  for (int s = 0; s < T::kStages - 1; ++s) {
    if (s < slices) copy_next_slice(s);
    bench::cp_async_commit();
  }

  const int warp_m0 = warp / T::kWarpsN * T::WM, warp_n0 = warp % T::kWarpsN * T::WN;
  const int ly = lane / T::LX, lx = lane % T::LX;
  const int a_off = warp_m0 + ly * 4, b_off = T::kAFloats + warp_n0 + lx * 4;
  float acc[T::TM][T::TN] = {};
  // One k step's fragments from a stage: A's TM and B's TN values as float4s.
  auto load_fragments = [&](const float* st, int kk, float(&ar)[T::TM], float(&br)[T::TN]) {
#pragma unroll
    for (int h = 0; h < T::HM; ++h) {
      const float4 x =
          *reinterpret_cast<const float4*>(st + kk * T::kAStride + a_off + h * T::LY * 4);
      ar[4 * h + 0] = x.x, ar[4 * h + 1] = x.y, ar[4 * h + 2] = x.z, ar[4 * h + 3] = x.w;
    }
#pragma unroll
    for (int h = 0; h < T::HN; ++h) {
      const float4 y =
          *reinterpret_cast<const float4*>(st + kk * T::kBStride + b_off + h * T::LX * 4);
      br[4 * h + 0] = y.x, br[4 * h + 1] = y.y, br[4 * h + 2] = y.z, br[4 * h + 3] = y.w;
    }
  };
  auto multiply = [&](const float(&ar)[T::TM], const float(&br)[T::TN]) {
#pragma unroll
    for (int i = 0; i < T::TM; ++i)
#pragma unroll
      for (int j = 0; j < T::TN; ++j) acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
  };
  int stage = 0;  // slice s lives in stage s % stages
  if constexpr (!T::kFragPipeline) {
    for (int s = 0; s < slices; ++s) {
      bench::cp_async_wait<T::kStages - 2>();  // this thread's copies of slice s have landed
      // Everyone's copies of slice s are visible, and everyone is done with slice s - 1, whose
      // stage the next copies overwrite.
      __syncthreads();
      const int next = s + T::kStages - 1;
      if (next < slices) copy_next_slice(stage == 0 ? T::kStages - 1 : stage - 1);
      bench::cp_async_commit();
      const float* st = smem + stage * T::kStageFloats;
#pragma unroll
      for (int kk = 0; kk < T::BK; ++kk) {
        float ar[T::TM], br[T::TN];
        load_fragments(st, kk, ar, br);
        multiply(ar, br);
      }
      stage = stage + 1 == T::kStages ? 0 : stage + 1;
    }
  } else {
    // Fragments in two register buffers (CUTLASS's warp-level pipelining, mma_multistage.h):
    // step kk multiplies the fragments that step kk - 1 loaded while it loads step kk + 1's; the
    // last step of slice s first waits for slice s + 1 and crosses the barrier (after it, no one
    // reads slice s: its last fragments are in registers), refills slice s's stage with slice
    // s + stages, then loads slice s + 1's first fragments, so that the FMAs never wait on
    // shared memory at a slice's start. Slices s + 1 .. s + stages are in flight at that point.
    bench::cp_async_wait<T::kStages - 2>();  // slice 0 has landed
    __syncthreads();
    if (T::kStages - 1 < slices) copy_next_slice(T::kStages - 1);  // a stage no one reads yet
    bench::cp_async_commit();
    float af[2][T::TM], bf[2][T::TN];
    load_fragments(smem, 0, af[0], bf[0]);
    for (int s = 0; s < slices; ++s) {
      const float* st = smem + stage * T::kStageFloats;
      const int next_stage = stage + 1 == T::kStages ? 0 : stage + 1;
#pragma unroll
      for (int kk = 0; kk < T::BK; ++kk) {
        if (kk + 1 < T::BK) {
          load_fragments(st, kk + 1, af[(kk + 1) % 2], bf[(kk + 1) % 2]);
        } else {
          // Groups committed: slices 0 .. s + stages - 1; slice s + 1 is the oldest needed.
          bench::cp_async_wait<T::kStages - 2>();
          __syncthreads();
          if (s + T::kStages < slices) copy_next_slice(stage);
          bench::cp_async_commit();
          // Past the last slice this reads a stage's stale values, never used.
          load_fragments(smem + next_stage * T::kStageFloats, 0, af[0], bf[0]);
        }
        multiply(af[kk % 2], bf[kk % 2]);
      }
      stage = next_stage;
    }
  }
  bench::cp_async_wait<0>();  // no copy outlives the block (the empty trailing groups)

  const bool c_vec = g.n % 4 == 0;
  if constexpr (!kFused) {
#pragma unroll
    for (int i = 0; i < T::TM; ++i) {
      const int row = m0 + warp_m0 + (i / 4) * T::LY * 4 + ly * 4 + i % 4;
      if (row >= g.m) continue;
#pragma unroll
      for (int h = 0; h < T::HN; ++h) {
        const int col = n0 + warp_n0 + h * T::LX * 4 + lx * 4;
        store_four_columns(c + std::int64_t(row) * g.n + col, col, g.n, c_vec, &acc[i][4 * h]);
      }
    }
  } else {
    // Element indices of the epilogue's tensors count from batch blockIdx.z's matrix (the
    // launch moved them to its first batch).
    const std::int64_t batch0 = std::int64_t(blockIdx.z) * g.m * g.n;
    float sums[T::TN] = {};
#pragma unroll
    for (int i = 0; i < T::TM; ++i) {
      const int row = m0 + warp_m0 + (i / 4) * T::LY * 4 + ly * 4 + i % 4;
      if (row >= g.m) continue;
#pragma unroll
      for (int h = 0; h < T::HN; ++h) {
        const int col = n0 + warp_n0 + h * T::LX * 4 + lx * 4;
        const std::int64_t at = batch0 + std::int64_t(row) * g.n + col;
        float v[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          v[e] = col + e < g.n ? apply(epi, at + e, col + e, acc[i][4 * h + e]) : 0.0f;
          sums[4 * h + e] += v[e];
        }
        store_four_columns(c + std::int64_t(row) * g.n + col, col, g.n, c_vec, v);
      }
    }
    if (epi.kind == EpilogueKind::dgelu_erf && epi.column_sums) {
      // The lanes of one column differ in ly (lane = ly * LX + lx): sum over them, then the
      // lanes of ly 0 add the warp's column sums.
#pragma unroll
      for (int j = 0; j < T::TN; ++j)
#pragma unroll
        for (int o = T::LX; o < 32; o <<= 1) sums[j] += __shfl_xor_sync(0xFFFFFFFFu, sums[j], o);
      if (ly == 0) {
#pragma unroll
        for (int h = 0; h < T::HN; ++h)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int col = n0 + warp_n0 + h * T::LX * 4 + lx * 4 + e;
            if (col < g.n) atomicAdd(epi.column_sums + col, sums[4 * h + e]);
          }
      }
    }
  }
}

// Split-K's second pass: c = epilogue(the sum of `splits` partials in split order). A block of
// kReduceThreads threads takes 4 x kReduceThreads columns of kReduceRows rows of one batch: each
// thread four columns (a float4 where n % 4 == 0), one atomic add per column for dgelu_erf's
// column sums.
constexpr int kReduceThreads = 64, kReduceRows = 8;
template <bool kFused>
__global__ void __launch_bounds__(kReduceThreads)
    split_epilogue_kernel(const float* __restrict__ partial, int splits, std::int64_t stride,
                          float* __restrict__ c, int m, int n, const Epi epi) {
  const int col = (blockIdx.x * kReduceThreads + threadIdx.x) * 4;
  if (col >= n) return;
  const int row0 = blockIdx.y * kReduceRows;
  const std::int64_t batch0 = std::int64_t(blockIdx.z) * m * n;
  const bool vec = n % 4 == 0;
  float sums[4] = {0, 0, 0, 0};
  const int row_end = row0 + kReduceRows < m ? row0 + kReduceRows : m;
  for (int r = row0; r < row_end; ++r) {
    const std::int64_t at = batch0 + std::int64_t(r) * n + col;
    float v[4] = {0, 0, 0, 0};
    for (int s = 0; s < splits; ++s) {
      const float* p = partial + s * stride + at;
      if (vec) {
        const float4 x = *reinterpret_cast<const float4*>(p);
        v[0] += x.x, v[1] += x.y, v[2] += x.z, v[3] += x.w;
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (col + e < n) v[e] += p[e];
      }
    }
    if constexpr (kFused) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        v[e] = col + e < n ? apply(epi, at + e, col + e, v[e]) : 0.0f;
        sums[e] += v[e];
      }
    }
    store_four_columns(c + at, col, n, vec, v);
  }
  if (kFused && epi.kind == EpilogueKind::dgelu_erf && epi.column_sums)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (col + e < n) atomicAdd(epi.column_sums + col + e, sums[e]);
}

template <int kIndex, bool kAMMajor, bool kBKMajor, bool kFused>
void launch(const SgemmShape& s, const SgemmPlan& plan, const float* a, const float* b, float* c,
            const Epi& epi, float* workspace, cudaStream_t stream) {
  using T = Sg<kIndex, kBKMajor>;
  const auto kernel = sgemm_kernel<kIndex, kAMMajor, kBKMajor, kFused>;
  static const bool opted_in = bench::allow_shared_bytes(kernel, T::kSharedBytes);
  (void)opted_in;
  const bool split = plan.splits > 1;
  float* out = split ? workspace : c;
  const Epi kernel_epi = split ? Epi{} : epi;  // the partials are raw sums
  const std::int64_t mn = s.m * s.n, split_stride = s.batch * mn;
  const Dims g{int(s.m), int(s.n), int(s.k)};
  const int tiles_m = int((s.m + T::BM - 1) / T::BM), tiles_n = int((s.n + T::BN - 1) / T::BN);
  for (std::int64_t b0 = 0; b0 < s.batch; b0 += 65535) {  // grid z: the batch, 65535 a launch
    const std::int64_t nb = std::min<std::int64_t>(s.batch - b0, 65535);
    Epi e = kernel_epi;
    if (e.residual) e.residual += b0 * mn;
    if (e.aux) e.aux += b0 * mn;
    kernel<<<dim3(unsigned(plan.tiles), unsigned(plan.splits), unsigned(nb)), T::kThreads,
             T::kSharedBytes, stream>>>(a + b0 * s.m * s.k, b + b0 * s.k * s.n, out + b0 * mn, g,
                                        tiles_m, tiles_n, split_stride, e);
    CUDA_CHECK_LAST_LAUNCH();
  }
  if (!split) return;
  const auto reduce = kFused ? split_epilogue_kernel<true> : split_epilogue_kernel<false>;
  const unsigned gx = unsigned((s.n + 4 * kReduceThreads - 1) / (4 * kReduceThreads));
  const unsigned gy = unsigned((s.m + kReduceRows - 1) / kReduceRows);
  for (std::int64_t b0 = 0; b0 < s.batch; b0 += 65535) {
    const std::int64_t nb = std::min<std::int64_t>(s.batch - b0, 65535);
    Epi e = epi;
    if (e.residual) e.residual += b0 * mn;
    if (e.aux) e.aux += b0 * mn;
    reduce<<<dim3(gx, gy, unsigned(nb)), kReduceThreads, 0, stream>>>(
        workspace + b0 * mn, plan.splits, split_stride, c + b0 * mn, int(s.m), int(s.n), e);
    CUDA_CHECK_LAST_LAUNCH();
  }
}

// Which instances exist (the file's header): the op suite's configurations row-major with the
// identity epilogue; 64 and 32 with the MLP's layouts and the fused family (the identity as one
// of its kinds).
constexpr bool fused_config(int id) {
  return id == 64 || id == 32;
}

template <int kIndex>
void dispatch(const SgemmShape& s, const SgemmPlan& plan, const float* a, const float* b, float* c,
              const Epi& epi, float* workspace, cudaStream_t stream) {
  if constexpr (fused_config(kSgemmConfigs[kIndex].id)) {
    if (s.a_m_major)
      launch<kIndex, true, false, true>(s, plan, a, b, c, epi, workspace, stream);
    else if (s.b_k_major)
      launch<kIndex, false, true, true>(s, plan, a, b, c, epi, workspace, stream);
    else
      launch<kIndex, false, false, true>(s, plan, a, b, c, epi, workspace, stream);
  } else {
    launch<kIndex, false, false, false>(s, plan, a, b, c, epi, workspace, stream);
  }
}

void check_aligned(const void* p, const char* what) {
  if (!p || reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
    throw std::invalid_argument(std::string("sgemm: ") + what + " must be 16-byte aligned");
}

}  // namespace

void sgemm(const SgemmShape& s, const SgemmPlan& plan, const float* a, const float* b, float* c,
           const Epilogue& e, void* workspace, cudaStream_t stream) {
  if (const std::string why = sgemm_unsupported_reason(s, e.kind); !why.empty())
    throw std::invalid_argument(why);
  const int index = sgemm_index(plan.config);
  if (index < 0) throw std::logic_error("sgemm: no configuration " + std::to_string(plan.config));
  if (!fused_config(plan.config) &&
      (s.a_m_major || s.b_k_major || e.kind != EpilogueKind::identity))
    throw std::invalid_argument("sgemm: configuration " + std::to_string(plan.config) +
                                " is built for row-major operands and the identity epilogue");
  check_aligned(a, "A");
  check_aligned(b, "B");
  check_aligned(c, "C");
  if (plan.splits > 1) check_aligned(workspace, "the split-K workspace");
  Epi epi;
  epi.kind = e.kind;
  epi.bias = static_cast<const float*>(e.bias);
  epi.residual = static_cast<const float*>(e.residual);
  epi.aux = static_cast<float*>(e.aux);
  epi.column_sums = e.column_sums;
  const bool needs_bias = e.kind == EpilogueKind::bias || e.kind == EpilogueKind::bias_gelu_erf ||
                          e.kind == EpilogueKind::bias_gelu_tanh ||
                          e.kind == EpilogueKind::bias_gelu_erf_aux;
  if (needs_bias && !epi.bias) throw std::invalid_argument("sgemm: the epilogue needs its bias");
  if (e.kind == EpilogueKind::residual && !epi.residual)
    throw std::invalid_argument("sgemm: the residual epilogue needs its tensor");
  if ((e.kind == EpilogueKind::bias_gelu_erf_aux || e.kind == EpilogueKind::dgelu_erf) && !epi.aux)
    throw std::invalid_argument("sgemm: the epilogue needs its aux tensor");
  if (e.kind == EpilogueKind::dgelu_erf && e.aux_t)
    throw std::invalid_argument("sgemm: dgelu_erf's transposed copy is not written here");
  float* ws = static_cast<float*>(workspace);
  static_assert(kSgemmConfigCount == 11, "one dispatch per configuration");
  switch (index) {
    case 0:
      return dispatch<0>(s, plan, a, b, c, epi, ws, stream);
    case 1:
      return dispatch<1>(s, plan, a, b, c, epi, ws, stream);
    case 2:
      return dispatch<2>(s, plan, a, b, c, epi, ws, stream);
    case 3:
      return dispatch<3>(s, plan, a, b, c, epi, ws, stream);
    case 4:
      return dispatch<4>(s, plan, a, b, c, epi, ws, stream);
    case 5:
      return dispatch<5>(s, plan, a, b, c, epi, ws, stream);
    case 6:
      return dispatch<6>(s, plan, a, b, c, epi, ws, stream);
    case 7:
      return dispatch<7>(s, plan, a, b, c, epi, ws, stream);
    case 8:
      return dispatch<8>(s, plan, a, b, c, epi, ws, stream);
    case 9:
      return dispatch<9>(s, plan, a, b, c, epi, ws, stream);
    default:
      return dispatch<10>(s, plan, a, b, c, epi, ws, stream);
  }
}

}  // namespace bench::gemm
