// Variant 15 of the op suite's matmul: fp32 (FP32 accuracy) on tensor cores by 3xTF32. Each
// operand is split into two tf32 values (ops/cuda/tf32_split.hpp) in the workspace, A' = [A_big |
// A_big | A_small] and B' = [B_big | B_small | B_big] along k, and one tf32 GEMM of depth 3 kp sums
// the three products in one FP32 accumulator: the Hopper engine (core/cuda/gemm/, B' written
// K-major as it reads tf32) on sm_90 where it takes the shape (n a multiple of 8), else variant
// 3's mma.sync tf32 kernel (B' row-major; sm_80 or newer). The kernels: ops/cuda/matmul_3xtf32.cu;
// ops/cuda/matmul_plan.cpp lists the variant, ops/cuda/matmul.cu dispatches it.
#pragma once

#include <cstddef>
#include <string>

#include "ops/cuda/kernels.hpp"

namespace ops::cuda {

constexpr int kTf32x3Variant = 15;

// Whether variant 15 runs p here: fp32, the split problem (depth 3 kp) inside the engine's or
// variant 3's limits, a device of compute capability 8.0 or newer; false without a device.
bool tf32x3_runs(const Problem& p);

// A' and B' (b (m + n) 3 kp floats), then the tf32 GEMM's own workspace (split-K partials).
std::size_t tf32x3_workspace_bytes(const Problem& p);

// Enqueues the split and the GEMM on args.stream (check tf32x3_runs first).
void tf32x3_launch(const OpArgs& args);

// "v15 3xTF32: ... then v4 wgmma sm90a tf32 ...": the split and the GEMM's plan.
std::string tf32x3_describe(const Problem& p);

}  // namespace ops::cuda
