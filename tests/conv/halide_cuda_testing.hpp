// What the halide_cuda tests share (tests/conv/test_halide_cuda.cpp on the GPU,
// tests/conv/test_halide_cuda_schedule.cpp and test_halide_cuda_tiled.cpp without one): the
// problems, fixed ones that take every path of the schedules, then randomized ones; and readers of
// a lowered pipeline (baselines/conv/halide_cuda.hpp's HalideCudaLowering).
#pragma once

#include <cstddef>
#include <regex>
#include <string>
#include <vector>

#include "conv/problem.hpp"
#include "tests/conv/random_problems.hpp"

namespace conv::testing {

// Fixed problems, in this order:
//  - manual_basic's paths: register tiles that shrink for small outputs and stay whole for large
//    ones, extents below a tile (ShiftInwards needs none above), nhwc with fewer and more than 32
//    output channels (x-threads and c-threads), groups, depthwise, stride, dilation, padding,
//    kernels of 1 to 7, odd and non-square sizes, batch 1 to 8;
//  - manual's tiled schedule: output channels per group 32 and up (48, 40, 33: the channel tile
//    shifted inwards), groups whose tiles stay in one group, input channels per group that chunks
//    of 8 do not divide (12: chunks of 6; 13, a prime: chunks of 1), stride, dilation, padding,
//    3x3 at ResNet sizes, one output row or column;
//  - and where manual falls back to manual_basic: fewer than 32 output or 8 input channels per
//    group, output channels per group not a multiple of 32 in a grouped problem, 1x1 filters.
inline const std::vector<const char*>& halide_cuda_fixed_descriptors() {
  static const std::vector<const char*> descriptors{
      "mb2ic4ih64oc8kh5", "mb1ic3ih5oc1kh3", "mb3ic5ih9iw23oc37kh2kw2", "mb1ic2ih3oc3kh3ph1",
      "g2mb3ic6ih13iw11oc4kh3kw2sh2ph2pw1dh1dw2", "g16mb2ic16ih10oc16kh3ph1",
      "mb8ic32ih14oc64kh3ph1", "mb5ic16ih17iw15oc128kh3kw3sh2sw2ph1pw1", "mb4ic24ih20oc48kh1",
      "g4mb2ic32ih12oc160kh3ph1dh1", "mb1ic3ih40oc32kh7sh2ph3", "mb6ic8ih33iw33oc40kh2kw2sw2",
      // Outputs large enough for whole register tiles, and 7 x 7 images.
      "mb8ic64ih56oc64kh3ph1", "mb4ic32ih31oc256kh3ph1", "mb16ic128ih7oc256kh3ph1",
      // The tiled schedule's own paths.
      "g2mb2ic32ih9oc64kh3ph1", "mb2ic12ih10oc32kh3", "mb3ic13ih9iw11oc33kh3kw3ph1pw1",
      "mb2ic16ih15iw13oc48kh3kw2sh2ph1dh1", "mb2ic64ih28oc256kh1", "mb2ic16ih1iw9oc32kh1kw3pw1",
      "mb2ic32ih6oc64kh5ph2"};
  return descriptors;
}

inline std::vector<Problem> halide_cuda_fixed_problems() {
  std::vector<Problem> fixed;
  for (const char* d : halide_cuda_fixed_descriptors()) fixed.push_back(parse_problem(d));
  return fixed;
}

// The fixed problems, then randomized ones up to 30 (batch 1, 2, 3, 32; up to 6 channels per
// group, so these take manual_basic's paths and manual's fallback).
inline std::vector<Problem> halide_cuda_problems() {
  return randomized_problems(halide_cuda_fixed_problems(), 30, 4242, {6, 6});
}

// Bytes of the Stmt's allocations in GPU shared memory ("allocate NAME[float32 * N] in
// GPUShared"; Halide groups the staged tiles of a block into one).
inline std::size_t lowered_shared_bytes(const std::string& stmt) {
  static const std::regex allocation(R"(allocate \S+\[(u?int|float)(\d+) \* (\d+)\] in GPUShared)");
  std::size_t bytes = 0;
  for (auto it = std::sregex_iterator(stmt.begin(), stmt.end(), allocation);
       it != std::sregex_iterator(); ++it)
    bytes += std::stoul((*it)[2].str()) / 8 * std::stoul((*it)[3].str());
  return bytes;
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace conv::testing
