// Tests of baselines/conv/halide_cuda_tiled.cpp that need no GPU: every tile preset of the
// tiled schedule lowers for the CUDA target and compiles to PTX with its tiles in shared memory.
// The tiling of each preset against the reference (on the host) is in
// tests/conv/test_halide_cuda_schedule.cpp, on the GPU in tests/conv/test_halide_cuda.cpp.
#include <cstddef>
#include <string>

#include <gtest/gtest.h>

#include "baselines/conv/halide_cuda.hpp"
#include "tests/conv/halide_cuda_testing.hpp"

namespace conv {
namespace {

// Every tile preset lowers and compiles on a 3x3 layer and a strided one, and in both layouts
// (1x1 filters run the basic schedule: tiled_unsupported); the one-warp presets keep their
// accumulators out of local memory (w4, several warps, may not: see the schedule's comment).
// Each preset runs each problem once, the two in different layouts (which one alternates with
// the preset), so that every preset meets both problems and both layouts, and every problem
// both layouts, without every combination (each lowering is about two seconds of Halide's JIT
// on CI's two cores).
TEST(HalideCudaTiled, EveryTilePresetLowers) {
  const char* tiles[] = {"auto", "c32", "c64", "c128", "k16", "w4"};
  const char* problems[] = {"mb32ic128ih28oc128kh3ph1", "mb32ic128ih56oc128kh3sh2ph1"};
  for (std::size_t t = 0; t < 6; ++t)
    for (std::size_t j = 0; j < 2; ++j) {
      const std::string tile = tiles[t];
      Problem p = parse_problem(problems[j]);
      p.layout = (t + j) % 2 == 0 ? Layout::nchw : Layout::nhwc;
      SCOPED_TRACE(p.str() + " tile " + tile);
      BackendOptions options;
      options.halide_schedule = "manual";
      options.halide_tile = tile;
      HalideCudaLowering l;
      ASSERT_NO_THROW(l = halide_cuda_lower(p, options));
      EXPECT_TRUE(testing::contains(l.algorithm, "(preset " + tile + ")")) << l.algorithm;
      EXPECT_GT(testing::lowered_shared_bytes(l.stmt), 0u);
      EXPECT_TRUE(testing::contains(l.ptx, "bar.sync"));
      if (tile != "w4") {
        EXPECT_TRUE(testing::contains(l.algorithm, "(1 warp)")) << l.algorithm;
        EXPECT_FALSE(testing::contains(l.ptx, "st.local")) << "accumulators in local memory";
      }
    }
}

}  // namespace
}  // namespace conv
