// The index math of our element and memory kernels (ops/cuda/memory_index.hpp), checked on the
// CPU against naive loops written as ops/ref_ops.cpp writes them:
//   - broadcast: the folded plan's kind, and the second operand's offset of every element (whole
//     and by row) equal the unfolded index;
//   - permute and transpose: the folded plan's kind and every output element's source; the rows
//     and the tiled plan (batches x tiles) each reach every output element once, from the right
//     input element, with the strides the vectorized kernels rely on;
//   - concat: the rows of the output in the reference's order;
//   - vector widths, grid sizes, row-group lanes.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

#include "ops/cuda/memory_index.hpp"
#include "ops/problem.hpp"

namespace ops::cuda {
namespace {

using Shape = std::vector<std::int64_t>;

Shape strides_of(const Shape& shape) {
  Shape s(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

std::int64_t elements(const Shape& shape) {
  return std::accumulate(shape.begin(), shape.end(), std::int64_t(1), std::multiplies<>());
}

// ref_ops.cpp's broadcast index: the second operand's offset of output element i.
struct NaiveBroadcast {
  Shape rhs, stride, rstride;
  NaiveBroadcast(const Shape& shape, const Shape& r)
      : rhs(r), stride(strides_of(shape)), rstride(strides_of(r)) {}
  std::int64_t operator()(std::int64_t i) const {
    std::int64_t j = 0;
    for (std::size_t d = 0; d < stride.size(); ++d) {
      const std::int64_t coord = i / stride[d];
      i %= stride[d];
      if (rhs[d] != 1) j += coord * rstride[d];
    }
    return j;
  }
};

// ref_ops.cpp's permute: the input offset of output element o.
struct NaivePermute {
  std::vector<int> perm;
  Shape istride, ostride;
  NaivePermute(const Shape& shape, const std::vector<int>& p)
      : perm(p), istride(strides_of(shape)) {
    Shape oshape;
    for (int a : perm) oshape.push_back(shape[std::size_t(a)]);
    ostride = strides_of(oshape);
  }
  std::int64_t operator()(std::int64_t o) const {
    std::int64_t i = 0;
    for (std::size_t d = 0; d < ostride.size(); ++d) {
      i += (o / ostride[d]) * istride[std::size_t(perm[d])];
      o %= ostride[d];
    }
    return i;
  }
};

void check_broadcast(const Shape& shape, const Shape& rhs) {
  SCOPED_TRACE(::testing::PrintToString(shape) + " + " + ::testing::PrintToString(rhs));
  const BroadcastPlan p = plan_broadcast(shape, rhs);
  const std::int64_t n = elements(shape);
  const NaiveBroadcast naive(shape, rhs);
  ASSERT_EQ(p.rows * p.cols, n);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t want = naive(i);
    ASSERT_EQ(broadcast_offset(p, i), want) << "element " << i;
    // v3's split: the row's offset, plus the column unless the inner group is broadcast.
    const std::int64_t by_row =
        broadcast_row_offset(p, i / p.cols) + (p.inner_broadcast ? 0 : i % p.cols);
    ASSERT_EQ(by_row, want) << "element " << i;
  }
}

TEST(OpsCudaIndex, BroadcastKinds) {
  struct Case {
    Shape shape, rhs;
    Broadcast kind;
    std::int64_t rows, cols;
  };
  const Case cases[] = {
      {{64, 32}, {}, Broadcast::same, 1, 2048},
      {{64, 32}, {64, 32}, Broadcast::same, 1, 2048},
      {{64, 32}, {1, 32}, Broadcast::row, 64, 32},
      {{64, 32}, {64, 1}, Broadcast::column, 64, 32},
      {{64, 32}, {1, 1}, Broadcast::scalar, 1, 2048},
      {{4, 16, 32}, {1, 1, 32}, Broadcast::row, 64, 32},
      {{4, 16, 32}, {4, 16, 1}, Broadcast::column, 64, 32},
      {{4, 16, 32}, {4, 1, 32}, Broadcast::general, 64, 32},
      {{4, 16, 32}, {1, 16, 1}, Broadcast::general, 64, 32},
      {{1, 32}, {1, 1}, Broadcast::scalar, 1, 32},          // size-1 axes move no index
      {{4, 1, 8}, {1, 1, 8}, Broadcast::row, 4, 8},         // the 1 joins either group
      {{1, 1}, {1, 1}, Broadcast::same, 1, 1},              // one element
      {{7, 1, 5, 3}, {1, 1, 5, 3}, Broadcast::row, 7, 15},  // neighbours merged
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.shape) + " + " + ::testing::PrintToString(c.rhs));
    const BroadcastPlan p = plan_broadcast(c.shape, c.rhs);
    EXPECT_EQ(p.kind, c.kind);
    EXPECT_EQ(p.rows, c.rows);
    EXPECT_EQ(p.cols, c.cols);
    check_broadcast(c.shape, c.rhs.empty() ? c.shape : c.rhs);
  }
}

TEST(OpsCudaIndex, BroadcastOffsetsOfRandomShapes) {
  std::mt19937 rng(11);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 300; ++trial) {
    Shape shape(std::size_t(pick(1, kMaxDims))), rhs;
    for (auto& d : shape) d = pick(1, 4);
    for (auto d : shape) rhs.push_back(pick(0, 1) ? d : 1);
    check_broadcast(shape, rhs);
  }
}

// Every output element's source, and the plan's kind.
void check_permute(const Shape& shape, const std::vector<int>& perm) {
  SCOPED_TRACE(::testing::PrintToString(shape) + " perm " + ::testing::PrintToString(perm));
  const PermutePlan p = plan_permute(shape, perm);
  const std::int64_t n = elements(shape);
  const NaivePermute naive(shape, perm);
  ASSERT_EQ(p.elements, n);
  for (std::int64_t o = 0; o < n; ++o)
    ASSERT_EQ(permute_source(p, o), naive(o)) << "output element " << o;
  switch (permute_kind(p)) {
    case PermuteKind::copy:
      for (std::int64_t o = 0; o < n; ++o) ASSERT_EQ(naive(o), o);
      break;
    case PermuteKind::rows: {
      const std::int64_t len = p.dims[p.rank - 1];
      ASSERT_EQ(n % len, 0);
      for (std::int64_t row = 0; row < n / len; ++row) {
        const std::int64_t src = permute_row_source(p, row);
        ASSERT_EQ(src % len, 0);  // whole rows: vectors that divide the row stay aligned
        for (std::int64_t c = 0; c < len; ++c) ASSERT_EQ(src + c, naive(row * len + c));
      }
      break;
    }
    case PermuteKind::tiled: {
      const TilePlan t = plan_tiles(p);
      ASSERT_EQ(t.batches * t.nx * t.ny, n);
      EXPECT_EQ(t.in_stride_y % t.nx, 0);
      EXPECT_EQ(t.out_stride_x % t.ny, 0);
      std::vector<int> seen(std::size_t(n), 0);
      for (std::int64_t b = 0; b < t.batches; ++b) {
        std::int64_t in = 0, out = 0;
        tile_batch_offsets(t, b, in, out);
        ASSERT_EQ(in % t.nx, 0);
        ASSERT_EQ(out % t.ny, 0);
        for (std::int64_t y = 0; y < t.ny; ++y)
          for (std::int64_t x = 0; x < t.nx; ++x) {
            const std::int64_t o = out + x * t.out_stride_x + y;
            ASSERT_GE(o, 0);
            ASSERT_LT(o, n);
            ++seen[std::size_t(o)];
            ASSERT_EQ(naive(o), in + y * t.in_stride_y + x);
          }
      }
      for (std::int64_t o = 0; o < n; ++o) ASSERT_EQ(seen[std::size_t(o)], 1) << o;
      break;
    }
  }
}

TEST(OpsCudaIndex, PermuteKinds) {
  struct Case {
    std::string problem;
    PermuteKind kind;
    int rank;  // folded
  };
  const Case cases[] = {
      {"transpose:64x48", PermuteKind::tiled, 2},
      {"transpose:3x64x48", PermuteKind::tiled, 3},
      {"transpose:4x1x5", PermuteKind::copy, 1},  // swaps a size-1 axis: the same bytes
      {"transpose:2x3x4x5", PermuteKind::tiled, 3},
      {"permute:8x16x32:perm=0,2,1", PermuteKind::tiled, 3},
      {"permute:8x16x32:perm=1,0,2", PermuteKind::rows, 3},
      {"permute:8x16x32:perm=0,1,2", PermuteKind::copy, 1},
      {"permute:8x16x32:perm=2,0,1", PermuteKind::tiled, 2},  // (8x16) x 32 transposed
      {"permute:2x3x4x5:perm=0,3,1,2", PermuteKind::tiled, 3},
      {"permute:2x3x4x5:perm=2,3,0,1", PermuteKind::tiled, 2},
      {"permute:2x3x4x5:perm=1,0,3,2", PermuteKind::tiled, 4},
      {"permute:2x3x4x5:perm=3,2,1,0", PermuteKind::tiled, 4},
      {"permute:2x3x4x5:perm=1,0,2,3", PermuteKind::rows, 3},
      {"permute:1x3x1x5:perm=2,3,0,1", PermuteKind::tiled, 2},
      {"permute:6:perm=0", PermuteKind::copy, 1},
      {"permute:1x1:perm=1,0", PermuteKind::copy, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.problem);
    const Problem p = parse_problem(c.problem);
    const PermutePlan plan = plan_permute(p.shape, permutation_of(p));
    EXPECT_EQ(permute_kind(plan), c.kind);
    EXPECT_EQ(plan.rank, c.rank);
    check_permute(p.shape, permutation_of(p));
  }
}

TEST(OpsCudaIndex, TransposeTilePlan) {
  const Problem p = parse_problem("transpose:5x64x48");
  const TilePlan t = plan_tiles(plan_permute(p.shape, permutation_of(p)));
  EXPECT_EQ(t.nx, 48);  // the input's rows
  EXPECT_EQ(t.ny, 64);  // the output's rows
  EXPECT_EQ(t.in_stride_y, 48);
  EXPECT_EQ(t.out_stride_x, 64);
  EXPECT_EQ(t.batches, 5);
}

TEST(OpsCudaIndex, PermuteOfRandomShapes) {
  std::mt19937 rng(5);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 300; ++trial) {
    Shape shape(std::size_t(pick(1, 6)));
    for (auto& d : shape) d = pick(1, 5);
    std::vector<int> perm(shape.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    check_permute(shape, perm);
  }
}

TEST(OpsCudaIndex, TransposeIsThePermuteOfTheLastTwoAxes) {
  EXPECT_EQ(permutation_of(parse_problem("transpose:3x4")), (std::vector<int>{1, 0}));
  EXPECT_EQ(permutation_of(parse_problem("transpose:2x3x4")), (std::vector<int>{0, 2, 1}));
  EXPECT_EQ(permutation_of(parse_problem("permute:2x3x4:perm=2,0,1")), (std::vector<int>{2, 0, 1}));
}

TEST(OpsCudaIndex, ConcatRowsInTheReferenceOrder) {
  for (const char* text : {"concat:4x6:inputs=3:axis=0", "concat:4x6:inputs=3:axis=1",
                           "concat:2x3x5:inputs=2:axis=1", "concat:7:inputs=64"}) {
    SCOPED_TRACE(text);
    const Problem p = parse_problem(text);
    const ConcatPlan c = plan_concat(p);
    ASSERT_EQ(c.outer * c.inner, p.input_elements());
    ASSERT_EQ(c.outer * c.inputs * c.inner, p.output_elements());
    // ref_ops.cpp's loop: (input, element) of each output element in turn.
    std::vector<std::pair<int, std::int64_t>> want, got;
    for (std::int64_t r = 0; r < c.outer; ++r)
      for (int t = 0; t < p.inputs; ++t)
        for (std::int64_t e = 0; e < c.inner; ++e) want.emplace_back(t, r * c.inner + e);
    // The kernels': output row k is row k / inputs of input k % inputs.
    for (std::int64_t k = 0; k < c.outer * c.inputs; ++k)
      for (std::int64_t e = 0; e < c.inner; ++e)
        got.emplace_back(int(k % c.inputs), (k / c.inputs) * c.inner + e);
    EXPECT_EQ(got, want);
  }
}

TEST(OpsCudaIndex, VectorsGridsAndLanes) {
  EXPECT_EQ(vector_width(4, {4096, 8}), 4);
  EXPECT_EQ(vector_width(2, {4096, 8}), 8);
  EXPECT_EQ(vector_width(2, {4096, 12}), 1);
  EXPECT_EQ(vector_width(4, {6}), 1);
  EXPECT_EQ(vector_width(4, {}), 4);
  EXPECT_EQ(grid_blocks(0, 256, 1056), 1);
  EXPECT_EQ(grid_blocks(257, 256, 1056), 2);
  EXPECT_EQ(grid_blocks(std::int64_t(1) << 40, 256, 1056), 1056);
  EXPECT_EQ(row_group_lanes(1), 1);
  EXPECT_EQ(row_group_lanes(4), 1);
  EXPECT_EQ(row_group_lanes(5), 2);
  EXPECT_EQ(row_group_lanes(64), 16);
  EXPECT_EQ(row_group_lanes(128), 32);
  EXPECT_EQ(row_group_lanes(1 << 20), 32);
}

}  // namespace
}  // namespace ops::cuda
