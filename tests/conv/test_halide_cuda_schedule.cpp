// Tests of baselines/conv/halide_cuda_schedule.cpp (the schedules and their choice) that need no
// GPU (CI runs them): every schedule lowers for the CUDA target and compiles to PTX; manual's
// tiled schedule (halide_cuda_tiled.cpp, whose presets tests/conv/test_halide_cuda_tiled.cpp
// covers) stages its tiles in shared memory, with barriers and register accumulators, and falls
// back to manual_basic where it cannot apply; the manual schedules' tiling, run on the host with
// the GPU loops serial, matches the float64 reference. On the GPU, tests/conv/test_halide_cuda.cpp
// checks the same schedules against the reference.
#include <cstddef>
#include <limits>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "baselines/conv/halide_cuda.hpp"
#include "conv/data.hpp"
#include "core/compare.hpp"
#include "core/error.hpp"
#include "tests/conv/halide_cuda_testing.hpp"

namespace conv {
namespace {

BackendOptions schedule_options(const std::string& schedule, const std::string& tile = "") {
  BackendOptions o;
  o.halide_schedule = schedule;
  o.halide_tile = tile;
  return o;
}

// Representative problems of the target shape sets (experiments/shapes/): ResNet-50's 3x3 and
// 1x1 layers, a strided 3x3 (its stage transitions), a grouped 3x3 (two groups of 64 channels),
// the seed's tiny problem, and VGG-16's deepest one.
const std::vector<const char*> kRepresentative = {
    "mb32ic64ih56oc64kh3ph1",     "mb32ic64ih56oc256kh1", "mb32ic128ih56oc128kh3sh2ph1",
    "g2mb32ic128ih28oc128kh3ph1", "mb2ic4ih64oc8kh5",     "mb16ic512ih14oc512kh3ph1"};

// For each layout and schedule, each representative problem lowers for the CUDA target, runs in
// GPU blocks and threads, and compiles to PTX. The tiled schedule (manual, where it applies)
// stages into shared memory: GPUShared allocations within 48 KiB, barriers, warp lanes, its
// accumulators in registers, and no local memory in the PTX (a one-warp block indexes its
// accumulators with constants). manual_basic uses no shared memory; manual on the seed problem
// (8 output channels) and on the 1x1 layer falls back to it and says so.
TEST(HalideCudaSchedule, LowersForTheCudaTargetWithSharedTiles) {
  for (const Layout layout : {Layout::nchw, Layout::nhwc})
    for (const char* schedule : {"manual", "manual_basic"})
      for (const char* d : kRepresentative) {
        Problem p = parse_problem(d);
        p.layout = layout;
        SCOPED_TRACE(p.str() + " " + schedule);
        HalideCudaLowering l;
        ASSERT_NO_THROW(l = halide_cuda_lower(p, schedule_options(schedule)));
        const std::string prefix = std::string(schedule) + " " + to_string(layout);
        EXPECT_EQ(l.algorithm.rfind(prefix, 0), 0u) << l.algorithm;
        EXPECT_TRUE(testing::contains(l.stmt, "gpu_block<CUDA>"));
        EXPECT_TRUE(testing::contains(l.stmt, "gpu_thread<CUDA>"));
        EXPECT_TRUE(testing::contains(l.ptx, ".entry")) << l.ptx.substr(0, 500);
        EXPECT_TRUE(testing::contains(l.ptx, "fma.rn.f32"));
        const bool tiled = testing::contains(l.algorithm, " tiled ");
        EXPECT_EQ(tiled, std::string(schedule) == "manual" && p.oc / p.g >= 32 && p.kh * p.kw > 1)
            << l.algorithm;
        if (!tiled) {
          EXPECT_EQ(testing::lowered_shared_bytes(l.stmt), 0u);
          if (std::string(schedule) == "manual") {
            EXPECT_TRUE(testing::contains(l.algorithm, "basic schedule (not tiled: "))
                << l.algorithm;
          }
          continue;
        }
        const std::size_t bytes = testing::lowered_shared_bytes(l.stmt);
        EXPECT_GT(bytes, 0u) << l.stmt.substr(0, 4000);
        EXPECT_LE(bytes, 48u * 1024u);
        EXPECT_TRUE(testing::contains(l.algorithm, "staged in shared memory")) << l.algorithm;
        EXPECT_TRUE(testing::contains(l.stmt, "gpu_lane<CUDA>"));
        EXPECT_TRUE(testing::contains(l.stmt, "gpu_thread_barrier"));
        EXPECT_TRUE(std::regex_search(
            l.stmt, std::regex(R"(allocate acc\S*\[float32 \* \d+\] in Register)")));
        EXPECT_TRUE(testing::contains(l.ptx, ".shared"));
        EXPECT_TRUE(testing::contains(l.ptx, "ld.shared"));
        EXPECT_TRUE(testing::contains(l.ptx, "bar.sync"));
        EXPECT_FALSE(testing::contains(l.ptx, "ld.local") || testing::contains(l.ptx, "st.local"))
            << "accumulators in local memory";
      }
}

// The fixed problems in every dtype the backend takes (bf16 as its bits, tf32 as fp32) lower and
// compile to PTX with both manual schedules; each names the schedule that ran. Each problem runs
// each schedule once, the two in different layouts (which one alternates with the problem and
// the dtype), so that every problem, schedule, layout and dtype is compiled without every
// combination (each compile is about a second of Halide's JIT on CI's two cores).
Layout alternating_layout(std::size_t i) { return i % 2 == 0 ? Layout::nchw : Layout::nhwc; }

TEST(HalideCudaSchedule, ManualSchedulesCompileForEveryProblemAndDtype) {
  const std::vector<Problem> ps = testing::halide_cuda_fixed_problems();
  const DataType dtypes[] = {DataType::fp32, DataType::tf32, DataType::fp16, DataType::bf16};
  for (std::size_t i = 0; i < ps.size(); ++i)
    for (std::size_t k = 0; k < 4; ++k)
      for (std::size_t s = 0; s < 2; ++s) {
        const DataType dt = dtypes[k];
        const Layout layout = alternating_layout(i + k + s);
        const char* schedule = s == 0 ? "manual" : "manual_basic";
        // Every problem in fp32; the other dtypes on a few (the conversions are the same code).
        if (dt != DataType::fp32 && i != 0 && i != 4 && i != 12 && i != 15 && i != 17) continue;
        Problem p = ps[i];
        p.dtype = dt;
        p.layout = layout;
        std::string algorithm;
        EXPECT_NO_THROW(algorithm = halide_cuda_compile_only(p, schedule_options(schedule)))
            << p.str() << " " << schedule;
        EXPECT_EQ(algorithm.rfind(std::string(schedule) + " " + to_string(layout), 0), 0u)
            << p.str() << ": " << algorithm;
      }
}

// The manual schedules' tiling (splits shifted inwards, register tiles, the staging and its
// chunks, compute_at) with the GPU loops left serial on the host, against the reference: every
// fixed problem in fp32 with both schedules (one in each layout), fp16 and bf16 (integer
// conversions from the bits) on a few, and every tile preset on the problems the tiled schedule
// takes.
TEST(HalideCudaSchedule, ManualTilingMatchesTheReferenceOnTheHost) {
  const std::vector<Problem> ps = testing::halide_cuda_fixed_problems();
  // The inputs and float64 reference of each (problem, dtype, layout), made once: the schedules
  // and tile presets of one problem share them (the largest problems' references are most of
  // this test's time otherwise).
  std::map<std::string, HostData> made;
  const auto check = [&made](const Problem& p, const BackendOptions& o) {
    auto it = made.find(p.str());
    if (it == made.end()) it = made.emplace(p.str(), make_host_data(p, 9)).first;
    const HostData& data = it->second;
    std::vector<float> out(static_cast<std::size_t>(p.dst_elements()),
                           std::numeric_limits<float>::quiet_NaN());
    ASSERT_NO_THROW(halide_cuda_run_tiling_on_host(p, data, out.data(), o))
        << p.str() << " " << o.halide_schedule << " " << o.halide_tile;
    const bench::Correctness c =
        bench::compare(out.data(), data.ref.data(), out.size(),
                       bench::dot_tolerance(p.dtype, p.reduction_length(), data.ref_rms));
    EXPECT_TRUE(c.passed) << p.str() << " " << o.halide_schedule << " " << o.halide_tile << ": "
                          << c.message;
  };
  // Each problem runs each schedule once, the two in different layouts (as in the test above).
  const DataType dtypes[] = {DataType::fp32, DataType::fp16, DataType::bf16};
  for (std::size_t i = 0; i < ps.size(); ++i)
    for (std::size_t k = 0; k < 3; ++k)
      for (std::size_t s = 0; s < 2; ++s) {
        const DataType dt = dtypes[k];
        if (dt != DataType::fp32 && i != 0 && i != 4 && i != 13 && i != 15 && i != 17) continue;
        Problem p = ps[i];
        p.dtype = dt;
        p.layout = alternating_layout(i + k + s);
        check(p, schedule_options(s == 0 ? "manual" : "manual_basic"));
      }
  // Every tile preset on the tiled problems (1x1 filters run the basic schedule), the layout
  // alternating: each preset in both layouts, each problem in both.
  const char* tiles[] = {"c32", "c64", "c128", "k16", "w4"};
  const std::size_t tiled[] = {6, 13, 15, 17, 21};
  for (std::size_t t = 0; t < 5; ++t)
    for (std::size_t j = 0; j < 5; ++j) {
      Problem p = ps[tiled[j]];
      p.layout = alternating_layout(t + j);
      check(p, schedule_options("manual", tiles[t]));
    }
}

}  // namespace
}  // namespace conv
