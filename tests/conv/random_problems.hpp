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

// `fixed` first, then random valid depthwise problems (groups = IC) up to `count`: channels
// 1-max_channels, multiplier 1-max_multiplier, batch 1-3, sizes 1-max_size, kernels 1-7, stride
// 1-3, dilation 1-3 (dh 0-2), padding below the kernel.
inline std::vector<Problem> randomized_depthwise_problems(std::vector<Problem> fixed,
                                                          std::size_t count, unsigned seed,
                                                          int max_channels, int max_size,
                                                          int max_multiplier) {
  std::vector<Problem> out = std::move(fixed);
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  while (out.size() < count) {
    Problem p;
    p.g = pick(1, max_channels);
    p.ic = p.g;
    p.oc = p.g * pick(1, max_multiplier);
    p.mb = pick(1, 3);
    p.ih = pick(1, max_size);
    p.iw = pick(1, max_size);
    p.kh = pick(1, 7);
    p.kw = pick(1, 7);
    p.sh = pick(1, 3);
    p.sw = pick(1, 3);
    p.dh = pick(0, 2);
    p.dw = pick(0, 2);
    p.ph = pick(0, int(p.kh) - 1);
    p.pw = pick(0, int(p.kw) - 1);
    if (p.validate().empty() && p.unsupported_reason().empty()) out.push_back(p);
  }
  return out;
}

// The first MYCONV_TEST_PROBLEMS problems (fixed ones first) where that is set, else all: the GPU
// kernel tests under compute-sanitizer's slow tools (scripts/checks/gpu_sanitize.sh) run a few.
inline std::vector<Problem> limited_by_environment(std::vector<Problem> problems) {
  if (const char* n = std::getenv("MYCONV_TEST_PROBLEMS"))
    if (const long count = std::strtol(n, nullptr, 10);
        count > 0 && std::size_t(count) < problems.size())
      problems.resize(std::size_t(count));
  return problems;
}

// The problems every kernel test runs (tests/conv/test_im2col_gemm_cuda.cpp, variant 9's
// tests/conv/test_caffe_gemm_cuda.cpp): fixed ones chosen for the kernels' edge cases (partial
// tiles and slices, vector and unaligned paths, small grids, long K), then randomized ones, limited
// by the environment.
inline std::vector<Problem> kernel_problems() {
  std::vector<Problem> out;
  for (const char* text : {
           "mb2ic4ih64oc8kh5", "mb32ic3ih12iw9oc5kh3kw3sh2sw2ph1pw1", "g4mb1ic8ih13oc8kh3ph1dh1",
           "g8mb2ic8ih10oc8kh3ph1",        // depthwise
           "mb2ic64ih20oc128kh3ph1",       // full tiles, 16-byte gathers in nhwc, K = 576
           "mb1ic32ih17oc64kh3",           // odd pixel count
           "g2mb2ic32ih9oc48kh3ph1",       // IC/G = 16, OC/G = 24 (vector stores in nhwc)
           "mb3ic5ih31oc7kh1",             // K = 5: one partial slice, unaligned rows
           "mb1ic3ih30oc130kh2sh2",        // two channel tiles, the second nearly empty
           "mb32ic16ih7oc256kh3ph1",       // a 7x7 map: M = 1568, small grids
           "mb2ic256ih6oc72kh3ph1",        // K = 2304: 72 slices
           "mb1ic24ih11oc40kh3sh2ph1dh1",  // IC = 24: vectors for tf32, not for 16-bit
           "mb2ic8ih16oc16kh1",            // OH*OW = 256: vector stores in nchw
       })
    out.push_back(parse_problem(text));
  return limited_by_environment(randomized_problems(std::move(out), 28, 4242, {24, 40}));
}

}  // namespace conv::testing
