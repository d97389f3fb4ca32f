// The GEMM engine's strict-FP32 path on CUDA cores (core/cuda/gemm/sgemm.cu; its plans and checks:
// sgemm_plan.cpp): C[b][m][n] = epilogue(sum_k A[b][m][k] B[b][k][n]) in FP32 with FP32 FMAs (no
// TF32), any m, n, k, warp-tiled SGEMMs fed by a multi-stage cp.async pipeline (sm_80 or newer),
// one configuration each (kSgemmConfigs). A row-major [b][m][k] or M-major [b][k][m]
// (SgemmShape::a_m_major), B row-major [b][k][n] or K-major [b][n][k] (b_k_major), C row-major
// [b][m][n], all contiguous, 16-byte aligned. The op suite's matmul variants 11-14 and 16-20 run
// it (ops/cuda/matmul_sgemm.cpp), the MLP's own fp32 step (models/mlp/cuda/own_mlp_sgemm.cpp)
// too, with its epilogues. The launcher only enqueues on `stream` and checks the launch (CUDA
// graphs can capture it).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/cuda/gemm/gemm.hpp"  // Epilogue

namespace bench::gemm {

// One SGEMM configuration: a bm x bn block tile of (bm / wm) x (bn / wn) warps, each warp a
// wm x wn tile with its lanes in lane_rows x (32 / lane_rows), so that a thread holds
// (wm / lane_rows) x (wn * lane_rows / 32) outputs as 4x4 blocks spread over the warp tile; k
// slices of bk values in `stages` shared-memory stages; __launch_bounds__ minimum min_blocks.
// `id` names it: the op suite's variant number (11-20), or 64 and 32 for the small tiles.
struct SgemmConfig {
  int id;
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
// 64: a 64x64x16 tile of 4 warps of 32x32 (8x4 a thread), 4 stages, double-buffered, for
// problems whose 128-row tiles leave SMs idle (the MLP's); 32: a 32x32x16 tile of 2 warps of
// 16x32 (4x4 a thread), the same pipeline, for the smallest.
inline constexpr SgemmConfig kSgemmConfigs[] = {
    {11, 128, 128, 8, 32, 64, 4, 4, 2, false},  {12, 128, 128, 16, 32, 64, 4, 3, 2, false},
    {13, 128, 128, 16, 64, 64, 4, 3, 2, false}, {14, 128, 256, 8, 64, 64, 4, 3, 1, false},
    {16, 128, 128, 16, 32, 64, 4, 4, 2, true},  {17, 256, 128, 16, 32, 64, 4, 3, 1, true},
    {18, 128, 256, 16, 64, 64, 4, 4, 1, true},  {19, 128, 256, 32, 64, 64, 4, 3, 1, true},
    {20, 256, 128, 16, 64, 64, 4, 4, 1, true},  {64, 64, 64, 16, 32, 32, 4, 4, 4, true},
    {32, 32, 32, 16, 16, 32, 4, 4, 8, true},
};
inline constexpr int kSgemmConfigCount = int(sizeof(kSgemmConfigs) / sizeof(kSgemmConfigs[0]));

// The configuration's index in kSgemmConfigs, -1 for an id that names none.
constexpr int sgemm_index(int id) {
  for (int i = 0; i < kSgemmConfigCount; ++i)
    if (kSgemmConfigs[i].id == id) return i;
  return -1;
}

struct SgemmShape {
  std::int64_t batch = 1, m = 0, n = 0, k = 0;
  bool a_m_major = false;  // A stored [b][k][m] (A^T row-major)
  bool b_k_major = false;  // B stored [b][n][k] (B^T row-major)
};

// A launch: the configuration (kSgemmConfigs' id), its tiles per batch and the splits of K
// (1 = none).
struct SgemmPlan {
  int config = 12;
  std::int64_t tiles = 0;
  int splits = 1;
};

// Configuration `id` for s: split-K where the grid leaves SMs idle (fewer blocks than
// min_blocks per SM): enough splits to fill them, each split min_slices k slices or more, at
// most 16; splits > 0 asks for that many instead (fewer where the slices are fewer).
SgemmPlan sgemm_plan(const SgemmShape& s, int id, int sm_count, int min_slices = 8, int splits = 0);

// The FP32 partials of a split-K plan (0 without splits).
std::size_t sgemm_workspace_bytes(const SgemmShape& s, const SgemmPlan& plan);

// Empty when sgemm takes s with epilogue kind e on the current device (compute capability 8.0
// or newer, m, n, k and the tiles in int; not both A M-major and B K-major), else why not. The
// configurations 11-20 take row-major A and B with the identity epilogue (the op suite's
// matmul), 64 and 32 every layout and kind; dgelu_erf's aux_t is not written here (an M-major A
// reads the gradient as it is). Never throws.
std::string sgemm_unsupported_reason(const SgemmShape& s, EpilogueKind e);

// Enqueues it on stream. A split-K plan needs `workspace` (sgemm_workspace_bytes, 16-byte
// aligned) and runs two kernels: the splits, then their sum in split order with the epilogue.
// The epilogue's tensors are FP32 (bias n values; residual and aux C's shape; column_sums n
// values, added to atomically). Throws std::invalid_argument where s or e is not supported or a
// buffer is missing or misaligned, std::logic_error for a plan of no configuration.
void sgemm(const SgemmShape& s, const SgemmPlan& plan, const float* a, const float* b, float* c,
           const Epilogue& e, void* workspace, cudaStream_t stream);

// "SIMT SGEMM 128x128x16, 8 warps of 32x64 (8x8 a thread), cp.async 3 stages, 2 blocks/SM[,
// fragments double-buffered][, split-K 4]".
std::string sgemm_plan_name(const SgemmPlan& plan);

}  // namespace bench::gemm
