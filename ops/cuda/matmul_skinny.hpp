// Variant 10 of the op suite's matmul: a skinny-M GEMM for m <= 16 (decode-like shapes, where
// C = A B is a stream of the weights B). The kernel and its plan: ops/cuda/matmul_skinny.cu;
// ops/cuda/matmul_plan.cpp lists it, ops/cuda/matmul.cu dispatches it.
#pragma once

#include <string>

#include "ops/cuda/kernels.hpp"

namespace ops::cuda {

constexpr int kSkinnyVariant = 10;

// Whether variant 10 runs p here: fp16 or bf16, m <= 16, n and k in int, k at most 8 splits of
// the longest k range a block keeps in shared memory, a device with thread block clusters (sm_90
// or newer) and the kernel built for it; false without a device.
bool skinny_runs(const Problem& p);

// The launch of p: 128-column blocks, each a cluster of `splits` blocks along k of `kc` values.
struct SkinnyPlan {
  int row_groups = 1;  // 8-row groups of m (1 for m <= 8, else 2)
  int col_blocks = 0;  // ceil(n / 128)
  int splits = 1;      // blocks per cluster along k (1..8)
  int kc = 0;          // k values per block, a multiple of 16
  int shared_bytes = 0;
};
SkinnyPlan skinny_plan(const Problem& p);

// Enqueues variant 10 on args.stream (check skinny_runs first); no workspace.
void skinny_launch(const OpArgs& args);

// "v10 skinny-M mma.sync m16n8k16 bf16, 128-column blocks, cluster split-K 8 of 512": the plan.
std::string skinny_describe(const Problem& p);

}  // namespace ops::cuda
