// Variants 11-14 and 16-20 of the op suite's matmul: strict FP32 on CUDA cores (no TF32),
// warp-tiled SGEMMs fed by a multi-stage cp.async pipeline, one configuration each
// (kSgemmConfigs), timed side by side against cuBLAS's FP32 GEMM; 12 is fp32's default on sm_80+
// (matmul_plan.cpp). The kernel: ops/cuda/matmul_sgemm.cu;
// ops/cuda/matmul_plan.cpp lists the variants, ops/cuda/matmul.cu dispatches them.
#pragma once

#include <cstddef>
#include <string>

#include "ops/cuda/kernels.hpp"
#include "ops/cuda/matmul_plan.hpp"

namespace ops::cuda {

// One SGEMM configuration: a bm x bn block tile of (bm / wm) x (bn / wn) warps, each warp a
// wm x wn tile with its lanes in lane_rows x (32 / lane_rows), so that a thread holds
// (wm / lane_rows) x (wn * lane_rows / 32) outputs as 4x4 blocks spread over the warp tile; k
// slices of bk values in `stages` shared-memory stages; __launch_bounds__ minimum min_blocks.
struct SgemmConfig {
  int variant;
  int bm, bn, bk;
  int wm, wn, lane_rows;
  int stages;
  int min_blocks;
  bool frag_pipeline;  // registers: load step kk + 1's fragments while multiplying step kk's
};

// 11: CUTLASS's SIMT SGEMM policy (default_mma_core_simt.h: 128x128x8, warps of 32x64, 8x8 a
// thread) on a 4-stage cp.async pipeline, two blocks per SM. 12: the same with k slices of 16
// (half the barriers), 3 stages. 13: 4 warps of 64x64 (16x8 a thread: more FMAs per shared
// load, siboehm's warp-tiling shape), k slices of 16, 3 stages, two blocks of 128 threads per SM.
// 14: a 128x256x8 tile of 8 warps of 64x64 (16x8 a thread; half the operand traffic per FMA of
// 11), 3 stages, one block per SM (up to 255 registers).
// 16-20 double-buffer the fragments in registers (step kk + 1's shared loads beside step kk's
// FMAs, across slices too). 16: variant 12 with that and 4 stages. 17: a 256x128x16 tile (A's
// rows doubled: each B slice feeds twice the FMAs, a quarter less L2 traffic per FMA than 12) of
// 16 warps of 32x64 (8x8 a thread, 12's warp tile), 3 stages, one block of 512 threads per SM.
// 18: variant 14's 128x256 tile with k slices of 16 and 4 stages. 19: 18 with k slices of 32
// (half the barriers again), 3 stages. 20: 18 turned over, a 256x128x16 tile of 8 warps of 64x64.
inline constexpr SgemmConfig kSgemmConfigs[] = {
    {11, 128, 128, 8, 32, 64, 4, 4, 2, false},  {12, 128, 128, 16, 32, 64, 4, 3, 2, false},
    {13, 128, 128, 16, 64, 64, 4, 3, 2, false}, {14, 128, 256, 8, 64, 64, 4, 3, 1, false},
    {16, 128, 128, 16, 32, 64, 4, 4, 2, true},  {17, 256, 128, 16, 32, 64, 4, 3, 1, true},
    {18, 128, 256, 16, 64, 64, 4, 4, 1, true}, {19, 128, 256, 32, 64, 64, 4, 3, 1, true},
    {20, 256, 128, 16, 64, 64, 4, 4, 1, true},
};
inline constexpr int kSgemmConfigCount = int(sizeof(kSgemmConfigs) / sizeof(kSgemmConfigs[0]));

// The configuration's index in kSgemmConfigs, -1 for a variant that is no SGEMM of this file.
constexpr int sgemm_index(int variant) {
  for (int i = 0; i < kSgemmConfigCount; ++i)
    if (kSgemmConfigs[i].variant == variant) return i;
  return -1;
}
inline bool sgemm_variant(int variant) {
  return sgemm_index(variant) >= 0;
}
inline const SgemmConfig& sgemm_config(int variant) {
  return kSgemmConfigs[sgemm_index(variant)];
}

// Whether variants 11-14 and 16-20 run p here: fp32, m, n, k and the tiles in int, a device of
// compute capability 8.0 or newer (cp.async); false without a device. Never throws.
bool sgemm_runs(const Problem& p);

// The variant's launch: its tile, k slice and split-K (the rule of variant 2's plan: split where
// the grid leaves SMs idle, each split 8 slices or more, at most 16).
Plan sgemm_plan(const Problem& p, int variant);

// Split-K's FP32 partials (0 without splits).
std::size_t sgemm_workspace_bytes(const Problem& p, int variant);

// Enqueues the variant on args.stream (check sgemm_runs first).
void sgemm_launch(const OpArgs& args, int variant);

// "v11 SIMT SGEMM 128x128x8, 8 warps of 32x64 (8x8 a thread), cp.async 4 stages, ...".
std::string sgemm_describe(const Problem& p, int variant);

}  // namespace ops::cuda
