// matmul's host side (ops/cuda/matmul.cu holds its kernels and their launches): which variants run
// a problem, the launch plan of variants 2 and 3 (block tile, k slice, split-K), the workspace a
// variant needs and its one-line description; with matmul_launch, the family own_cuda runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cuda/mma_index.hpp"
#include "ops/cuda/kernels.hpp"
#include "ops/problem.hpp"

namespace ops::cuda {

bench::MmaDtype mma_dtype(DataType dt);

// Whether the rows of A (k values) and B (n values) are whole 16-byte vectors, as cp.async needs;
// else variant 3 loads through registers.
bool vector_rows(const Problem& p);

// A launch: its block tile (bm x bn; variant 3: 128x128 = Mma128x128, 64x64 = Mma64x64 or
// Mma64x64Regs), slices of slice_k, and the splits of K (1 = none).
struct Plan {
  int bm = 128, bn = 128, slice_k = 8, splits = 1;
  std::int64_t tiles = 0;  // per batch
};

// Variant 2: 128x128. Variant 3: 128x128 where that grid gives every SM a block, else 64x64.
// Either splits K where the grid leaves SMs idle: enough splits for two blocks per SM, each 8
// slices or more, at most 16 (variant 3: only the 64x64 tile, whose FP32 staging fits).
Plan plan_of(const Problem& p, int variant);

// Whether --variant search times variant v of matmul on p: every variant that runs p but the naive
// 1 (seconds on large shapes) and 3xTF32 (15: tf32 products, not the strict FP32 arithmetic of the
// fp32 variants).
bool matmul_searchable(const Problem& p, int variant);

// The FP32 partials of a split-K plan (0 without splits).
std::size_t partial_bytes(const Problem& p, const Plan& plan);

// Enqueues variant `variant` of matmul (matmul.cu): the family's launch.
void matmul_launch(const OpArgs& args, int variant);

// Split-K's second pass in FP32 (matmul.cu): c = the sum of `splits` partials (partial + s *
// elements), in split order, on stream.
void split_reduce_fp32(const float* partial, int splits, std::int64_t elements, float* c,
                       cudaStream_t stream);

}  // namespace ops::cuda
