// Variants 11-14 of the op suite's matmul: strict FP32 on CUDA cores (no TF32), warp-tiled SGEMMs
// fed by a multi-stage cp.async pipeline, one configuration each (kSgemmConfigs), to be timed
// side by side against variant 2 and cuBLAS's FP32 GEMM. The kernel: ops/cuda/matmul_sgemm.cu;
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
};

// 11: CUTLASS's SIMT SGEMM policy (default_mma_core_simt.h: 128x128x8, warps of 32x64, 8x8 a
// thread) on a 4-stage cp.async pipeline, two blocks per SM. 12: the same with k slices of 16
// (half the barriers), 3 stages. 13: 4 warps of 64x64 (16x8 a thread: more FMAs per shared
// load, siboehm's warp-tiling shape), k slices of 16, 3 stages, two blocks of 128 threads per SM.
// 14: a 128x256x8 tile of 8 warps of 64x64 (16x8 a thread; half the operand traffic per FMA of
// 11), 3 stages, one block per SM (up to 255 registers).
inline constexpr SgemmConfig kSgemmConfigs[] = {
    {11, 128, 128, 8, 32, 64, 4, 4, 2},
    {12, 128, 128, 16, 32, 64, 4, 3, 2},
    {13, 128, 128, 16, 64, 64, 4, 3, 2},
    {14, 128, 256, 8, 64, 64, 4, 3, 1},
};
inline constexpr int kSgemmFirstVariant = 11;
inline constexpr int kSgemmConfigCount = int(sizeof(kSgemmConfigs) / sizeof(kSgemmConfigs[0]));

inline bool sgemm_variant(int variant) {
  return variant >= kSgemmFirstVariant && variant < kSgemmFirstVariant + kSgemmConfigCount;
}
inline const SgemmConfig& sgemm_config(int variant) {
  return kSgemmConfigs[variant - kSgemmFirstVariant];
}

// Whether variants 11-14 run p here: fp32, m, n, k and the tiles in int, a device of compute
// capability 8.0 or newer (cp.async); false without a device. Never throws.
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
