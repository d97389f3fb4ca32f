// The GEMM engine's small-problem path (gemm.hpp, gemm_small): C = epilogue(A B) for problems
// whose 128-row wgmma tiles would leave most SMs idle (an MLP layer of a few hundred rows), on
// warp-level tensor cores (mma.sync m16n8k16, sm_80 and newer) with small tiles, so that many
// blocks share the work and its epilogue. bf16, one batch, A row-major [m][k], B [k][n] or K-major
// [n][k], C [m][n]; the engine's epilogue functors (gemm_epilogue.cuh). Built from the mma.sync
// pieces core/cuda/mma.cuh holds for conv's im2col GEMM and the op suite's variant 3.
//
// Why: on the MLP suite's scaling sizes (d128-1280, batch 128-1280) the wgmma kernel's 128 x 128
// tiles gave 1-20 blocks; one block took 12-15 us warm for a 128^3 GEMM with a GELU epilogue
// (ncu on an H100), where cuBLASLt's kernels of 8-32 small tiles took 4-5 us.
//
// The kernel, per block of 4 warps (2 x 2, each (BM / 2) x (BN / 2)): 4 shared stages of one
// 32-value k slice (A's BM rows, k contiguous; B's BK rows of BN, or with B K-major its BN rows, k
// contiguous), cp.async with zero fill past the edges, one barrier a slice (the op suite's
// variant 3 loop); then each lane's accumulator pairs through the epilogue functor, stored as
// pairs inside m and n; with the dgelu functor each column pair's sum over the warp's rows (its
// fragments, then shuffles across the 8 lanes that share the columns), one atomic add a warp.
// Split-K (plan.splits > 1, grid z; only where the caller asks): each split
// stores its FP32 partial tile to the workspace, and small_split_reduce_kernel sums the splits
// in split order (the same sum every run), applies the epilogue and adds the column sums of
// runs of 16 rows.
// Registers and spills (expected: none):
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c core/cuda/gemm/gemm_small.cu -o /dev/null
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/gemm/gemm.hpp"
#include "core/cuda/gemm/gemm_epilogue.cuh"
#include "core/cuda/mma.cuh"

namespace bench::gemm {
namespace {

using namespace epilogue;  // core/cuda/gemm/gemm_epilogue.cuh

constexpr int kSmallThreads = 128;
constexpr int kSmallStages = 4;
constexpr int kSmallSliceK = 32;  // k values of a stage (64 bytes of bf16)
constexpr int kReduceRows = 16;   // rows of a thread of the split-K sum

template <int BM, int BN, bool kBKMajor>
struct SmallLayout {
  using Tile = MmaWarpTiling<BM, BN, BM / 2, BN / 2>;
  static constexpr MmaDtype T = MmaDtype::bf16;
  static constexpr int BK = MmaTraits<T>::kSliceK;
  static constexpr int kAStage = BM * kMmaRowStride;
  static constexpr int kBStride = kBKMajor ? kMmaRowStride : mma_k_rows_stride(BN, 2);
  static constexpr int kBStage = kBKMajor ? BN * kMmaRowStride : BK * kBStride;
  static constexpr int kStage = kAStage + kBStage;
  static_assert(BK == kSmallSliceK, "a slice is 32 bf16 values");
  static_assert(Tile::kThreads == kSmallThreads, "4 warps");
  static_assert(kSmallStages * kStage <= 48 * 1024, "static shared memory");
};

template <int BM, int BN, bool kBKMajor, class Epi>
__global__ void __launch_bounds__(kSmallThreads)
    gemm_small_kernel(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b,
                      __nv_bfloat16* __restrict__ c, int m, int n, int k, int split_slices,
                      float* __restrict__ partial, const Epi epi) {
#if !BENCH_MMA_OK
  __trap();  // built for an architecture without bf16 mma.sync: never launched there
#else
  using L = SmallLayout<BM, BN, kBKMajor>;
  using Tile = typename L::Tile;
  constexpr MmaDtype T = L::T;
  using BFrag = std::conditional_t<kBKMajor, MmaBRowsN<kMmaRowStride>, MmaBRowsK<L::kBStride, T>>;
  __shared__ __align__(128) unsigned char smem[kSmallStages * L::kStage];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / Tile::kWarpsN, warp_n = warp % Tile::kWarpsN;
  const int m0 = int(blockIdx.y) * BM, n0 = int(blockIdx.x) * BN;
  // Split blockIdx.z: slices [first, first + slices) of k's.
  const int all_slices = (k + L::BK - 1) / L::BK, first = int(blockIdx.z) * split_slices;
  const int slices = min(split_slices, all_slices - first);
  const LdmatrixRow arow = ldmatrix_a_row(lane);
  const unsigned a_lane =
      (warp_m * Tile::WM + arow.row) * kMmaRowStride + arow.chunk * kMmaVecBytes;
  const unsigned b_lane = L::kAStage +
                          (kBKMajor ? warp_n * Tile::WN * kMmaRowStride : warp_n * Tile::WN * 2) +
                          BFrag::lane_offset(lane);
  const unsigned smem_base = shared_address(smem);

  MmaRowSlice<BM, kSmallThreads, T, true> aload(a, m, k, m0, tid);
  // B K-major: rows n, k contiguous, as A; else rows k of n.
  using BRows = MmaRowSlice<BN, kSmallThreads, T, true>;
  using BKRows = MmaKRowsSlice<L::BK, BN, kSmallThreads, T, true, L::kAStage>;
  std::conditional_t<kBKMajor, BRows, BKRows> bload = [&] {
    if constexpr (kBKMajor)
      return BRows(b, n, k, n0, tid);
    else
      return BKRows{reinterpret_cast<const unsigned char*>(b), k, n, n0, tid};
  }();
  auto copy = [&](int s, int stage) {
    unsigned char* st = smem + stage * L::kStage;
    const int k0 = (first + s) * L::BK;
    aload.copy(k0, st);
    if constexpr (kBKMajor)
      bload.copy(k0, st + L::kAStage);
    else
      bload.copy(k0, st);
  };

#pragma unroll
  for (int s = 0; s < kSmallStages - 1; ++s) {
    if (s < slices) copy(s, s);
    cp_async_commit();
  }
  float acc[Tile::MI][Tile::NI][4];
  zero_accumulators(acc);
  int stage = 0;
  for (int s = 0; s < slices; ++s) {
    cp_async_wait<kSmallStages - 2>();
    __syncthreads();  // slice s landed for all; slice s - 1's stage is free
    const int next = s + kSmallStages - 1;
    if (next < slices) copy(next, stage == 0 ? kSmallStages - 1 : stage - 1);
    cp_async_commit();
    const unsigned st = smem_base + stage * L::kStage;
    mma_warp_slice<Tile::MI, Tile::NI, T, BFrag>(acc, st + a_lane, st + b_lane);
    stage = stage + 1 == kSmallStages ? 0 : stage + 1;
  }
  cp_async_wait<0>();

  // Epilogue: pair (2h, 2h + 1) of acc[i][j] is row c.row, columns c.col, + 1 (n is even).
  // Split-K: the FP32 pairs to this split's partial C; small_split_reduce_kernel finishes.
  float* const out = partial ? partial + std::int64_t(blockIdx.z) * m * n : nullptr;
#pragma unroll
  for (int j = 0; j < Tile::NI; ++j) {
    float2 sum = make_float2(0.f, 0.f);
    const int col = n0 + warp_n * Tile::WN + j * 8 + mma_m16n8_c(lane, 0).col;
#pragma unroll
    for (int i = 0; i < Tile::MI; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = m0 + warp_m * Tile::WM + i * 16 + mma_m16n8_c(lane, 2 * h).row;
        if (row >= m || col >= n) continue;
        const std::int64_t at = std::int64_t(row) * n + col;
        const float2 d = make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        if (out) {
          *reinterpret_cast<float2*>(out + at) = d;
          continue;
        }
        const float2 v = epi(at, col, d);
        store_pair(c + at, v);
        sum.x += v.x;
        sum.y += v.y;
      }
    if constexpr (Epi::kColumnSums) {
      if (out) continue;                  // uniform over the block
#pragma unroll
      for (int o = 4; o < 32; o <<= 1) {  // the 8 lanes of this column pair (lane / 4)
        sum.x += __shfl_xor_sync(0xFFFFFFFFu, sum.x, o);
        sum.y += __shfl_xor_sync(0xFFFFFFFFu, sum.y, o);
      }
      if (lane < 4 && col < n) epi.add_columns(col, sum);
    }
  }
#endif
}

// Split-K's second pass: thread (column pair p, run of kReduceRows rows) sums the splits'
// partials in split order for its pair, applies the epilogue, stores, and adds the run's column
// sums (one atomic a column and run, where the epilogue has them).
template <class Epi>
__global__ void __launch_bounds__(128)
    small_split_reduce_kernel(const float* __restrict__ partial, int splits, int m, int n,
                              __nv_bfloat16* __restrict__ c, const Epi epi) {
  const int col = 2 * (int(blockIdx.x) * 128 + int(threadIdx.x));
  if (col >= n) return;
  const std::int64_t elements = std::int64_t(m) * n;
  const int row0 = int(blockIdx.y) * kReduceRows, rows = min(kReduceRows, m - row0);
  float2 column = make_float2(0.f, 0.f);
  for (int r = 0; r < rows; ++r) {
    const std::int64_t at = std::int64_t(row0 + r) * n + col;
    float2 sum = *reinterpret_cast<const float2*>(partial + at);
    for (int sp = 1; sp < splits; ++sp) {
      const float2 v = *reinterpret_cast<const float2*>(partial + sp * elements + at);
      sum.x += v.x;
      sum.y += v.y;
    }
    const float2 v = epi(at, col, sum);
    store_pair(c + at, v);
    column.x += v.x;
    column.y += v.y;
  }
  if constexpr (Epi::kColumnSums) epi.add_columns(col, column);
}

template <int BM, int BN, bool kBKMajor, class Epi>
void launch_small(const GemmShape& s, const GemmSmallPlan& plan, const void* a, const void* b,
                  void* c, const Epi& epi, void* workspace, cudaStream_t stream) {
  const dim3 grid(unsigned((s.n + BN - 1) / BN), unsigned((s.m + BM - 1) / BM),
                  unsigned(plan.splits));
  float* const partial = plan.splits > 1 ? static_cast<float*>(workspace) : nullptr;
  gemm_small_kernel<BM, BN, kBKMajor, Epi><<<grid, kSmallThreads, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(a), static_cast<const __nv_bfloat16*>(b),
      static_cast<__nv_bfloat16*>(c), int(s.m), int(s.n), int(s.k), plan.split_slices, partial,
      epi);
  CUDA_CHECK_LAST_LAUNCH();
  if (!partial) return;
  const dim3 reduce_grid(unsigned((s.n / 2 + 127) / 128),
                         unsigned((s.m + kReduceRows - 1) / kReduceRows));
  small_split_reduce_kernel<Epi><<<reduce_grid, 128, 0, stream>>>(
      partial, plan.splits, int(s.m), int(s.n), static_cast<__nv_bfloat16*>(c), epi);
  CUDA_CHECK_LAST_LAUNCH();
}

template <int BM, int BN>
void launch_tile(const GemmShape& s, const GemmSmallPlan& plan, const void* a, const void* b,
                 void* c, const Epilogue& e, void* w, cudaStream_t stream) {
  using T = __nv_bfloat16;
  if (e.kind == EpilogueKind::dgelu_erf) {
    if (s.b_k_major) throw std::logic_error("gemm_small: dgelu on a K-major B");  // checked
    return launch_small<BM, BN, false>(
        s, plan, a, b, c,
        EpilogueDgelu<T>{static_cast<const T*>(e.aux), static_cast<T*>(e.aux_t), e.column_sums, s.m,
                         s.n},
        w, stream);
  }
  // The identity too through the fused functor (its kind a branch per pair): fewer kernels.
  const EpilogueFused<T> f{e.kind, static_cast<const T*>(e.bias), static_cast<const T*>(e.residual),
                           static_cast<T*>(e.aux)};
  if (s.b_k_major) return launch_small<BM, BN, true>(s, plan, a, b, c, f, w, stream);
  launch_small<BM, BN, false>(s, plan, a, b, c, f, w, stream);
}

}  // namespace

GemmSmallPlan gemm_small_plan(const GemmShape& s, int sm_count, int tile, int splits) {
  const std::int64_t sms = sm_count > 0 ? sm_count : 1;
  const auto blocks_of = [&](int t) { return (s.m + t - 1) / t * ((s.n + t - 1) / t); };
  GemmSmallPlan p;
  p.tile = tile == 32 || tile == 64 ? tile : blocks_of(64) >= sms ? 64 : 32;
  p.blocks = blocks_of(p.tile);
  const std::int64_t slices = (s.k + kSmallSliceK - 1) / kSmallSliceK;
  // Split-K only where asked: its reduce pass cost more than the blocks gained on every MLP
  // scaling-study size measured (an H100: 1.2-2.9x the unsplit call's time).
  std::int64_t want = splits > 0 ? splits : 1;
  want = std::max<std::int64_t>(1, std::min<std::int64_t>(want, slices));
  p.split_slices = int((slices + want - 1) / want);
  p.splits = int((slices + p.split_slices - 1) / p.split_slices);  // none empty
  return p;
}

std::size_t gemm_small_workspace_bytes(const GemmShape& s, const GemmSmallPlan& p) {
  return p.splits > 1 ? std::size_t(p.splits) * std::size_t(s.m) * std::size_t(s.n) * 4 : 0;
}

std::string gemm_small_unsupported_reason(MmaDtype type, const GemmShape& s, EpilogueKind e) {
  if (type != MmaDtype::bf16) return "the small-tile path is built for bf16 only";
  if (s.batch != 1 || s.a_shared) return "the small-tile path takes one batch";
  if (const std::string why = gemm_unsupported_reason(s, 2); !why.empty()) return why;
  if ((s.m + 31) / 32 > 65535) return "m beyond the grid's 65535 row blocks";
  if (e == EpilogueKind::dgelu_erf && s.b_k_major) return "the dgelu epilogue takes B MN-major";
  return "";
}

void gemm_small(MmaDtype type, const GemmShape& s, const GemmSmallPlan& plan, const void* a,
                const void* b, void* c, const Epilogue& e, void* workspace, cudaStream_t stream) {
  if (const std::string why = gemm_small_unsupported_reason(type, s, e.kind); !why.empty())
    throw std::invalid_argument("gemm_small: " + why);
  check_epilogue_buffers(a, b, c, e);
  const GemmSmallPlan expected = gemm_small_plan(s, 1, plan.tile, plan.splits);
  if ((plan.tile != 32 && plan.tile != 64) || plan.splits != expected.splits ||
      plan.split_slices != expected.split_slices || plan.splits > 65535)
    throw std::logic_error("gemm_small: the plan is not gemm_small_plan's for this shape");
  if (plan.splits > 1 &&
      (workspace == nullptr || reinterpret_cast<std::uintptr_t>(workspace) % 16 != 0))
    throw std::invalid_argument("gemm_small: split-K needs a 16-byte aligned workspace");
  if (plan.tile == 64)
    launch_tile<64, 64>(s, plan, a, b, c, e, workspace, stream);
  else
    launch_tile<32, 32>(s, plan, a, b, c, e, workspace, stream);
}

}  // namespace bench::gemm
