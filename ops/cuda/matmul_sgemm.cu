// Variants 11-14 and 16-20 of the op suite's matmul (ops/cuda/matmul_sgemm.hpp): C[b] = A[b] B[b]
// in strict FP32 on CUDA cores, row-major and contiguous, any m, n, k (no alignment beyond the
// tensors' 16 bytes). Written from the techniques of the best-known SGEMMs: CUTLASS's SIMT policy
// (cutlass/gemm/threadblock/default_mma_core_simt.h and its sm80 multistage pipeline) and
// siboehm's warp-tiling kernel ("How to optimize a CUDA matmul kernel"). Variant 12 is fp32's
// default on sm_80+ (the rule and its H100 timings: matmul_plan.cpp); variant 2 (matmul.cu)
// stays for older devices.
//
// The kernel, per block of (bm / wm) x (bn / wn) warps (one template instance per configuration
// of kSgemmConfigs):
//   - shared memory: `stages` stages, each A's slice transposed (As[k][m], m contiguous, rows
//     padded by 4 floats) and B's slice as it is (Bs[k][n]); cp.async copies keep stages - 1
//     slices in flight, one barrier a slice (CUTLASS's multistage loop: wait for slice s, barrier,
//     issue slice s + stages - 1 into the stage slice s - 1 left, multiply slice s).
//   - A: 4-byte cp.async per value, which transposes on the way (A's rows are k-contiguous), so
//     any k works; 8 lanes read 32 contiguous bytes of a row and write 8 k rows of the stage whose
//     stride (bm + 4 = 4 mod 32 floats) puts the warp's 32 stores in 32 banks. B: 16-byte cp.async
//     where n % 4 == 0 (rows 16-byte aligned), else 4-byte copies; values past m, n or k are
//     zero-filled by the copy (src-size 0).
//   - warp tiling: a warp owns a wm x wn tile; its lanes stand lane_rows x (32 / lane_rows), each
//     with 4x4 blocks of outputs repeated every lane_rows * 4 rows and every (32 / lane_rows) * 4
//     columns, so that each k step reads A's and B's fragments as float4s (A: lane_rows distinct
//     addresses, B: 32 / lane_rows, each at most 128 contiguous bytes: one wavefront, no bank
//     conflict) and runs (wm / lane_rows) x (wn * lane_rows / 32) FMAs per thread on them. The k
//     loop of a slice is fully unrolled.
//   - fragments (16-20): two register buffers, step kk + 1's loaded while step kk's are
//     multiplied, across slices too (the barrier sits in a slice's last step, CUTLASS's
//     mma_multistage.h); 11-14 load each step's fragments before its FMAs and leave the overlap
//     to the compiler's scheduling of the unrolled loop, which cannot cross the slice's barrier.
//   - epilogue: each 4x4 block's rows as float4 stores where n % 4 == 0, else value by value,
//     inside m and n; with split-K (grid y) the FP32 partials go to the workspace and matmul.cu's
//     second pass (split_reduce_fp32) sums them in split order.
//   - order: output tiles in groups of 8 tile rows, column-major within a group (blocks running
//     together share A and B in L2); the batch is grid z (65535 a launch, launched again beyond).
//
// Build: part of ops_cuda; sm_80 or newer (cp.async; elsewhere the kernels __trap() and
// sgemm_runs says no). Registers and spills (sm_90, CUDA 13.0: no spills in any kernel here):
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c ops/cuda/matmul_sgemm.cu -o /dev/null
//   v11 128x128x8, 256 threads, 4 stages: 128 registers (the cap of 2 blocks/SM); v12
//   128x128x16, 3 stages: 128; v13 128x128x16, 128 threads of 16x8, 3 stages: 217; v14
//   128x256x8, 256 threads of 16x8, 3 stages, 1 block/SM: 217; v16 128x128x16, 4 stages,
//   fragments double-buffered: 126; v17 256x128x16, 512 threads of 8x8, 3 stages, 1 block/SM,
//   double-buffered: 128 (the cap of 512 threads); v18 128x256x16, 256 threads of 16x8, 4
//   stages, 1 block/SM, double-buffered: 214; v19 128x256x32, 3 stages, and v20 256x128x16, 8
//   warps of 64x64, 4 stages (both 1 block/SM, double-buffered): 213-217. Compile time (the
//   build's nvcc flags, -O3, sm_90, CPU user time): 19.3 s for the first seven kernels, of which
//   16-18 take 3.8 s (15.5 s without them); 19 and 20 about 1.2 s each more.
// Run (on a GPU), each beside cuBLAS's FP32 GEMM in one process:
//   build/experiments/myops --backend own_cuda --backend cublaslt --variant 11
//   --problem matmul:m4096n4096k4096:fp32
#include "ops/cuda/matmul_sgemm.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/mma.cuh"
#include "ops/cuda/launch.cuh"
#include "ops/cuda/matmul_block.cuh"

namespace ops::cuda {
namespace {

// A configuration's derived sizes.
template <int kIndex>
struct Sg {
  static constexpr SgemmConfig c = kSgemmConfigs[kIndex];
  static constexpr int BM = c.bm, BN = c.bn, BK = c.bk, WM = c.wm, WN = c.wn;
  static constexpr int kStages = c.stages, kMinBlocks = c.min_blocks;
  static constexpr bool kFragPipeline = c.frag_pipeline;
  static constexpr int kWarpsN = BN / WN, kWarps = (BM / WM) * kWarpsN, kThreads = kWarps * 32;
  static constexpr int LY = c.lane_rows, LX = 32 / LY;          // lanes along m and along n
  static constexpr int HM = WM / (LY * 4), HN = WN / (LX * 4);  // 4x4 blocks a thread
  static constexpr int TM = HM * 4, TN = HN * 4;
  static constexpr int kAStride = BM + 4;  // floats of an As row: 4 mod 32 (conflict-free stores)
  static constexpr int kAFloats = BK * kAStride, kBFloats = BK * BN;
  static constexpr int kStageFloats = kAFloats + kBFloats;
  static constexpr int kSharedBytes = kStages * kStageFloats * 4;
  // A: 4-byte copies, a thread's kAPasses row steps of kARowsPerCopy for each 8 k of the slice.
  static constexpr int kARowsPerCopy = kThreads / 8, kAPasses = BM / kARowsPerCopy;
  static constexpr int kACopies = kAPasses * (BK / 8);
  // B: 16-byte copies, a thread's rows kBRowsPerCopy apart.
  static constexpr int kBRowsPerCopy = kThreads / (BN / 4), kBCopies = BK / kBRowsPerCopy;
  static_assert(BM % WM == 0 && BN % WN == 0 && 32 % LY == 0, "warps tile the block");
  static_assert(WM % (LY * 4) == 0 && WN % (LX * 4) == 0, "4x4 blocks tile the warp tile");
  static_assert(BK % 8 == 0 && BM % kARowsPerCopy == 0 && kAPasses <= 32, "A: whole row pieces");
  static_assert(kThreads % (BN / 4) == 0 && BK % kBRowsPerCopy == 0, "B: whole float4 rows");
  static_assert(kStages >= 2, "a pipeline");
  static_assert(!kFragPipeline || BK % 2 == 0, "slice s + 1's first fragments go to buffer 0");
};

// The problem as the kernel sees it (m, n, k and the tile count in int: sgemm_runs).
struct SgemmShape {
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

template <int kIndex>
__global__ void __launch_bounds__(Sg<kIndex>::kThreads, Sg<kIndex>::kMinBlocks)
    sgemm_async_kernel(const float* __restrict__ a, const float* __restrict__ bm,
                       float* __restrict__ c, const SgemmShape g, int tiles_m, int tiles_n,
                       std::int64_t split_stride) {
#if !BENCH_MMA_OK
  __trap();  // built for an architecture without cp.async: never launched there
#endif
  using T = Sg<kIndex>;
  extern __shared__ __align__(16) float smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const MatmulBlockWork work = fp32_matmul_block<T::BM, T::BN, T::BK>(
      a, bm, c, g.m, g.n, g.k, tiles_m, tiles_n, split_stride);
  const int m0 = work.m0, n0 = work.n0, first = work.first, slices = work.slices;
  const unsigned smem_base = bench::shared_address(smem);
  const bool b_vec = g.n % 4 == 0;

  // The copies of one slice, the next slice each call (k0 and the two pointers walk along k, so
  // that no per-copy address outlives a call). A: copy j of a thread is value (row0 + jr *
  // kARowsPerCopy, jk * 8 + k_lo) of the slice (jr = j % kAPasses, jk = j / kAPasses); a warp's
  // copy is 4 rows x 8 consecutive k (32-byte pieces of rows), stored at As[k][row]. B: copy j is
  // the float4 at (k_row0 + j * kBRowsPerCopy, col) of the slice.
  const int k_lo = tid % 8, row0 = tid / 8;
  const int col = tid % (T::BN / 4) * 4, k_row0 = tid / (T::BN / 4);
  unsigned a_rows_ok = 0;  // bit jr: row0 + jr * kARowsPerCopy inside m
#pragma unroll
  for (int jr = 0; jr < T::kAPasses; ++jr)
    a_rows_ok |= unsigned(m0 + row0 + jr * T::kARowsPerCopy < g.m) << jr;
  const bool col_ok = n0 + col < g.n;  // with n % 4 == 0: the whole float4
  int k0 = first * T::BK;
  const float* a_ptr = a + std::int64_t(m0 + row0) * g.k + k_lo + k0;
  const float* b_ptr = bm + std::int64_t(k0 + k_row0) * g.n + n0 + col;
  const unsigned a_dst = smem_base + unsigned((k_lo * T::kAStride + row0) * 4);
  const unsigned b_dst = smem_base + unsigned((T::kAFloats + k_row0 * T::BN + col) * 4);
  auto copy_next_slice = [&](int stage) {
    const unsigned st = unsigned(stage * T::kStageFloats * 4);
#pragma unroll
    for (int j = 0; j < T::kACopies; ++j) {
      const int jr = j % T::kAPasses, jk = j / T::kAPasses;
      const bool ok = (a_rows_ok >> jr & 1u) && k0 + jk * 8 + k_lo < g.k;
      const float* src = a_ptr + std::int64_t(jr * T::kARowsPerCopy) * g.k + jk * 8;
      cp_async_4(a_dst + st + unsigned((jk * 8 * T::kAStride + jr * T::kARowsPerCopy) * 4),
                 ok ? src : a, ok ? 4 : 0);
    }
#pragma unroll
    for (int j = 0; j < T::kBCopies; ++j) {
      const bool k_ok = k0 + k_row0 + j * T::kBRowsPerCopy < g.k;
      const float* src = b_ptr + std::int64_t(j * T::kBRowsPerCopy) * g.n;
      const unsigned dst = b_dst + st + unsigned(j * T::kBRowsPerCopy * T::BN * 4);
      if (b_vec) {
        const bool ok = k_ok && col_ok;
        bench::cp_async_16(dst, ok ? src : bm, ok ? 16 : 0);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const bool ok = k_ok && n0 + col + e < g.n;
          cp_async_4(dst + 4 * e, ok ? src + e : bm, ok ? 4 : 0);
        }
      }
    }
    k0 += T::BK;
    a_ptr += T::BK;
    b_ptr += std::int64_t(T::BK) * g.n;
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
      const float4 y = *reinterpret_cast<const float4*>(st + kk * T::BN + b_off + h * T::LX * 4);
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

#pragma unroll
  for (int i = 0; i < T::TM; ++i) {
    const int row = m0 + warp_m0 + (i / 4) * T::LY * 4 + ly * 4 + i % 4;
    if (row >= g.m) continue;
#pragma unroll
    for (int h = 0; h < T::HN; ++h) {
      const int col = n0 + warp_n0 + h * T::LX * 4 + lx * 4;
      store_four_columns(c + std::int64_t(row) * g.n + col, col, g.n, b_vec, &acc[i][4 * h]);
    }
  }
}

template <int kIndex>
void launch(const OpArgs& args, const Plan& plan) {
  using T = Sg<kIndex>;
  const Problem& p = *args.p;
  const auto kernel = sgemm_async_kernel<kIndex>;
  static const bool opted_in = bench::allow_shared_bytes(kernel, T::kSharedBytes);
  (void)opted_in;
  const auto* a = static_cast<const float*>(args.inputs[0]);
  const auto* b = static_cast<const float*>(args.inputs[1]);
  float* c =
      plan.splits > 1 ? static_cast<float*>(args.workspace) : static_cast<float*>(args.output);
  const std::int64_t split_stride = p.b * p.m * p.n;
  const SgemmShape g{int(p.m), int(p.n), int(p.k)};
  const int tiles_m = int((p.m + T::BM - 1) / T::BM), tiles_n = int((p.n + T::BN - 1) / T::BN);
  for (std::int64_t b0 = 0; b0 < p.b; b0 += 65535) {  // grid z: the batch, 65535 a launch
    const std::int64_t nb = std::min<std::int64_t>(p.b - b0, 65535);
    kernel<<<dim3(unsigned(plan.tiles), unsigned(plan.splits), unsigned(nb)), T::kThreads,
             T::kSharedBytes, args.stream>>>(a + b0 * p.m * p.k, b + b0 * p.k * p.n,
                                             c + b0 * p.m * p.n, g, tiles_m, tiles_n, split_stride);
    CUDA_CHECK_LAST_LAUNCH();
  }
}

}  // namespace

bool sgemm_runs(const Problem& p) {
  if (p.op != Op::matmul || p.dtype != DataType::fp32) return false;
  constexpr std::int64_t kMax = std::numeric_limits<int>::max() - 1024;
  if (p.m > kMax || p.n > kMax || p.k > kMax) return false;
  if ((p.m + 127) / 128 * ((p.n + 127) / 128) > kMax) return false;
  return device_sm80();
}

Plan sgemm_plan(const Problem& p, int variant) {
  const SgemmConfig& cfg = sgemm_config(variant);
  Plan plan;
  plan.bm = cfg.bm, plan.bn = cfg.bn, plan.slice_k = cfg.bk;
  plan.tiles = (p.m + cfg.bm - 1) / cfg.bm * ((p.n + cfg.bn - 1) / cfg.bn);
  const int slices = int((p.k + cfg.bk - 1) / cfg.bk);
  plan.splits =
      bench::choose_split_k(plan.tiles * p.b, slices, 1, cfg.min_blocks * sm_count(), 8, 16);
  return plan;
}

std::size_t sgemm_workspace_bytes(const Problem& p, int variant) {
  return sgemm_runs(p) ? partial_bytes(p, sgemm_plan(p, variant)) : 0;
}

void sgemm_launch(const OpArgs& args, int variant) {
  const Plan plan = sgemm_plan(*args.p, variant);
  if (plan.splits > 1 && !args.workspace)
    throw std::logic_error("matmul: split-K needs the workspace (workspace_bytes)");
  static_assert(kSgemmConfigCount == 9, "one launch per configuration");
  switch (sgemm_index(variant)) {
    case 0:
      launch<0>(args, plan);
      break;
    case 1:
      launch<1>(args, plan);
      break;
    case 2:
      launch<2>(args, plan);
      break;
    case 3:
      launch<3>(args, plan);
      break;
    case 4:
      launch<4>(args, plan);
      break;
    case 5:
      launch<5>(args, plan);
      break;
    case 6:
      launch<6>(args, plan);
      break;
    case 7:
      launch<7>(args, plan);
      break;
    case 8:
      launch<8>(args, plan);
      break;
    default:
      throw std::logic_error("matmul: variant " + std::to_string(variant) + " is no SGEMM");
  }
  if (plan.splits > 1)
    split_reduce_fp32(static_cast<const float*>(args.workspace), plan.splits,
                      args.p->b * args.p->m * args.p->n, static_cast<float*>(args.output),
                      args.stream);
}

std::string sgemm_describe(const Problem& p, int variant) {
  const SgemmConfig& c = sgemm_config(variant);
  const int warps = (c.bm / c.wm) * (c.bn / c.wn);
  const int tm = c.wm / c.lane_rows, tn = c.wn * c.lane_rows / 32;
  const Plan plan = sgemm_plan(p, variant);
  return "v" + std::to_string(variant) + " SIMT SGEMM " + std::to_string(c.bm) + "x" +
         std::to_string(c.bn) + "x" + std::to_string(c.bk) + ", " + std::to_string(warps) +
         " warps of " + std::to_string(c.wm) + "x" + std::to_string(c.wn) + " (" +
         std::to_string(tm) + "x" + std::to_string(tn) + " a thread), cp.async " +
         std::to_string(c.stages) + " stages, " +
         (c.frag_pipeline ? "fragments double-buffered, " : "") + std::to_string(c.min_blocks) +
         " blocks/SM" + (plan.splits > 1 ? ", split-K " + std::to_string(plan.splits) : "");
}

}  // namespace ops::cuda
