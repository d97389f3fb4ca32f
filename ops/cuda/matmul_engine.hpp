// The op suite's matmul on the Hopper GEMM engine (core/cuda/gemm/): C[b] = A[b] B[b], row-major,
// fp16, bf16 and tf32 (FP32 storage: B is first transposed to [b][n][k] and rounded to nearest
// tf32 in the workspace, since wgmma reads 32-bit operands K-major only; A is read as stored, its
// values truncated to tf32 by wgmma). Variant 4 is the engine's automatic choice (gemm_auto_plan);
// 5-9 force one choice each, to time them side by side: 5 split-K, 6 no split-K, 7 the 128x128
// tile, 8 the 128x256 tile, 9 the ping-pong schedule. ops/cuda/matmul_plan.cpp lists them,
// ops/cuda/matmul.cu dispatches them.
#pragma once

#include <cstddef>
#include <string>

#include "ops/cuda/kernels.hpp"

namespace ops::cuda {

inline bool engine_variant(int variant) {
  return variant >= 4 && variant <= 9;
}

// Whether the engine runs p here: fp16, bf16 or tf32, k and n multiples of 8 (the tensor copies'
// 16-byte rows), an sm_90a build and an sm_90 device.
bool engine_runs(const Problem& p);

// The workspace of the variant's plan: tf32's transposed B, then the FP32 partials of split-K (0
// for fp16/bf16 without split-K, or where the engine does not run p).
std::size_t engine_workspace_bytes(const Problem& p, int variant);

// Launches the variant's plan on args.stream (check engine_runs first).
void engine_launch(const OpArgs& args, int variant);

// "v4 wgmma sm90a bf16 128x256x64 tile, ...": the plan, for the result's algorithm field.
std::string engine_describe(const Problem& p, int variant);

}  // namespace ops::cuda
