// Variants 11-14 and 16-20 of the op suite's matmul: strict FP32 on CUDA cores (no TF32), the
// GEMM engine's warp-tiled SGEMMs (core/cuda/gemm/sgemm.hpp), one configuration each, timed side
// by side against cuBLAS's FP32 GEMM; 12 and 18 are fp32's default on sm_80+ (matmul_plan.cpp).
// This file's launch: ops/cuda/matmul_sgemm.cpp; ops/cuda/matmul_plan.cpp lists the variants,
// ops/cuda/matmul.cu dispatches them.
#pragma once

#include <cstddef>
#include <string>

#include "core/cuda/gemm/sgemm.hpp"
#include "ops/cuda/kernels.hpp"
#include "ops/cuda/matmul_plan.hpp"

namespace ops::cuda {

// The variants are the engine's SGEMM configurations 11-14 and 16-20 (core/cuda/gemm/sgemm.hpp's
// kSgemmConfigs, whose comments say what each is), with row-major operands and no epilogue.
inline bool sgemm_variant(int variant) {
  return variant >= 11 && variant <= 20 && bench::gemm::sgemm_index(variant) >= 0;
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
