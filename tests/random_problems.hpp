// Randomized conv problems shared by the backend tests: fixed seeds, so a failure reproduces.
#pragma once

#include <cstdlib>
#include <random>
#include <vector>

#include "conv/problem.hpp"

namespace conv::testing {

struct RandomProblemLimits {
  int max_ic_per_group = 5;
  int max_oc_per_group = 5;
};

// `fixed` first, then random valid problems up to `count`: groups 1-3, batch 1/2/3/32, sizes
// 5-17, kernels 1-4, stride 1-3, dilation 1-2 (PyTorch's; dh 0-1), padding below the kernel.
inline std::vector<Problem> randomized_problems(std::vector<Problem> fixed, std::size_t count,
                                                unsigned seed, RandomProblemLimits limits = {}) {
  std::vector<Problem> out = std::move(fixed);
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  while (out.size() < count) {
    Problem p;
    p.g = pick(1, 3);
    p.mb = std::vector<int>{1, 2, 3, 32}[std::size_t(pick(0, 3))];
    p.ic = p.g * pick(1, limits.max_ic_per_group);
    p.oc = p.g * pick(1, limits.max_oc_per_group);
    p.ih = pick(5, 17);
    p.iw = pick(5, 17);
    p.kh = pick(1, 4);
    p.kw = pick(1, 4);
    p.sh = pick(1, 3);
    p.sw = pick(1, 3);
    p.dh = pick(0, 1);  // benchdnn: 0 = dense
    p.dw = pick(0, 1);
    p.ph = pick(0, p.kh - 1);
    p.pw = pick(0, p.kw - 1);
    if (p.validate().empty()) out.push_back(p);
  }
  return out;
}

// The first MYCONV_TEST_PROBLEMS problems (fixed ones first) where that is set, else all: the GPU
// kernel tests under compute-sanitizer's slow tools (scripts/gpu_sanitize.sh) run a few.
inline std::vector<Problem> limited_by_environment(std::vector<Problem> problems) {
  if (const char* n = std::getenv("MYCONV_TEST_PROBLEMS"))
    if (const long count = std::strtol(n, nullptr, 10);
        count > 0 && std::size_t(count) < problems.size())
      problems.resize(std::size_t(count));
  return problems;
}

}  // namespace conv::testing
