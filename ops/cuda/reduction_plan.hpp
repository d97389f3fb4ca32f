// Host-side planning of the reductions of ops/cuda/reduction.cu (sum, mean, max over any axes):
// the axes merged into the fewest dimensions, the shape class that follows, and each variant's
// kernels with their grids and workspace. Plain C++ with no CUDA header, so that
// tests/ops/test_reduction_plan.cpp checks it on any machine.
//
// Merging: dimensions of size 1 are dropped (reducing or keeping them is the same), then runs of
// neighbouring dimensions that are all reduced or all kept become one dimension. What is left
// alternates reduced (R) and kept (K) dimensions, and names the class:
//   []  or [R]     all      one row of every element                   x = [1][reduce][1]
//   [K] R          rows     reduce the innermost (contiguous) dim      x = [outer][reduce][1]
//   [K]            columns  nothing reduced (a copy; reduce = 1)       x = [1][1][inner]
//   R K            columns  reduce a leading dim, columns contiguous   x = [1][reduce][inner]
//   K R K          middle   batched columns                            x = [outer][reduce][inner]
//   anything else  general  (R K R, K R K R, ...): strided index math over the merged dims
// e.g. 4x512x896 with axes {1,2} is [K R] = rows of 458752; 2x1x3x4 with axes {0,1} is [R K].
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace ops::cuda {

struct MergedDims {
  std::vector<std::int64_t> dims;  // outermost first; no 1s; neighbours differ in `reduced`
  std::vector<bool> reduced;
};

// shape with `axes` (sorted or not, from 0; empty = all) reduced, merged as above.
inline MergedDims merge_reduction_dims(const std::vector<std::int64_t>& shape,
                                       const std::vector<int>& axes) {
  MergedDims m;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    const bool red = axes.empty() || std::find(axes.begin(), axes.end(), int(d)) != axes.end();
    if (!m.dims.empty() && m.reduced.back() == red) {
      m.dims.back() *= shape[d];
    } else {
      m.dims.push_back(shape[d]);
      m.reduced.push_back(red);
    }
  }
  return m;
}

enum class ReductionClass { all, rows, columns, middle, general };

inline const char* to_string(ReductionClass c) {
  switch (c) {
    case ReductionClass::all:
      return "all";
    case ReductionClass::rows:
      return "rows";
    case ReductionClass::columns:
      return "columns";
    case ReductionClass::middle:
      return "middle";
    case ReductionClass::general:
      break;
  }
  return "general";
}

struct ReductionGeometry {
  ReductionClass cls = ReductionClass::all;
  MergedDims merged;
  // Every class but general: the input seen as x[outer][reduce][inner], output y[outer][inner].
  std::int64_t outer = 1, reduce = 1, inner = 1;
  std::int64_t outputs = 1;        // product of the kept dims
  std::int64_t reduced_count = 1;  // elements per output (the mean's divisor)
};

inline ReductionGeometry classify_reduction(const std::vector<std::int64_t>& shape,
                                            const std::vector<int>& axes) {
  ReductionGeometry g;
  g.merged = merge_reduction_dims(shape, axes);
  const auto& d = g.merged.dims;
  const auto& r = g.merged.reduced;
  for (std::size_t i = 0; i < d.size(); ++i) (r[i] ? g.reduced_count : g.outputs) *= d[i];
  const std::size_t n = d.size();
  if (n == 0) {
    g.cls = ReductionClass::all;
  } else if (n == 1) {
    g.cls = r[0] ? ReductionClass::all : ReductionClass::columns;
    (r[0] ? g.reduce : g.inner) = d[0];
  } else if (n == 2) {
    if (r[1]) {  // K R
      g.cls = ReductionClass::rows;
      g.outer = d[0];
      g.reduce = d[1];
    } else {  // R K
      g.cls = ReductionClass::columns;
      g.reduce = d[0];
      g.inner = d[1];
    }
  } else if (n == 3 && !r[0]) {  // K R K
    g.cls = ReductionClass::middle;
    g.outer = d[0];
    g.reduce = d[1];
    g.inner = d[2];
  } else {
    g.cls = ReductionClass::general;
    g.outer = g.inner = 0;  // not a [outer][reduce][inner] view
    g.reduce = g.reduced_count;
  }
  return g;
}

enum class ReductionKernel {
  naive,    // one thread per output, an odometer over the reduced dims (v1; v2's general K-last)
  general,  // v2 general with the innermost dim reduced: a warp per output
  rows,     // groups of threads_per_row threads per (row, chunk), 128-bit loads
  columns   // each thread a strip of `vec` columns, `row_phases` threads of a block per strip
};

// One launch of the rows kernel: `rows` rows of `length` elements, each row cut into `splits`
// chunks of `chunk` elements (the last may be shorter); a group of threads_per_row threads per
// (row, chunk) task, block / threads_per_row tasks per block at a time. splits > 1 writes float
// partials [rows][splits] to the workspace, finished by a second rows launch over them.
struct RowLaunch {
  std::int64_t rows = 0, length = 0, splits = 1, chunk = 0, tasks = 0, grid = 0;
  int threads_per_row = 32, block = 256;
};

// One launch of the columns kernel over x[batches][reduce][inner]: a thread owns a strip of `vec`
// neighbouring columns; a block covers strips_per_block strips times row_phases threads per strip
// (they take every row_phases-th row and meet in shared memory). The reduced dim is cut into
// `splits` ranges of rows_per_split rows; splits > 1 writes float partials
// [splits][batches * inner], finished by a second columns launch (reduce = splits).
struct ColumnLaunch {
  std::int64_t batches = 0, reduce = 0, inner = 0, strips = 0, tiles_per_batch = 0;
  std::int64_t splits = 1, rows_per_split = 0, tasks = 0, grid = 0;
  int vec = 1, strips_per_block = 256, row_phases = 1, block = 256;
};

struct ReductionPlan {
  int variant = 0;
  ReductionGeometry geometry;
  ReductionKernel kernel = ReductionKernel::naive;
  RowLaunch row, row_finish;     // kernel == rows (row_finish used when row.splits > 1)
  ColumnLaunch col, col_finish;  // kernel == columns (col_finish used when col.splits > 1)
  std::int64_t grid = 0;         // naive and general kernels
  int block = 256;
  std::int64_t workspace_floats = 0;
  int launches = 1;
};

// Tuning constants (measured on an H100/H200, see reduction.cu's header).
inline constexpr int kReduceBlock = 256;           // threads of every block but block-per-row
inline constexpr int kRowBlockThreads = 512;       // block per row (and per chunk of a split row)
inline constexpr std::int64_t kMaxGrid = 1 << 20;  // kernels loop over the tasks beyond
inline constexpr int kBlocksPerSm = 8;             // target of 256-thread blocks for splitting
// A warp per row for rows up to this many 16-byte vectors (8 per lane), and for longer rows too
// when there are at least kWarpRowsPerSm rows per SM (enough warps in flight: 64x4096x4096 over
// the last axis took 951 us with a warp per row, 2169 us with a 512-thread block per row on an
// H200); a block per row otherwise.
inline constexpr std::int64_t kWarpRowMaxVectors = 256;
inline constexpr std::int64_t kWarpRowsPerSm = 8;

inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}
inline int pow2_ceil(std::int64_t v) {  // smallest power of two >= v (v <= 2^30)
  int p = 1;
  while (p < v) p *= 2;
  return p;
}
inline int pow2_floor(std::int64_t v) {  // largest power of two <= v (1 <= v), at most 2^30
  int p = 1;
  while (p < (1 << 30) && 2 * std::int64_t(p) <= v) p *= 2;
  return p;
}

// Rows: `rows` rows of `length` elements of elem_bytes each (float partials: 4). v2 gives a warp
// to a row (a block to a long row when rows are few, see kWarpRowMaxVectors); v3 gives short rows
// fewer lanes (several rows per warp, about 4 vectors per lane). Either splits rows over blocks
// when there are too few rows to fill the device (allow_split).
inline RowLaunch plan_rows(std::int64_t rows, std::int64_t length, int elem_bytes, int variant,
                           int sm_count, bool allow_split) {
  RowLaunch l;
  l.rows = rows;
  l.length = length;
  const std::int64_t vec = 16 / elem_bytes, vectors = ceil_div(length, vec);
  if (vectors > kWarpRowMaxVectors && rows < kWarpRowsPerSm * sm_count) {
    l.threads_per_row = l.block = kRowBlockThreads;
  } else if (variant >= 3) {
    l.threads_per_row = std::min(32, pow2_ceil(ceil_div(vectors, 4)));
  } else {
    l.threads_per_row = 32;
  }
  // Split: fewer tasks than about 4 blocks of 512 threads per SM, and rows long enough that
  // each chunk still gives every thread of a block-per-row group 4 vectors.
  const std::int64_t min_chunk = std::int64_t(kRowBlockThreads) * 4 * vec;
  const std::int64_t target_tasks = std::int64_t(sm_count) * 4;
  if (allow_split && rows < target_tasks && length >= 2 * min_chunk) {
    l.splits = std::min(ceil_div(target_tasks, rows), length / min_chunk);
    l.threads_per_row = l.block = kRowBlockThreads;
  }
  // Chunks: whole multiples of 64 elements, so that every chunk of an aligned row is aligned.
  l.chunk = l.splits == 1 ? length : ceil_div(ceil_div(length, l.splits), 64) * 64;
  l.splits = ceil_div(length, l.chunk);
  l.tasks = rows * l.splits;
  const std::int64_t per_block = l.block / l.threads_per_row;
  l.grid = std::min(ceil_div(l.tasks, per_block), kMaxGrid);
  return l;
}

// Columns of x[batches][reduce][inner] (elem_bytes each). v2: a block is 256 strips, each thread
// loops over all rows of its split; v3: a block is 32 strips (fewer where there are fewer) times
// up to 256/32 row phases that meet in shared memory (few columns still fill a block, each warp
// reads whole row segments). Both split the reduced dim
// when the tiles alone give fewer than kBlocksPerSm blocks per SM (allow_split).
inline ColumnLaunch plan_columns(std::int64_t batches, std::int64_t reduce, std::int64_t inner,
                                 int elem_bytes, int variant, int sm_count, bool allow_split) {
  ColumnLaunch l;
  l.batches = batches;
  l.reduce = reduce;
  l.inner = inner;
  l.vec = 16 / elem_bytes;
  while (inner % l.vec != 0) l.vec /= 2;
  l.strips = inner / l.vec;
  l.block = kReduceBlock;
  if (variant >= 3) {
    // 32 strips (one warp's 512-byte row segment) or fewer when there are fewer, the rest of the
    // block in row phases; no more phases than leave each thread 8 rows.
    const int narrow = pow2_ceil(std::min<std::int64_t>(l.strips, 32));
    l.row_phases = std::min(l.block / narrow, pow2_floor(std::max<std::int64_t>(1, reduce / 8)));
    l.strips_per_block = l.block / l.row_phases;
  } else {
    l.strips_per_block = l.block;
  }
  l.row_phases = l.block / l.strips_per_block;
  l.tiles_per_batch = ceil_div(l.strips, l.strips_per_block);
  const std::int64_t tiles = batches * l.tiles_per_batch;
  const std::int64_t target = std::int64_t(sm_count) * kBlocksPerSm;
  // Each thread keeps at least 8 rows of its split (4 loads in flight, twice).
  const std::int64_t max_splits = std::max<std::int64_t>(1, reduce / (8 * l.row_phases));
  if (allow_split && tiles < target) l.splits = std::min(ceil_div(target, tiles), max_splits);
  l.rows_per_split = ceil_div(reduce, l.splits);
  l.splits = ceil_div(reduce, l.rows_per_split);
  l.tasks = l.splits * tiles;
  l.grid = std::min(l.tasks, kMaxGrid);
  return l;
}

// The plan of `variant` (1 naive, 2 shaped kernels, 3 tuned shapes) for shape/axes with
// elements of elem_bytes (4 fp32, 2 fp16/bf16), on a device of sm_count multiprocessors.
inline ReductionPlan plan_reduction(const std::vector<std::int64_t>& shape,
                                    const std::vector<int>& axes, int elem_bytes, int variant,
                                    int sm_count) {
  ReductionPlan p;
  p.variant = variant;
  p.geometry = classify_reduction(shape, axes);
  const ReductionGeometry& g = p.geometry;
  const auto naive = [&] {
    p.kernel = ReductionKernel::naive;
    p.block = kReduceBlock;
    p.grid = std::min(ceil_div(g.outputs, p.block), kMaxGrid);
  };
  if (variant <= 1) {
    naive();
    return p;
  }
  switch (g.cls) {
    case ReductionClass::all:
    case ReductionClass::rows:
      p.kernel = ReductionKernel::rows;
      p.row = plan_rows(g.outer, g.reduce, elem_bytes, variant, sm_count, true);
      if (p.row.splits > 1) {
        p.row_finish = plan_rows(g.outer, p.row.splits, 4, variant, sm_count, false);
        p.workspace_floats = p.row.tasks;
        p.launches = 2;
      }
      break;
    case ReductionClass::columns:
    case ReductionClass::middle:
      p.kernel = ReductionKernel::columns;
      p.col = plan_columns(g.outer, g.reduce, g.inner, elem_bytes, variant, sm_count, true);
      if (p.col.splits > 1) {
        p.col_finish = plan_columns(1, p.col.splits, g.outputs, 4, 3, sm_count, false);
        p.workspace_floats = p.col.splits * g.outputs;
        p.launches = 2;
      }
      break;
    case ReductionClass::general:
      if (g.merged.reduced.back()) {
        p.kernel = ReductionKernel::general;
        p.block = kReduceBlock;
        p.grid = std::min(ceil_div(g.outputs, p.block / 32), kMaxGrid);
      } else {
        naive();
      }
      break;
  }
  return p;
}

}  // namespace ops::cuda
