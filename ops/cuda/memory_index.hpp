// Index math of our element and memory kernels (ops/cuda/elementwise.cu, ops/cuda/memory.cu),
// host and device alike, so that tests/ops/test_cuda_index.cpp checks it on the CPU (no CUDA
// needed there):
//   - broadcast: the two operands' shapes folded into groups of neighbouring dimensions that the
//     second operand either all broadcasts or all keeps, then classified: same shape, scalar, row
//     (rhs 1xN after folding), column (rhs Mx1), general (three or more groups);
//   - permute (transpose is the permute that swaps the last two axes): size-1 axes dropped and
//     output axes that stay neighbours in the input merged, then classified: a plain copy, a copy
//     of whole rows (the last axis stays last), or a tiled transpose over two axes (the input's
//     contiguous one and the output's) with the other axes as a batch;
//   - concat: the output as rows of `inner` elements taken from each input in turn;
//   - vector widths and grid sizes.
// Offsets and counts are int64 (tensors reach 2^40 elements, ops/problem.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <numeric>
#include <utility>
#include <vector>

#include "ops/problem.hpp"

#if defined(__CUDACC__)
#define OPS_HD __host__ __device__ __forceinline__
#else
#define OPS_HD inline
#endif

namespace ops::cuda {

inline constexpr int kMaxDims = 8;  // the problem's highest rank (ops/problem.cpp)

// ---- Broadcast of the second operand of element ops -------------------------------------------

enum class Broadcast { same, scalar, row, column, general };

// Passed by value to kernels. Groups are in row-major order, the last one innermost.
struct BroadcastPlan {
  Broadcast kind = Broadcast::same;
  int rank = 1;                            // groups
  std::int64_t dims[kMaxDims] = {};        // each group's extent (the output's)
  std::int64_t rhs_stride[kMaxDims] = {};  // the second operand's stride, 0 where broadcast
  std::int64_t cols = 1;                   // the innermost group's extent
  std::int64_t rows = 1;                   // the product of the other groups
  bool inner_broadcast = false;            // the innermost group is broadcast
};

// shape: the output (and first operand); rhs: the second operand's shape of the same rank, each
// dimension equal or 1 (Problem::validate), or empty for the same shape.
inline BroadcastPlan plan_broadcast(const std::vector<std::int64_t>& shape,
                                    const std::vector<std::int64_t>& rhs_shape) {
  const std::vector<std::int64_t>& rhs = rhs_shape.empty() ? shape : rhs_shape;
  BroadcastPlan p;
  bool broadcast[kMaxDims] = {};
  p.rank = 0;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;  // broadcast or not, it moves no index
    const bool b = rhs[d] == 1;
    if (p.rank > 0 && broadcast[p.rank - 1] == b) {
      p.dims[p.rank - 1] *= shape[d];
    } else {
      p.dims[p.rank] = shape[d];
      broadcast[p.rank++] = b;
    }
  }
  if (p.rank == 0) {  // one element
    p.rank = 1;
    p.dims[0] = 1;
  }
  std::int64_t stride = 1;
  for (int g = p.rank - 1; g >= 0; --g) {
    p.rhs_stride[g] = broadcast[g] ? 0 : stride;
    if (!broadcast[g]) stride *= p.dims[g];
  }
  p.cols = p.dims[p.rank - 1];
  p.inner_broadcast = broadcast[p.rank - 1];
  for (int g = 0; g + 1 < p.rank; ++g) p.rows *= p.dims[g];
  if (p.rank == 1)
    p.kind = broadcast[0] ? Broadcast::scalar : Broadcast::same;
  else if (p.rank == 2)  // the two groups differ: one is broadcast, the other not
    p.kind = broadcast[0] ? Broadcast::row : Broadcast::column;
  else
    p.kind = Broadcast::general;
  return p;
}

// The second operand's offset of output element i.
OPS_HD std::int64_t broadcast_offset(const BroadcastPlan& p, std::int64_t i) {
  std::int64_t offset = 0;
  for (int g = p.rank - 1; g >= 0; --g) {
    offset += (i % p.dims[g]) * p.rhs_stride[g];
    i /= p.dims[g];
  }
  return offset;
}

// The second operand's offset of the first element of row `row` (rows of p.cols elements); an
// element of the row is that plus its column when the innermost group is not broadcast.
OPS_HD std::int64_t broadcast_row_offset(const BroadcastPlan& p, std::int64_t row) {
  std::int64_t offset = 0;
  for (int g = p.rank - 2; g >= 0; --g) {
    offset += (row % p.dims[g]) * p.rhs_stride[g];
    row /= p.dims[g];
  }
  return offset;
}

// ---- Permute and transpose --------------------------------------------------------------------

// Output axis i reads input axis perm[i]; transpose swaps the last two axes.
inline std::vector<int> permutation_of(const Problem& p) {
  if (p.op == Op::permute) return p.perm;
  std::vector<int> perm(p.shape.size());
  std::iota(perm.begin(), perm.end(), 0);
  if (perm.size() >= 2) std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return perm;
}

// The permute folded: output axes in output order, each with its input stride. Passed by value.
struct PermutePlan {
  int rank = 1;
  std::int64_t dims[kMaxDims] = {};       // output extents
  std::int64_t in_stride[kMaxDims] = {};  // input elements between neighbours along the axis
  std::int64_t elements = 1;
};

inline PermutePlan plan_permute(const std::vector<std::int64_t>& shape,
                                const std::vector<int>& perm) {
  std::vector<std::int64_t> istride(shape.size(), 1);
  for (std::size_t d = shape.size(); d-- > 1;) istride[d - 1] = istride[d] * shape[d];
  PermutePlan p;
  p.rank = 0;
  for (int a : perm) {
    const std::int64_t extent = shape[std::size_t(a)], stride = istride[std::size_t(a)];
    if (extent == 1) continue;
    p.elements *= extent;
    // Output neighbours that are input neighbours in the same order: one axis.
    if (p.rank > 0 && p.in_stride[p.rank - 1] == stride * extent) {
      p.dims[p.rank - 1] *= extent;
      p.in_stride[p.rank - 1] = stride;
    } else {
      p.dims[p.rank] = extent;
      p.in_stride[p.rank++] = stride;
    }
  }
  if (p.rank == 0) {
    p.rank = 1;
    p.dims[0] = p.in_stride[0] = 1;
  }
  return p;
}

enum class PermuteKind { copy, rows, tiled };

inline PermuteKind permute_kind(const PermutePlan& p) {
  if (p.rank == 1) return PermuteKind::copy;  // folded to one axis: the identity
  return p.in_stride[p.rank - 1] == 1 ? PermuteKind::rows : PermuteKind::tiled;
}

// The input offset of output element o.
OPS_HD std::int64_t permute_source(const PermutePlan& p, std::int64_t o) {
  std::int64_t offset = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    offset += (o % p.dims[d]) * p.in_stride[d];
    o /= p.dims[d];
  }
  return offset;
}

// PermuteKind::rows: the input offset of output row `row` (rows of dims[rank - 1] elements, which
// are contiguous in the input too).
OPS_HD std::int64_t permute_row_source(const PermutePlan& p, std::int64_t row) {
  std::int64_t offset = 0;
  for (int d = p.rank - 2; d >= 0; --d) {
    offset += (row % p.dims[d]) * p.in_stride[d];
    row /= p.dims[d];
  }
  return offset;
}

// PermuteKind::tiled as a batch of 2D transposes. x runs along the input's contiguous axis, y
// along the output's: input element (b, y, x) is at in_base(b) + y * in_stride_y + x and goes to
// out_base(b) + x * out_stride_x + y. Every input stride is a multiple of nx and every output
// stride a multiple of ny, so vectors of V elements stay aligned when V divides nx and ny.
struct TilePlan {
  std::int64_t nx = 1, ny = 1;
  std::int64_t in_stride_y = 1, out_stride_x = 1;
  int batch_rank = 0;  // the other axes, in output order
  std::int64_t batch_dims[kMaxDims] = {};
  std::int64_t batch_in_stride[kMaxDims] = {};
  std::int64_t batch_out_stride[kMaxDims] = {};
  std::int64_t batches = 1;
};

inline TilePlan plan_tiles(const PermutePlan& p) {
  std::int64_t ostride[kMaxDims];
  ostride[p.rank - 1] = 1;
  for (int d = p.rank - 1; d > 0; --d) ostride[d - 1] = ostride[d] * p.dims[d];
  int q = 0;  // the output axis that is the input's contiguous one
  while (q < p.rank && p.in_stride[q] != 1) ++q;
  TilePlan t;
  t.nx = p.dims[q];
  t.out_stride_x = ostride[q];
  t.ny = p.dims[p.rank - 1];
  t.in_stride_y = p.in_stride[p.rank - 1];
  for (int d = 0; d < p.rank - 1; ++d) {
    if (d == q) continue;
    t.batch_dims[t.batch_rank] = p.dims[d];
    t.batch_in_stride[t.batch_rank] = p.in_stride[d];
    t.batch_out_stride[t.batch_rank++] = ostride[d];
    t.batches *= p.dims[d];
  }
  return t;
}

// The input and output offsets of batch b's (0, 0) element.
OPS_HD void tile_batch_offsets(const TilePlan& t, std::int64_t b, std::int64_t& in,
                               std::int64_t& out) {
  in = 0;
  out = 0;
  for (int d = t.batch_rank - 1; d >= 0; --d) {
    const std::int64_t c = b % t.batch_dims[d];
    b /= t.batch_dims[d];
    in += c * t.batch_in_stride[d];
    out += c * t.batch_out_stride[d];
  }
}

// ---- Concat -----------------------------------------------------------------------------------

// The output is outer * inputs rows of inner elements; row k is row k / inputs of input
// k % inputs.
struct ConcatPlan {
  std::int64_t outer = 1, inner = 1;
  int inputs = 2;
};

inline ConcatPlan plan_concat(const Problem& p) {
  ConcatPlan c;
  c.inputs = p.inputs;
  for (std::size_t d = 0; d < p.shape.size(); ++d)
    (int(d) < p.axis ? c.outer : c.inner) *= p.shape[d];
  return c;
}

// ---- Vectors and grids ------------------------------------------------------------------------

// Elements of `element_bytes` in a 16-byte vector when it divides every count, else 1.
inline int vector_width(int element_bytes, std::initializer_list<std::int64_t> counts) {
  const int v = 16 / element_bytes;
  for (std::int64_t c : counts)
    if (c % v != 0) return 1;
  return v;
}

// Blocks for `items` work items of `per_block` each, at most `max_blocks` (a grid-stride loop does
// the rest), at least 1.
inline std::int64_t grid_blocks(std::int64_t items, std::int64_t per_block,
                                std::int64_t max_blocks) {
  return std::max<std::int64_t>(1, std::min((items + per_block - 1) / per_block, max_blocks));
}

// Threads of a row-gather group: the smallest power of two from 1 to 32 whose 4 vectors per lane
// cover a row of `row_vectors`.
inline int row_group_lanes(std::int64_t row_vectors) {
  int lanes = 1;
  while (lanes < 32 && 4 * std::int64_t(lanes) < row_vectors) lanes *= 2;
  return lanes;
}

}  // namespace ops::cuda
