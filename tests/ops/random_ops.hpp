// Randomized op problems shared by the op backend tests: fixed seeds, so a failure reproduces.
// Odd sizes on purpose (tails of vectorized loops, partial tiles), ranks 1-4, every broadcast
// form, every axis set, every permutation.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ops/data.hpp"
#include "ops/problem.hpp"

namespace ops::testing {

// An output of p (every value written: no NaN poison left, all finite) within p's tolerance of
// data's reference; `what` names the call in a failure.
inline void expect_matches_reference(const Problem& p, const HostData& data,
                                     const std::vector<float>& got, const std::string& what) {
  std::size_t non_finite = 0;
  for (float v : got) non_finite += std::isfinite(v) ? 0 : 1;
  EXPECT_EQ(non_finite, 0u) << what << ": outputs left unwritten (NaN poison) or not finite";
  const bench::Correctness c = check_output(p, data, got.data());
  EXPECT_TRUE(c.passed) << what << ": " << c.message;
}

// The matmul of b batches of [m x k] x [k x n] in dt.
inline Problem matmul_problem(std::int64_t b, std::int64_t m, std::int64_t n, std::int64_t k,
                              DataType dt) {
  Problem p;
  p.op = Op::matmul;
  p.b = b, p.m = m, p.n = n, p.k = k;
  p.dtype = dt;
  return p;
}

// `per_op` random valid problems of each op (in ops::all_ops() order), in dtype dt (tf32: matmul
// only, the others skipped).
inline std::vector<Problem> randomized_ops(int per_op, DataType dt, unsigned seed) {
  std::vector<Problem> out;
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (Op op : all_ops()) {
    if (dt == DataType::tf32 && op != Op::matmul) continue;
    for (int made = 0; made < per_op;) {
      Problem p;
      p.op = op;
      p.dtype = dt;
      const int rank = pick(1, 4);
      for (int d = 0; d < rank; ++d)
        p.shape.push_back(std::vector<int>{1, 2, 3, 5, 7, 8, 16, 33, 64, 129}[pick(0, 9)]);
      switch (category_of(op)) {
        case Category::element:
          if (pick(0, 1)) {  // broadcast: some dimensions 1
            p.rhs = p.shape;
            for (auto& d : p.rhs)
              if (pick(0, 1)) d = 1;
          }
          break;
        case Category::reduction:
          for (int d = 0; d < rank; ++d)
            if (pick(0, 2) == 0) p.axes.push_back(d);
          if (int(p.axes.size()) == rank) p.axes.clear();  // all, written as no axes
          break;
        case Category::matmul:
          p.shape.clear();
          p.b = std::vector<int>{1, 1, 2, 3}[pick(0, 3)];
          p.m = std::vector<int>{1, 5, 16, 33, 70, 128, 129}[pick(0, 6)];
          p.n = std::vector<int>{1, 8, 17, 64, 96, 130}[pick(0, 5)];
          p.k = std::vector<int>{1, 3, 8, 16, 31, 64, 100}[pick(0, 6)];
          break;
        case Category::memory:
          if (op == Op::transpose && rank < 2) continue;
          if (op == Op::permute) {
            p.perm.resize(std::size_t(rank));
            std::iota(p.perm.begin(), p.perm.end(), 0);
            std::shuffle(p.perm.begin(), p.perm.end(), rng);
          }
          if (op == Op::concat) {
            p.inputs = pick(2, 4);
            p.axis = pick(0, rank - 1);
          }
          break;
        default:
          break;
      }
      if (!p.validate().empty()) continue;
      if (std::find(out.begin(), out.end(), p) != out.end()) continue;
      out.push_back(p);
      ++made;
    }
  }
  return out;
}

}  // namespace ops::testing
