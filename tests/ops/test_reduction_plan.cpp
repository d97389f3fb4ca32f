// The host-side planning of our CUDA reductions (ops/cuda/reduction_plan.hpp), checked on the
// CPU: the merged dims against a naive element-by-element mapping (ops::Problem's output shape),
// the shape class against a set-based definition, and every variant's launches for coverage and
// consistency (tasks, chunks, strips, workspace), over every axis set of many shapes.
#include "ops/cuda/reduction_plan.hpp"

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "ops/problem.hpp"

namespace ops::cuda {
namespace {

using Shape = std::vector<std::int64_t>;

std::int64_t product(const Shape& s) {
  std::int64_t p = 1;
  for (auto d : s) p *= d;
  return p;
}

// Every subset of the axes of a rank-r shape, empty (= all) included.
std::vector<std::vector<int>> all_axis_sets(std::size_t rank) {
  std::vector<std::vector<int>> sets;
  for (unsigned mask = 0; mask < (1u << rank); ++mask) {
    std::vector<int> axes;
    for (std::size_t d = 0; d < rank; ++d)
      if (mask & (1u << d)) axes.push_back(int(d));
    sets.push_back(axes);
  }
  return sets;
}

bool is_reduced(const std::vector<int>& axes, std::size_t d) {
  return axes.empty() || std::find(axes.begin(), axes.end(), int(d)) != axes.end();
}

// The naive mapping: output index of input element i (row-major over the kept dims, in order).
std::int64_t naive_output_index(const Shape& shape, const std::vector<int>& axes, std::int64_t i) {
  std::int64_t o = 0, rest = i, stride = product(shape);
  for (std::size_t d = 0; d < shape.size(); ++d) {
    stride /= shape[d];
    const std::int64_t coord = rest / stride;
    rest %= stride;
    if (!is_reduced(axes, d)) o = o * shape[d] + coord;
  }
  return o;
}

// The same from the merged dims.
std::int64_t merged_output_index(const MergedDims& m, std::int64_t i) {
  Shape dims = m.dims;
  std::int64_t o = 0, rest = i, stride = product(dims);
  for (std::size_t d = 0; d < dims.size(); ++d) {
    stride /= dims[d];
    const std::int64_t coord = rest / stride;
    rest %= stride;
    if (!m.reduced[d]) o = o * dims[d] + coord;
  }
  return o;
}

// The class by its definition over the dims larger than 1: where the reduced ones lie.
ReductionClass naive_class(const Shape& shape, const std::vector<int>& axes) {
  std::string pattern;  // 'R' or 'K' per dim larger than 1
  for (std::size_t d = 0; d < shape.size(); ++d)
    if (shape[d] > 1) pattern += is_reduced(axes, d) ? 'R' : 'K';
  const auto first_r = pattern.find('R'), last_r = pattern.rfind('R');
  if (first_r == std::string::npos)
    return pattern.empty() ? ReductionClass::all : ReductionClass::columns;
  for (auto i = first_r; i <= last_r; ++i)
    if (pattern[i] != 'R') return ReductionClass::general;  // reduced dims not neighbours
  const bool kept_before = first_r > 0, kept_after = last_r + 1 < pattern.size();
  if (!kept_before && !kept_after) return ReductionClass::all;
  if (kept_before && !kept_after) return ReductionClass::rows;
  if (!kept_before) return ReductionClass::columns;
  return ReductionClass::middle;
}

Problem sum_problem(const Shape& shape, const std::vector<int>& axes) {
  Problem p;
  p.op = Op::sum;
  p.shape = shape;
  p.axes = axes.size() == shape.size() ? std::vector<int>{} : axes;
  return p;
}

void check_geometry(const Shape& shape, const std::vector<int>& axes) {
  SCOPED_TRACE(sum_problem(shape, axes).str());
  const ReductionGeometry g = classify_reduction(shape, axes);
  const MergedDims& m = g.merged;
  // Merged: no 1s, neighbours alternate, same element count.
  ASSERT_EQ(m.dims.size(), m.reduced.size());
  for (std::size_t i = 0; i < m.dims.size(); ++i) {
    EXPECT_GT(m.dims[i], 1);
    if (i) {
      EXPECT_NE(m.reduced[i], m.reduced[i - 1]);
    }
  }
  EXPECT_EQ(product(m.dims), product(shape));
  // Counts agree with the problem's output.
  const Problem p = sum_problem(shape, axes);
  EXPECT_EQ(g.outputs, p.output_elements());
  EXPECT_EQ(g.outputs * g.reduced_count, product(shape));
  EXPECT_EQ(g.cls, naive_class(shape, axes));
  // Every element goes to the same output, by the merged dims and, for every class but general,
  // by the [outer][reduce][inner] view.
  const std::int64_t n = product(shape);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t want = naive_output_index(shape, axes, i);
    ASSERT_EQ(merged_output_index(m, i), want) << "element " << i;
    if (g.cls != ReductionClass::general) {
      ASSERT_EQ(g.outer * g.reduce * g.inner, n);
      const std::int64_t o = i / (g.reduce * g.inner), c = i % g.inner;
      ASSERT_EQ(o * g.inner + c, want) << "element " << i;
    }
  }
  if (g.cls == ReductionClass::general) {
    EXPECT_GE(m.dims.size(), 3u);
    EXPECT_EQ(g.reduce, g.reduced_count);
  } else {
    EXPECT_EQ(g.reduce, g.reduced_count);
    EXPECT_EQ(g.outer * g.inner, g.outputs);
  }
}

TEST(ReductionPlanTest, MergingAndClassesOverEveryAxisSet) {
  const std::vector<Shape> shapes = {{1},
                                     {5},
                                     {1, 1},
                                     {4, 1},
                                     {1, 4},
                                     {2, 3},
                                     {2, 3, 4},
                                     {3, 1, 5},
                                     {1, 5, 1, 3},
                                     {4, 1, 1, 2},
                                     {2, 1, 3, 1, 2},
                                     {2, 2, 2, 2},
                                     {3, 2, 1, 2, 3},
                                     {2, 3, 2, 3, 2, 3},
                                     {1, 2, 1, 2, 1, 2, 1},
                                     {2, 3, 2, 1, 2, 3, 2, 2}};
  for (const Shape& s : shapes)
    for (const auto& axes : all_axis_sets(s.size())) check_geometry(s, axes);
}

TEST(ReductionPlanTest, MergingOfRandomShapes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t rank = 1 + rng() % 8;
    Shape s(rank);
    for (auto& d : s) d = std::int64_t(1 + rng() % 4);
    std::vector<int> axes;
    for (std::size_t d = 0; d < rank; ++d)
      if (rng() % 2) axes.push_back(int(d));
    check_geometry(s, axes);
  }
}

TEST(ReductionPlanTest, KnownShapes) {
  const auto cls = [](const Shape& s, const std::vector<int>& axes) {
    return classify_reduction(s, axes).cls;
  };
  EXPECT_EQ(cls({4, 512, 896}, {}), ReductionClass::all);
  EXPECT_EQ(cls({4, 512, 896}, {2}), ReductionClass::rows);
  EXPECT_EQ(cls({4, 512, 896}, {1, 2}), ReductionClass::rows);
  EXPECT_EQ(cls({4, 512, 896}, {0}), ReductionClass::columns);
  EXPECT_EQ(cls({4, 512, 896}, {0, 1}), ReductionClass::columns);
  EXPECT_EQ(cls({4, 512, 896}, {1}), ReductionClass::middle);
  EXPECT_EQ(cls({4, 512, 896}, {0, 2}), ReductionClass::general);
  EXPECT_EQ(cls({4, 1, 896}, {1}), ReductionClass::columns);  // nothing reduced: a copy
  EXPECT_EQ(cls({4, 1, 896}, {0, 1}), ReductionClass::columns);
  EXPECT_EQ(cls({4, 1, 896}, {1, 2}), ReductionClass::rows);
  EXPECT_EQ(cls({1, 512, 1}, {1}), ReductionClass::all);
  const ReductionGeometry g = classify_reduction({2, 1, 3, 4}, {0, 1});
  EXPECT_EQ(g.merged.dims, (Shape{2, 12}));
  EXPECT_EQ(g.merged.reduced, (std::vector<bool>{true, false}));
  EXPECT_EQ(g.reduce, 2);
  EXPECT_EQ(g.inner, 12);
}

// Rows: the tasks' chunks tile every row exactly once.
void check_rows(const RowLaunch& l, std::int64_t rows, std::int64_t length) {
  EXPECT_EQ(l.rows, rows);
  EXPECT_EQ(l.length, length);
  EXPECT_GE(l.splits, 1);
  EXPECT_GE(l.chunk, 1);
  EXPECT_GE(l.splits * l.chunk, length);
  EXPECT_LT((l.splits - 1) * l.chunk, length);  // no empty chunk
  if (l.splits > 1) {
    EXPECT_EQ(l.chunk % 64, 0);
  }
  EXPECT_EQ(l.tasks, rows * l.splits);
  const std::set<int> tprs = {1, 2, 4, 8, 16, 32, kRowBlockThreads};
  EXPECT_TRUE(tprs.count(l.threads_per_row)) << l.threads_per_row;
  EXPECT_EQ(l.block % l.threads_per_row, 0);
  EXPECT_TRUE(l.threads_per_row <= 32 || l.threads_per_row == l.block);
  EXPECT_GE(l.grid, 1);
  EXPECT_LE(l.grid, kMaxGrid);
  EXPECT_GE(l.grid * (l.block / l.threads_per_row), std::min(l.tasks, kMaxGrid));
}

// Columns: strips cover the columns, splits the reduced rows, the block's shape is whole.
void check_columns(const ColumnLaunch& l, std::int64_t batches, std::int64_t reduce,
                   std::int64_t inner, int elem_bytes) {
  EXPECT_EQ(l.batches, batches);
  EXPECT_EQ(l.reduce, reduce);
  EXPECT_EQ(l.inner, inner);
  EXPECT_EQ(inner % l.vec, 0);
  EXPECT_LE(l.vec * elem_bytes, 16);
  EXPECT_EQ(l.strips * l.vec, inner);
  EXPECT_EQ(l.block, kReduceBlock);
  EXPECT_EQ(l.strips_per_block * l.row_phases, l.block);
  EXPECT_EQ(l.strips_per_block & (l.strips_per_block - 1), 0);  // a power of two
  EXPECT_EQ(l.tiles_per_batch, ceil_div(l.strips, l.strips_per_block));
  EXPECT_GE(l.splits * l.rows_per_split, reduce);
  EXPECT_LT((l.splits - 1) * l.rows_per_split, reduce);
  EXPECT_EQ(l.tasks, l.splits * batches * l.tiles_per_batch);
  EXPECT_GE(l.grid, 1);
  EXPECT_LE(l.grid, kMaxGrid);
}

void check_plans(const Shape& shape, const std::vector<int>& axes, int sms) {
  for (int elem_bytes : {4, 2})
    for (int variant : {1, 2, 3}) {
      SCOPED_TRACE(sum_problem(shape, axes).str() + " v" + std::to_string(variant) + " " +
                   std::to_string(elem_bytes) + " bytes, " + std::to_string(sms) + " SMs");
      const ReductionPlan p = plan_reduction(shape, axes, elem_bytes, variant, sms);
      const ReductionGeometry& g = p.geometry;
      EXPECT_EQ(p.variant, variant);
      EXPECT_GE(p.launches, 1);
      EXPECT_LE(p.launches, 2);
      if (variant == 1) {
        EXPECT_EQ(p.kernel, ReductionKernel::naive);
        EXPECT_EQ(p.workspace_floats, 0);
        continue;
      }
      switch (g.cls) {
        case ReductionClass::all:
        case ReductionClass::rows:
          ASSERT_EQ(p.kernel, ReductionKernel::rows);
          check_rows(p.row, g.outer, g.reduce);
          if (p.row.splits > 1) {
            EXPECT_EQ(p.launches, 2);
            EXPECT_EQ(p.workspace_floats, g.outer * p.row.splits);
            check_rows(p.row_finish, g.outer, p.row.splits);
            EXPECT_EQ(p.row_finish.splits, 1);
          } else {
            EXPECT_EQ(p.launches, 1);
            EXPECT_EQ(p.workspace_floats, 0);
          }
          break;
        case ReductionClass::columns:
        case ReductionClass::middle:
          ASSERT_EQ(p.kernel, ReductionKernel::columns);
          check_columns(p.col, g.outer, g.reduce, g.inner, elem_bytes);
          if (p.col.splits > 1) {
            EXPECT_EQ(p.launches, 2);
            EXPECT_EQ(p.workspace_floats, p.col.splits * g.outputs);
            check_columns(p.col_finish, 1, p.col.splits, g.outputs, 4);
            EXPECT_EQ(p.col_finish.splits, 1);
          } else {
            EXPECT_EQ(p.launches, 1);
            EXPECT_EQ(p.workspace_floats, 0);
          }
          if (variant == 2) {
            EXPECT_EQ(p.col.strips_per_block, kReduceBlock);
          }
          break;
        case ReductionClass::general:
          EXPECT_EQ(p.kernel,
                    g.merged.reduced.back() ? ReductionKernel::general : ReductionKernel::naive);
          EXPECT_EQ(p.workspace_floats, 0);
          EXPECT_EQ(p.launches, 1);
          break;
      }
    }
}

TEST(ReductionPlanTest, PlansOverEveryAxisSet) {
  const std::vector<Shape> shapes = {
      {4, 512, 896},   {64, 4096, 4096},  {7, 13, 5},   {1, 3000017},
      {262144, 4},     {4, 262144},       {8, 4096, 2}, {2, 3, 2, 3, 2, 3, 2, 3},
      {3, 1, 4096, 1}, {1 << 20, 1 << 20}};
  for (const Shape& s : shapes)
    for (const auto& axes : all_axis_sets(s.size()))
      for (int sms : {1, 132}) check_plans(s, axes, sms);
}

TEST(ReductionPlanTest, ShapesOfTheBenchmark) {
  constexpr int kSms = 132;
  // Rows of 896: a warp per row, one launch.
  ReductionPlan p = plan_reduction({4, 512, 896}, {2}, 4, 2, kSms);
  EXPECT_EQ(p.kernel, ReductionKernel::rows);
  EXPECT_EQ(p.row.threads_per_row, 32);
  EXPECT_EQ(p.launches, 1);
  // All: per-block partials and a second kernel.
  p = plan_reduction({4, 512, 896}, {}, 4, 2, kSms);
  EXPECT_EQ(p.geometry.cls, ReductionClass::all);
  EXPECT_GT(p.row.splits, 1);
  EXPECT_EQ(p.launches, 2);
  // Axis 0 of 4 rows: plenty of strips, one launch.
  p = plan_reduction({4, 512, 896}, {0}, 4, 2, kSms);
  EXPECT_EQ(p.kernel, ReductionKernel::columns);
  EXPECT_EQ(p.col.vec, 4);
  EXPECT_EQ(p.launches, 1);
  // Few columns (896) over 2048 rows: split with a second pass.
  p = plan_reduction({4, 512, 896}, {0, 1}, 4, 2, kSms);
  EXPECT_GT(p.col.splits, 1);
  // 64 long rows: split across blocks.
  p = plan_reduction({64, 4096, 4096}, {1, 2}, 4, 2, kSms);
  EXPECT_EQ(p.row.rows, 64);
  EXPECT_GT(p.row.splits, 1);
  // Short rows: v3 puts several rows in a warp, v2 a warp per row.
  EXPECT_EQ(plan_reduction({262144, 4}, {1}, 4, 2, kSms).row.threads_per_row, 32);
  EXPECT_EQ(plan_reduction({262144, 4}, {1}, 4, 3, kSms).row.threads_per_row, 1);
  // Narrow columns: v3 gives each warp whole rows.
  p = plan_reduction({262144, 4}, {0}, 4, 3, kSms);
  EXPECT_EQ(p.col.strips_per_block, 1);
  EXPECT_EQ(p.col.row_phases, kReduceBlock);
  // fp16 columns take 8-element (16-byte) strips where the columns allow.
  EXPECT_EQ(plan_reduction({64, 4096}, {0}, 2, 2, kSms).col.vec, 8);
  EXPECT_EQ(plan_reduction({64, 4100}, {0}, 2, 2, kSms).col.vec, 4);
  EXPECT_EQ(plan_reduction({64, 4097}, {0}, 2, 2, kSms).col.vec, 1);
}

}  // namespace
}  // namespace ops::cuda
