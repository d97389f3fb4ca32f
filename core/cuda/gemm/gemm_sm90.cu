// The Hopper GEMM engine: C[b][m][n] = epilogue(sum_k A[b][m][k] B[b][k][n]) on warpgroup tensor
// cores (wgmma, sm_90a) fed by the copy engine (TMA), fp16, bf16 and tf32 (B K-major; a block
// of 32 k values, the same bytes) with FP32 accumulation. Its plan (tile, stages, order, what it
// takes) is gemm_config.hpp; its interface gemm.hpp. Users:
// the op suite's matmul, variants 4-9 (ops/cuda/matmul_engine.cu), conv's 1x1 layers,
// variant 11 (conv/cuda/gemm_1x1.cpp: nchw with A shared by the batch, nhwc with B K-major), and
// the MLP suite's own_cuda (models/mlp/cuda/own_mlp.cpp: bias + GELU with its pre-activation kept,
// dGELU with the bias gradient).
//
// Build: compiled for sm_90a only (core/cuda/CMakeLists.txt, myconv_sm90a_target: the target's
// CUDA_ARCHITECTURES is 90a where the build includes 90, i.e. -gencode=arch=compute_90a,
// code=sm_90a); elsewhere the kernels are empty and gemm_sm90_unusable_reason() says why.
// Registers and spills (expected: no spills; wgmma not serialized):
//   nvcc -std=c++17 -gencode=arch=compute_90a,code=sm_90a -DMYCONV_GEMM_SM90A=1 -I. -Xptxas -v
//   -c core/cuda/gemm/gemm_sm90.cu -o /dev/null
// Run (on an H100/H200): variant 4 beside cuBLASLt, then variant 3, on issue 26's target shapes
// in pure timing (--variant applies to own_cuda only):
//   build/experiments/myops --ops-file experiments/ops/gemm_targets.txt --timing pure
//   --backend own_cuda --backend cublaslt --variant 4 --json gemm_v4.json &&
//   build/experiments/myops --ops-file experiments/ops/gemm_targets.txt --timing pure
//   --backend own_cuda --variant 3 --json gemm_v3.json
// The schedules side by side (variant 4 the rules; 5 split-K forced, 6 no split-K, 7 128x128,
// 8 128x256, 9 ping-pong; ops/cuda/matmul.cu), one run per variant on the same shapes:
//   for v in 4 5 6 7 8 9; do build/experiments/myops --ops-file experiments/ops/gemm_targets.txt
//   --timing pure --backend own_cuda --variant $v --json gemm_v$v.json; done
// Test: build/tests/test_ops_backends --gtest_filter='GemmSm90*'
//
// The kernel, per block of 384 threads in three warpgroups, persistent (one block per SM at most,
// walking output tiles t = blockIdx.x, + gridDim.x, ... in gemm_tile's grouped order). The
// 64 x 64 tile (plan.bm 64, BN 64; bf16, cooperative) has one consumer warpgroup (256 threads),
// 64-row A boxes and up to 14 stages of 16 KB, for problems of few 128-row tiles (an MLP layer of
// a few hundred rows); everything below holds for it with "128" read as 64:
//   - warpgroup 0, the producer (registers cut to 40 by setmaxnreg): one thread issues, per k
//     block of 64, the tensor copies of A's 128 x 64 block (one box) and B's 64 x BN block (BN / 64
//     boxes of 64 k rows x 64 n, or 64 n rows x 64 k where B is K-major; none that starts past
//     n; A's batch coordinate 0 where every batch shares A) into a stage of a ring of `stages`
//     stages, each 128-byte swizzled; the copy engine zero-fills past m, n and k. A stage's full
//     barrier completes when its bytes have landed; the producer waits on its empty barrier before
//     filling it again, and runs on into the block's next tile while the consumers store the
//     last one.
//   - warpgroups 1 and 2, the consumers (registers raised to 232; one whose 64 rows lie past m
//     only releases the stages): each multiplies its 64 rows of A by B's BN columns, 4 wgmma
//     m64nBNk16 (tf32: k8) per stage (A K-major; B MN-major through the transpose bit, or
//     K-major without it: a template parameter, instantiated for the identity epilogue only),
//     FP32 accumulators in registers (BN / 2 a thread). One stage's MMAs stay in
//     flight while the next stage's are issued (wait_group 1): the stage before is released
//     then.
//   - epilogue: straight from the accumulators, each thread's pairs of neighbouring columns,
//     through the epilogue functor (bias, GELU, residual: gemm_epilogue.cuh), converted to the
//     output type, gathered by shuffles inside each quad of lanes into 8 neighbouring columns and
//     stored as one 16-byte vector (a warp's store: 8 rows of 64 contiguous bytes, whole 32-byte
//     sectors), inside m and n only. The dgelu epilogue (an MLP's backward) stores each pair as
//     it is and sums each column pair over the warp's 16 rows by shuffles, one atomic add a warp
//     and column to the column sums.
//   - ping-pong (plan.schedule, 128x128 tiles): the two consumer warpgroups take the block's
//     units in turn, each a whole tile (two m64n128 MMAs per k step, accumulators 128 a thread),
//     their mainloops ordered by named barriers 2 and 3 (the next may start once the one before
//     has issued its last MMAs), so that one warpgroup's epilogue overlaps the other's MMAs. A
//     stage is then read by one warpgroup: its empty barrier takes one arrival.
//   - split-K (plan.splits > 1; gemm_config.hpp's rule: few tiles, long k): the blocks walk work
//     units (tile, split), each a run of the tile's k blocks; the epilogue then stores the FP32
//     accumulators to the split's partial C in the workspace, and gemm_split_reduce_kernel sums
//     the partials in split order (the same sum on every run), applies the epilogue functor and
//     converts (and adds each pair to the column sums, an atomic a pair, where the epilogue
//     has them). With plan.reduce_in_kernel (cooperative), each unit counts itself in for its
//     tile after its partial is written (a counter a tile after the partials), and the tile's
//     last unit reads every split's partial back (its own too) and sums them in split order, then
//     runs the epilogue: one launch, no second pass (measured slower than the second kernel:
//     conv/cuda/gemm_1x1_config.hpp).
//   - programmatic dependent launch (plan.pdl; core/cuda/pdl.cuh): both kernels let the next one
//     be scheduled as they start, and touch global memory only after griddepcontrol.wait.
#include "core/cuda/gemm/gemm.hpp"

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/gemm/gemm_epilogue.cuh"
#include "core/cuda/pdl.cuh"
#include "core/cuda/tensor_map.hpp"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "core/cuda/hopper_ptx.cuh"
#define BENCH_GEMM_DEVICE 1
#else
#define BENCH_GEMM_DEVICE 0
#endif

namespace bench::gemm {
namespace {

using namespace epilogue;  // core/cuda/gemm/gemm_epilogue.cuh

// ---- The kernel -------------------------------------------------------------------------------

struct KernelArgs {
  int m = 0, n = 0, k_blocks = 0, tiles_m = 0, tiles_n = 0;
  bool a_shared = false;  // A's tensor map holds one matrix: its batch coordinate is 0
  int splits = 1, split_k_blocks = 0;
  std::int64_t units = 0;     // tiles x splits: unit u is split u % splits of tile u / splits
  float* partial = nullptr;   // splits > 1: [splits][batch][m][n] FP32
  std::int64_t elements = 0;  // batch x m x n
  // Split-K summed in the kernel (GemmPlan::reduce_in_kernel): a counter a tile, zero at launch
  // and left zero; null where a second kernel sums the partials.
  unsigned* counters = nullptr;
};

#if BENCH_GEMM_DEVICE
using namespace bench::sm90;  // core/cuda/hopper_ptx.cuh

// Split-K summed in the kernel: once this block's consumer threads (kThreads of them, named
// barrier 1) have written the unit's partial, one of them counts the unit in for its tile;
// true, on all of them, for the tile's last unit, which then sums the splits. The fences make
// the partials the block wrote (ordered before the count by the barrier) visible at device
// scope before the count, and the other units' before this unit reads them (CUTLASS's
// generic barrier works the same way). The last unit leaves the counter zero for the next
// launch: no other unit of the tile touches it in this one.
template <int kThreads>
__device__ __forceinline__ bool last_unit_of_tile(unsigned* counter, int splits,
                                                  volatile int* flag) {
  named_bar_sync(1, kThreads);
  if (threadIdx.x == 128) {  // the first consumer thread
    __threadfence();
    const bool last = atomicAdd(counter, 1u) == unsigned(splits - 1);
    if (last) *counter = 0;
    __threadfence();
    *flag = last;
  }
  named_bar_sync(1, kThreads);
  return *flag != 0;
}

// One k step (k16; tf32 k8) of the warpgroup's 64 x BN tile; kTransB 1 for an MN-major B, 0
// for K-major (tf32: K-major only).
template <int BN, class T, int kTransB>
__device__ __forceinline__ void mma_step(float* d, std::uint64_t da, std::uint64_t db) {
  constexpr bool kHalf = std::is_same_v<T, __half>;
  if constexpr (std::is_same_v<T, float>) {
    static_assert(kTransB == 0, "tf32: B K-major");
    if constexpr (BN == 256)
      wgmma_m64n256k8_tf32(d, da, db, 1);
    else
      wgmma_m64n128k8_tf32(d, da, db, 1);
  } else if constexpr (BN == 256) {
    if constexpr (kHalf)
      wgmma_m64n256k16_f16<kTransB>(d, da, db, 1);
    else
      wgmma_m64n256k16_bf16<kTransB>(d, da, db, 1);
  } else if constexpr (BN == 128) {
    if constexpr (kHalf)
      wgmma_m64n128k16_f16<kTransB>(d, da, db, 1);
    else
      wgmma_m64n128k16_bf16<kTransB>(d, da, db, 1);
  } else {
    static_assert(BN == 64, "tiles of 64, 128 or 256 columns");
    if constexpr (kHalf)
      wgmma_m64n64k16_f16<kTransB>(d, da, db, 1);
    else
      wgmma_m64n64k16_bf16<kTransB>(d, da, db, 1);
  }
}

template <int kN>
__device__ __forceinline__ void fence_accumulators(float (&d)[kN]) {
#pragma unroll
  for (int i = 0; i < kN; ++i) fence_operand(d[i]);
}
#endif  // BENCH_GEMM_DEVICE

// The tile's rows: 128 (two consumer warpgroups), or 64 (one) with the 64 x 64 tile; and the
// block's threads (a producer warpgroup and the consumers).
BENCH_HD constexpr int tile_rows(int bn) {
  return bn == 64 ? 64 : kBm;
}
BENCH_HD constexpr int block_threads(int bn) {
  return 128 * (1 + tile_rows(bn) / 64);
}

// kBKMajor: B stored [batch][n][k] (GemmShape::b_k_major), its boxes 64 n rows x 64 k.
template <int BN, bool kPingPong, bool kBKMajor, class T, class Epi>
__global__ void __launch_bounds__(block_threads(BN), 1)
    gemm_sm90_kernel(const __grid_constant__ CUtensorMap map_a,
                     const __grid_constant__ CUtensorMap map_b, const KernelArgs args,
                     T* __restrict__ c, const Epi epi) {
#if BENCH_GEMM_DEVICE
  constexpr int BM = tile_rows(BN), kConsumers = BM / 64;
  constexpr int kStages = gemm_stages(BN, BM);
  constexpr int kStage = stage_bytes(BN, BM);
  static_assert(2 * kStages * 8 + 4 <= int(kBarrierBytes), "the barriers and flag fit their space");
  static_assert(!kPingPong || BN == 128, "ping-pong: 128x128 tiles (128 accumulators a thread)");
  // Split-K summed in the kernel (KernelArgs::counters): gemm_config.hpp says where.
  constexpr bool kSumInKernel =
      gemm_can_sum_in_kernel(kPingPong ? GemmSchedule::pingpong : GemmSchedule::cooperative, BN);
  constexpr int kBkT = kBlockBytes / int(sizeof(T));  // k values per block: 64, or 32 (tf32)
  extern __shared__ unsigned char smem_raw[];
  // The swizzled tiles need 1024-byte alignment of their shared-memory address.
  unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem + kStages * kStage);
  std::uint64_t* empty = full + kStages;
  // Split-K in the kernel: whether this block's unit is its tile's last (last_unit_of_tile).
  volatile int* last_flag = reinterpret_cast<volatile int*>(empty + kStages);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], 1);  // the producer's arrival with the stage's transaction bytes
      // One arrival per consumer warpgroup that reads the stage: both, or (ping-pong) one.
      mbar_init(&empty[s], kPingPong ? 1 : kConsumers);
    }
    mbar_init_fence();
  }
  __syncthreads();
  // Programmatic dependent launch (GemmPlan::pdl): the next kernel may be scheduled now; nothing
  // global is read or written before the kernel before this one is done.
  launch_dependents();
  wait_for_previous();
  const int warpgroup = threadIdx.x / 128;

  if (warpgroup == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      int stage = 0;
      std::uint32_t phase = 0;  // of the ring's current pass
      bool refill = false;      // from the second pass on, a stage waits for its consumers
      for (std::int64_t u = blockIdx.x; u < args.units; u += gridDim.x) {
        const TileCoord tc = gemm_tile(u / args.splits, args.tiles_m, args.tiles_n);
        const KRange kr =
            gemm_split_range(int(u % args.splits), args.split_k_blocks, args.k_blocks);
        const int m0 = tc.tm * BM, n0 = tc.tn * BN;
        // B's boxes that start inside n (the others would be all zeros): the columns of the
        // boxes left out hold stale values, and only columns past n, never stored, read them.
        const int boxes = min(BN / kBoxN, (args.n - n0 + kBoxN - 1) / kBoxN);
        for (int kb = kr.begin; kb < kr.end; ++kb) {
          if (refill) mbar_wait(&empty[stage], phase ^ 1);
          unsigned char* st = smem + stage * kStage;
          mbar_expect_tx(&full[stage], a_block_bytes(BM) + boxes * b_box_bytes());
          tma_load_tile_3d(st, &map_a, &full[stage], kb * kBkT, m0, args.a_shared ? 0 : tc.batch);
#pragma unroll
          for (int j = 0; j < BN / kBoxN; ++j)
            if (j < boxes) {
              if constexpr (kBKMajor)
                tma_load_tile_3d(st + b_box_offset(j, BM), &map_b, &full[stage], kb * kBkT,
                                 n0 + j * kBoxN, tc.batch);
              else
                tma_load_tile_3d(st + b_box_offset(j, BM), &map_b, &full[stage], n0 + j * kBoxN,
                                 kb * kBkT, tc.batch);
            }
          if (++stage == kStages) {
            stage = 0;
            phase ^= 1;
            refill = true;
          }
        }
      }
    }
    return;
  }

  setmaxnreg_inc<232>();
  const int wg = warpgroup - 1;  // cooperative: rows 64 wg .. 64 wg + 63 of each tile
  // Ping-pong: this warpgroup's units are the block's units number wg, wg + 2, ...; all 128 rows.
  constexpr int kRowBlocks = kPingPong ? 2 : 1;  // the 64-row halves this warpgroup multiplies
  const int t128 = threadIdx.x % 128, warp = t128 / 32, lane = t128 % 32;
  int stage = 0;
  std::uint32_t phase = 0;
  int j_unit = 0;  // the block's units so far
  for (std::int64_t u = blockIdx.x; u < args.units; u += gridDim.x, ++j_unit) {
    const int split = int(u % args.splits);
    const TileCoord tc = gemm_tile(u / args.splits, args.tiles_m, args.tiles_n);
    const KRange kr = gemm_split_range(split, args.split_k_blocks, args.k_blocks);
    if constexpr (kPingPong) {
      if (j_unit % 2 != wg) {  // the other warpgroup's unit: its k blocks pass in the ring
        const int pos = stage + (kr.end - kr.begin);
        phase ^= std::uint32_t(pos / kStages) & 1;
        stage = pos % kStages;
        continue;
      }
      // The mainloops take turns: wait for the other warpgroup's mainloop of the unit before.
      // Its full-barrier waits are then all done, so each stage's parity below is unambiguous.
      if (j_unit > 0) named_bar_sync(2 + j_unit % 2, 256);
    }
    // Cooperative: a warpgroup whose 64 rows all lie past m (m8 n4096 k4096; a 1x1 layer in nchw
    // with 16 output channels) only passes the stages on, with no MMAs and nothing to store. It
    // still waits for each stage to land before its release, so that its arrivals keep to the
    // ring's passes, and meets the other warpgroup where the kernel sums the splits.
    if constexpr (!kPingPong) {
      if (tc.tm * BM + wg * 64 >= args.m) {
        for (int kb = kr.begin; kb < kr.end; ++kb) {
          mbar_wait(&full[stage], phase);
          if (t128 == 0) mbar_arrive(&empty[stage]);
          if (++stage == kStages) {
            stage = 0;
            phase ^= 1;
          }
        }
        if constexpr (kSumInKernel)
          if (args.splits > 1 && args.counters)
            last_unit_of_tile<kConsumers * 128>(args.counters + u / args.splits, args.splits,
                                                last_flag);
        continue;
      }
    }
    float d[kRowBlocks][BN / 2];
#pragma unroll
    for (int r = 0; r < kRowBlocks; ++r)
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) d[r][i] = 0.f;
    int previous = 0;  // the stage of the last k block, released once its MMAs are done
    for (int kb = kr.begin; kb < kr.end; ++kb) {
      mbar_wait(&full[stage], phase);
      const std::uint32_t base = smem_u32(smem + stage * kStage);
#pragma unroll
      for (int r = 0; r < kRowBlocks; ++r) fence_accumulators(d[r]);
      wgmma_fence();
#pragma unroll
      for (int step = 0; step < kBk / kStepK; ++step)  // 4 steps of 32 bytes (16-bit k16, tf32 k8)
#pragma unroll
        for (int r = 0; r < kRowBlocks; ++r)
          mma_step<BN, T, kBKMajor ? 0 : 1>(
              d[r], sw128_desc(base + a_operand_offset(kPingPong ? r : wg, step)),
              kBKMajor ? sw128_desc(base + b_k_major_operand_offset(step, BM))
                       : sw128_mn_desc(base + b_operand_offset(step, BM), b_box_bytes()));
      wgmma_commit();
#pragma unroll
      for (int r = 0; r < kRowBlocks; ++r) fence_accumulators(d[r]);
      wgmma_wait<1>();  // the previous k block's MMAs are done: its stage is free
      if (kb > kr.begin && t128 == 0) mbar_arrive(&empty[previous]);
      previous = stage;
      if (++stage == kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
    // Ping-pong: the next unit's warpgroup may start its mainloop (only where it exists, so
    // that every arrival has its wait).
    if constexpr (kPingPong)
      if (u + gridDim.x < args.units) named_bar_arrive(2 + (j_unit + 1) % 2, 256);
    wgmma_wait<0>();
#pragma unroll
    for (int r = 0; r < kRowBlocks; ++r) fence_accumulators(d[r]);
    if (t128 == 0) mbar_arrive(&empty[previous]);

    // Epilogue: d[r][4j + 2h + e] is row 16 warp + lane / 4 + 8h, column 8j + 2 (lane % 4) + e
    // of the 64 x BN half (r, or wg) (core/cuda/hopper_ptx.cuh). n is even, so a pair is inside
    // n whenever its first column is.
    const int col0 = tc.tn * BN + (lane % 4) * 2;
    const std::int64_t batch_rows = std::int64_t(tc.batch) * args.m;
    // Split-K: the FP32 pairs go to this split's partial C, the epilogue comes after the sum.
    if (args.splits > 1) {
#pragma unroll
      for (int r = 0; r < kRowBlocks; ++r) {
        const int row0 = tc.tm * BM + (kPingPong ? r : wg) * 64 + warp * 16 + lane / 4;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const int col = col0 + j * 8;
          if (col >= args.n) continue;
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = row0 + h * 8;
            if (row >= args.m) continue;
            const std::int64_t at = (batch_rows + row) * args.n + col;
            __stcg(reinterpret_cast<float2*>(args.partial + split * args.elements + at),
                   make_float2(d[r][4 * j + 2 * h], d[r][4 * j + 2 * h + 1]));  // at is even
          }
        }
      }
      if constexpr (kSumInKernel) {
        if (args.counters == nullptr) continue;  // the second kernel sums them
        if (!last_unit_of_tile<kConsumers * 128>(args.counters + u / args.splits, args.splits,
                                                 last_flag))
          continue;
        // The tile's last unit: each pair becomes the sum of the splits' partials in split
        // order, this unit's own read back too (this thread wrote it), so that the sum is the
        // same whichever unit comes last. Read from L2 (ld.global.cg: no stale L1 line), kJ
        // column blocks at a time, all their loads issued before their adds (2 kJ in flight a
        // thread), the sum in d; then on through the epilogue below.
        constexpr int kJ = BN / 8 < 8 ? BN / 8 : 8;
        const int row0 = tc.tm * BM + wg * 64 + warp * 16 + lane / 4;
#pragma unroll
        for (int jc = 0; jc < BN / 8; jc += kJ)
          for (int sp = 0; sp < args.splits; ++sp) {
            const float* part = args.partial + sp * args.elements;
            float2 v[kJ][2];
#pragma unroll
            for (int jj = 0; jj < kJ; ++jj)
#pragma unroll
              for (int h = 0; h < 2; ++h) {
                const int row = row0 + h * 8, col = col0 + (jc + jj) * 8;
                v[jj][h] = row < args.m && col < args.n
                               ? __ldcg(reinterpret_cast<const float2*>(
                                     part + (batch_rows + row) * args.n + col))
                               : make_float2(0.f, 0.f);
              }
#pragma unroll
            for (int jj = 0; jj < kJ; ++jj)
#pragma unroll
              for (int h = 0; h < 2; ++h) {
                float* x = &d[0][4 * (jc + jj) + 2 * h];
                x[0] = sp == 0 ? v[jj][h].x : x[0] + v[jj][h].x;
                x[1] = sp == 0 ? v[jj][h].y : x[1] + v[jj][h].y;
              }
          }
      } else {
        continue;  // the second kernel sums them
      }
    }
#pragma unroll
    for (int r = 0; r < kRowBlocks; ++r) {
      const int row0 = tc.tm * BM + (kPingPong ? r : wg) * 64 + warp * 16 + lane / 4;
      if constexpr (Epi::kColumnSums) {  // dgelu_erf: each pair stored as it is, column sums
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const int col = col0 + j * 8;
          float2 sum = make_float2(0.f, 0.f);
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = row0 + h * 8;
            if (row >= args.m || col >= args.n) continue;
            const std::int64_t at = (batch_rows + row) * args.n + col;
            const float2 v =
                epi(at, col, make_float2(d[r][4 * j + 2 * h], d[r][4 * j + 2 * h + 1]));
            store_pair(c + at, v);
            sum.x += v.x;
            sum.y += v.y;
          }
          // The 8 lanes that hold this column pair (lane / 4): the warp's 16 rows, one atomic.
#pragma unroll
          for (int o = 4; o < 32; o <<= 1) {
            sum.x += __shfl_xor_sync(0xFFFFFFFFu, sum.x, o);
            sum.y += __shfl_xor_sync(0xFFFFFFFFu, sum.y, o);
          }
          if (lane < 4 && col < args.n) epi.add_columns(col, sum);
        }
        continue;
      }
      if constexpr (std::is_same_v<T, float>) {  // tf32: FP32 pairs, a quad's 32 bytes in a row
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const int col = col0 + j * 8;
          if (col >= args.n) continue;
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int row = row0 + h * 8;
            if (row >= args.m) continue;
            const std::int64_t at = (batch_rows + row) * args.n + col;
            store_pair(c + at,
                       epi(at, col, make_float2(d[r][4 * j + 2 * h], d[r][4 * j + 2 * h + 1])));
          }
        }
        continue;
      }
      // The output: the quad's four lanes (lane % 4) hold, for four column blocks j of 8, the
      // pairs at 2 (lane % 4); once through the epilogue and converted, a transpose inside the
      // quad gives lane q all 8 columns of block 4 jq + q, stored as one 16-byte vector (n is a
      // multiple of 8: a block is inside n or past it, and 16-byte aligned). Every lane takes
      // part in the shuffles; only the stores are guarded.
      const int q = lane % 4;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row0 + h * 8;
        const std::int64_t row_at = (batch_rows + row) * args.n;
#pragma unroll
        for (int jq = 0; jq < BN / 32; ++jq) {
          std::uint32_t packed[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int j = 4 * jq + i, col = col0 + j * 8;
            float2 v = make_float2(d[r][4 * j + 2 * h], d[r][4 * j + 2 * h + 1]);
            if (row < args.m && col < args.n) v = epi(row_at + col, col, v);
            packed[i] = pack_pair<T>(v);
          }
          const uint4 out = quad_transpose(packed, q);
          const int col = tc.tn * BN + (4 * jq + q) * 8;
          if (row < args.m && col < args.n) *reinterpret_cast<uint4*>(c + row_at + col) = out;
        }
      }
    }
  }
#else
  (void)map_a, (void)map_b, (void)args, (void)c, (void)epi;
#endif  // BENCH_GEMM_DEVICE
}

// Split-K's second pass: each pair of neighbouring outputs (n is even: a pair never crosses a
// row) is the sum of the splits' partials in split order, through the epilogue, converted.
template <class T, class Epi>
__global__ void __launch_bounds__(256)
    gemm_split_reduce_kernel(const float* __restrict__ partial, int splits, std::int64_t elements,
                             int n, T* __restrict__ c, const Epi epi) {
  launch_dependents();
  wait_for_previous();  // the partials
  const std::int64_t pairs = elements / 2;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < pairs;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t at = 2 * i;
    float2 sum = *reinterpret_cast<const float2*>(partial + at);
    for (int sp = 1; sp < splits; ++sp) {
      const float2 v = *reinterpret_cast<const float2*>(partial + sp * elements + at);
      sum.x += v.x;
      sum.y += v.y;
    }
    const int col = int(at % n);
    const float2 v = epi(at, col, sum);
    store_pair(c + at, v);
    if constexpr (Epi::kColumnSums) epi.add_columns(col, v);  // an atomic a pair
  }
}

// ---- Host side --------------------------------------------------------------------------------

// A's map: [batch][m][k] (one batch where A is shared), boxes of 64 k x 128 rows; B's:
// [batch][k][n], boxes of 64 n x 64 k rows, or K-major [batch][n][k], boxes of 64 k x 64 n rows.
// All 128-byte swizzled, zero-filled past the edges.
CUtensorMap make_map(CUtensorMapDataType type, int element_bytes, const void* base,
                     std::int64_t inner, std::int64_t outer, std::int64_t batch, int box_inner,
                     int box_outer) {
  static const auto encode =
      bench::driver_entry<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled");
  CUtensorMap map{};
  const cuuint64_t dims[3] = {cuuint64_t(inner), cuuint64_t(outer), cuuint64_t(batch)};
  const cuuint64_t strides[2] = {cuuint64_t(inner) * cuuint64_t(element_bytes),
                                 cuuint64_t(inner) * cuuint64_t(outer) * cuuint64_t(element_bytes)};
  const cuuint32_t box[3] = {cuuint32_t(box_inner), cuuint32_t(box_outer), 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  bench::check_encode(
      encode(&map, type, 3, const_cast<void*>(base), dims, strides, box, element_strides,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
      "cuTensorMapEncodeTiled");
  return map;
}

template <int BN, bool kPingPong, bool kBKMajor, class T, class Epi>
void launch_kernel(const GemmShape& s, const GemmPlan& plan, const void* a, const void* b, void* c,
                   const Epi& epi, void* workspace, cudaStream_t stream) {
  const auto kernel = gemm_sm90_kernel<BN, kPingPong, kBKMajor, T, Epi>;
  static std::once_flag raised;
  std::call_once(raised, [&] {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(gemm_smem_bytes(BN, tile_rows(BN)))));
  });
  const CUtensorMapDataType type = std::is_same_v<T, float>    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                   : std::is_same_v<T, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                               : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  constexpr int eb = int(sizeof(T)), bk = kBlockBytes / eb;
  const CUtensorMap map_a =
      make_map(type, eb, a, s.k, s.m, s.a_shared ? 1 : s.batch, bk, tile_rows(BN));
  const CUtensorMap map_b = kBKMajor ? make_map(type, eb, b, s.k, s.n, s.batch, bk, kBoxN)
                                     : make_map(type, eb, b, s.n, s.k, s.batch, kBoxN, bk);
  KernelArgs args;
  args.a_shared = s.a_shared;
  args.m = int(s.m);
  args.n = int(s.n);
  args.k_blocks = plan.k_blocks;
  args.tiles_m = plan.tiles_m;
  args.tiles_n = plan.tiles_n;
  args.splits = plan.splits;
  args.split_k_blocks = plan.split_k_blocks;
  args.units = plan.units;
  args.partial = plan.splits > 1 ? static_cast<float*>(workspace) : nullptr;
  args.elements = s.batch * s.m * s.n;
  if (gemm_counter_bytes(plan) > 0)
    args.counters = reinterpret_cast<unsigned*>(static_cast<unsigned char*>(workspace) +
                                                gemm_partial_bytes(s, plan));
  launch_pdl(kernel, dim3(unsigned(plan.grid)), dim3(block_threads(BN)),
             gemm_smem_bytes(BN, tile_rows(BN)), plan.pdl, stream, map_a, map_b, args,
             static_cast<T*>(c), epi);
  if (plan.splits <= 1 || args.counters) return;
  const std::int64_t pairs = args.elements / 2;
  const std::int64_t blocks = (pairs + 255) / 256;
  launch_pdl(gemm_split_reduce_kernel<T, Epi>, dim3(unsigned(blocks < 4096 ? blocks : 4096)),
             dim3(256), 0, plan.pdl, stream, static_cast<const float*>(args.partial), plan.splits,
             args.elements, args.n, static_cast<T*>(c), epi);
}

template <class T>
EpilogueFused<T> fused(const Epilogue& e) {
  return {e.kind, static_cast<const T*>(e.bias), static_cast<const T*>(e.residual),
          static_cast<T*>(e.aux)};
}

// What gemm_epilogue_unsupported_reason allows, and no more instantiations: the build pays for
// each. A K-major B (1x1 convolutions in nhwc) with the identity, or in bf16 (cooperative) the
// fused functor (an MLP's forward, W [out][in] as B); dgelu_erf in bf16 on B MN-major
// (cooperative).
template <int BN, bool kPingPong, class T>
void launch_epilogue(const GemmShape& s, const GemmPlan& plan, const void* a, const void* b,
                     void* c, const Epilogue& e, void* w, cudaStream_t stream) {
  constexpr bool kMlp = !kPingPong && std::is_same_v<T, __nv_bfloat16>;
  if (e.kind == EpilogueKind::identity) {
    if (s.b_k_major)
      return launch_kernel<BN, kPingPong, true, T>(s, plan, a, b, c, EpilogueIdentity{}, w, stream);
    return launch_kernel<BN, kPingPong, false, T>(s, plan, a, b, c, EpilogueIdentity{}, w, stream);
  }
  if constexpr (kMlp) {
    if (e.kind == EpilogueKind::dgelu_erf)
      return launch_kernel<BN, false, false, T>(
          s, plan, a, b, c,
          EpilogueDgelu<T>{static_cast<const T*>(e.aux), static_cast<T*>(e.aux_t), e.column_sums,
                           s.m, s.n},
          w, stream);
    if (s.b_k_major)
      return launch_kernel<BN, false, true, T>(s, plan, a, b, c, fused<T>(e), w, stream);
  }
  if (e.kind == EpilogueKind::dgelu_erf || s.b_k_major)
    throw std::logic_error("gemm_sm90: an epilogue the build does not hold");  // checked before
  launch_kernel<BN, kPingPong, false, T>(s, plan, a, b, c, fused<T>(e), w, stream);
}

// tf32: B K-major, the identity epilogue (gemm_sm90 checks).
void launch_tf32(const GemmShape& s, const GemmPlan& plan, const void* a, const void* b, void* c,
                 void* w, cudaStream_t stream) {
  if (plan.schedule == GemmSchedule::pingpong)
    launch_kernel<128, true, true, float>(s, plan, a, b, c, EpilogueIdentity{}, w, stream);
  else if (plan.bn == 256)
    launch_kernel<256, false, true, float>(s, plan, a, b, c, EpilogueIdentity{}, w, stream);
  else
    launch_kernel<128, false, true, float>(s, plan, a, b, c, EpilogueIdentity{}, w, stream);
}

// The 64 x 64 tile (bf16, cooperative: gemm_sm90 checks), every epilogue through the fused or
// the dgelu functor (the identity a branch of the fused one): three kernels.
void launch_64(const GemmShape& s, const GemmPlan& plan, const void* a, const void* b, void* c,
               const Epilogue& e, void* w, cudaStream_t stream) {
  using T = __nv_bfloat16;
  if (e.kind == EpilogueKind::dgelu_erf)
    return launch_kernel<64, false, false, T>(
        s, plan, a, b, c,
        EpilogueDgelu<T>{static_cast<const T*>(e.aux), static_cast<T*>(e.aux_t), e.column_sums, s.m,
                         s.n},
        w, stream);
  if (s.b_k_major)
    return launch_kernel<64, false, true, T>(s, plan, a, b, c, fused<T>(e), w, stream);
  launch_kernel<64, false, false, T>(s, plan, a, b, c, fused<T>(e), w, stream);
}

template <class T>
void launch_bn(const GemmShape& s, const GemmPlan& plan, const void* a, const void* b, void* c,
               const Epilogue& e, void* w, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>)
    if (plan.bm == 64) return launch_64(s, plan, a, b, c, e, w, stream);
  if (plan.schedule == GemmSchedule::pingpong)
    launch_epilogue<128, true, T>(s, plan, a, b, c, e, w, stream);
  else if (plan.bn == 256)
    launch_epilogue<256, false, T>(s, plan, a, b, c, e, w, stream);
  else
    launch_epilogue<128, false, T>(s, plan, a, b, c, e, w, stream);
}

bool aligned16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

}  // namespace

void gemm_sm90(MmaDtype type, const GemmShape& s, const GemmPlan& plan, const void* a,
               const void* b, void* c, const Epilogue& epilogue, void* workspace,
               cudaStream_t stream) {
  if (const std::string why = gemm_unsupported_reason(s, mma_dtype_bytes(type)); !why.empty())
    throw std::invalid_argument("gemm_sm90: " + why);
  const EpilogueKind e = epilogue.kind;
  check_epilogue_buffers(a, b, c, epilogue);
  if (const std::string why = gemm_epilogue_unsupported_reason(type, s.b_k_major, plan.schedule, e);
      !why.empty())
    throw std::invalid_argument("gemm_sm90: " + why);
  if (plan.bm == 64 && (type != MmaDtype::bf16 || plan.schedule != GemmSchedule::cooperative))
    throw std::invalid_argument("gemm_sm90: the 64 x 64 tile is built for bf16, cooperative");
  // The SM count sets only the grid (and the rule's splits, given here as forced).
  const GemmPlan expected = gemm_plan(s, 1, plan.bn, plan.splits, plan.schedule, plan.bm);
  if ((plan.bn != 128 && plan.bn != 256 && plan.bn != 64) || plan.bm != expected.bm ||
      plan.bk != expected.bk || plan.stages != expected.stages ||
      plan.k_blocks != expected.k_blocks || plan.tiles != expected.tiles ||
      plan.splits != expected.splits || plan.split_k_blocks != expected.split_k_blocks ||
      plan.units != expected.units || plan.bn != expected.bn || plan.grid < 1 ||
      plan.grid > plan.units)
    throw std::logic_error("gemm_sm90: the plan is not gemm_plan's for this shape");
  if (plan.splits > 1 && (workspace == nullptr || !aligned16(workspace)))
    throw std::invalid_argument(
        "gemm_sm90: split-K needs a 16-byte aligned workspace of gemm_workspace_bytes");
  if (plan.reduce_in_kernel && !gemm_can_sum_in_kernel(plan.schedule, plan.bn))
    throw std::invalid_argument(
        "gemm_sm90: split-K summed in the kernel takes cooperative tiles of 64 or 128 columns "
        "only");
  if (type == MmaDtype::tf32)
    launch_tf32(s, plan, a, b, c, workspace, stream);
  else if (type == MmaDtype::fp16)
    launch_bn<__half>(s, plan, a, b, c, epilogue, workspace, stream);
  else
    launch_bn<__nv_bfloat16>(s, plan, a, b, c, epilogue, workspace, stream);
}

namespace {
template <bool kBKMajor, class T>
const void* identity_kernel(const GemmPlan& plan) {
  if (plan.schedule == GemmSchedule::pingpong)
    return reinterpret_cast<const void*>(
        gemm_sm90_kernel<128, true, kBKMajor, T, EpilogueIdentity>);
  if (plan.bn == 256)
    return reinterpret_cast<const void*>(
        gemm_sm90_kernel<256, false, kBKMajor, T, EpilogueIdentity>);
  return reinterpret_cast<const void*>(gemm_sm90_kernel<128, false, kBKMajor, T, EpilogueIdentity>);
}
}  // namespace

void gemm_clear_counters(const GemmShape& s, const GemmPlan& plan, void* workspace,
                         cudaStream_t stream) {
  if (gemm_counter_bytes(plan) == 0) return;
  CUDA_CHECK(cudaMemsetAsync(static_cast<unsigned char*>(workspace) + gemm_partial_bytes(s, plan),
                             0, gemm_counter_bytes(plan), stream));
}

std::string gemm_sm90_kernel_resources(MmaDtype type, const GemmPlan& plan, bool b_k_major) {
  const void* k =
      type == MmaDtype::tf32
          ? (plan.schedule == GemmSchedule::pingpong
                 ? reinterpret_cast<const void*>(
                       gemm_sm90_kernel<128, true, true, float, EpilogueIdentity>)
             : plan.bn == 256 ? reinterpret_cast<const void*>(
                                    gemm_sm90_kernel<256, false, true, float, EpilogueIdentity>)
                              : reinterpret_cast<const void*>(
                                    gemm_sm90_kernel<128, false, true, float, EpilogueIdentity>))
      : type == MmaDtype::fp16
          ? (b_k_major ? identity_kernel<true, __half>(plan) : identity_kernel<false, __half>(plan))
          : (b_k_major ? identity_kernel<true, __nv_bfloat16>(plan)
                       : identity_kernel<false, __nv_bfloat16>(plan));
  if (plan.bm == 64)  // the 64 x 64 tile has no identity kernel: its fused one (bf16)
    k = b_k_major
            ? reinterpret_cast<const void*>(
                  gemm_sm90_kernel<64, false, true, __nv_bfloat16, EpilogueFused<__nv_bfloat16>>)
            : reinterpret_cast<const void*>(
                  gemm_sm90_kernel<64, false, false, __nv_bfloat16, EpilogueFused<__nv_bfloat16>>);
  cudaFuncAttributes attr{};
  CUDA_CHECK(cudaFuncGetAttributes(&attr, k));
  return std::to_string(attr.numRegs) + " registers, " + std::to_string(attr.localSizeBytes) +
         " B local, " + std::to_string(gemm_smem_bytes(plan.bn, plan.bm)) + " B dynamic shared";
}

}  // namespace bench::gemm
