// Tests of baselines/conv/halide_cuda.cpp (and the algorithm in baselines/conv/halide_conv.cpp),
// run through the case runner as myconv runs them. The schedules' own tests, which need no device,
// are in tests/conv/test_halide_cuda_schedule.cpp (the same binary); every test here that runs on
// the GPU skips, with the reason, where no CUDA device is present.
//
// On a GPU host this binary is the quick check of the backend (a few minutes):
//   build/tests/test_halide_cuda
// or only the GPU correctness check of both manual schedules and the tile presets:
//   build/tests/test_halide_cuda --gtest_filter='HalideCuda.*Matches*:HalideCuda.Unwritten*'
// It prints, per case that does not pass, the problem, schedule and reason.
#include <cmath>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "baselines/conv/backends.hpp"
#include "baselines/conv/halide_cuda.hpp"
#include "conv/bench.hpp"
#include "conv/data.hpp"
#include "core/compare.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_services.hpp"
#include "core/error.hpp"
#include "tests/common/gpu_skip.hpp"
#include "tests/conv/halide_cuda_testing.hpp"

namespace conv {
namespace {

CaseOptions tiny_options() {
  CaseOptions o;
  o.measure.warmup_iters = 1;
  o.measure.min_iters = 2;
  o.measure.max_iters = 5;
  o.measure.min_time_ms = 0;
  o.measure.max_time_ms = 5;
  return o;
}

bench::Result run_halide(const Problem& p, const std::string& schedule = "manual",
                         const CaseOptions& options = tiny_options(),
                         const std::string& tile = "") {
  BackendOptions backend_options;
  backend_options.halide_schedule = schedule;
  backend_options.halide_tile = tile;
  const std::unique_ptr<Backend> backend = make_halide_cuda_backend(backend_options);
  const HostData data = make_host_data(p, 7);
  return run_case(backend.get(), backend->name(), backend->device(), "", p, data, options).result;
}

std::string describe(const bench::Result& r) {
  return r.problem + " [" + r.algorithm + "]: " + bench::to_string(r.status) + " " + r.reason;
}

// ---- Without a GPU ----------------------------------------------------------------------------

TEST(HalideCuda, IdentifiesItself) {
  const std::unique_ptr<Backend> backend = make_halide_cuda_backend(BackendOptions());
  EXPECT_EQ(backend->name(), "halide_cuda");
  EXPECT_EQ(backend->device(), "cuda");
  const std::string version = backend->library_version();
  EXPECT_EQ(version.rfind("Halide 14.", 0), 0u) << version;
  EXPECT_NE(version.find("cuda-cuda_capability_"), std::string::npos) << version;
  const Support a = backend->available();
  EXPECT_EQ(a.ok, testing::gpu_unavailable_reason().empty()) << a.reason;
  if (!a.ok) {
    EXPECT_FALSE(a.reason.empty());
  }
}

TEST(HalideCuda, SchedulesWithoutAGpuModeAreNotAvailable) {
  for (const char* schedule : {"adams2019", "mullapudi2016", "fastest"}) {
    BackendOptions o;
    o.halide_schedule = schedule;
    const Support s = make_halide_cuda_backend(o)->available();
    EXPECT_FALSE(s.ok) << schedule;
    EXPECT_NE(s.reason.find(schedule == std::string("fastest") ? "fastest" : "CPU"),
              std::string::npos)
        << s.reason;
  }
}

// A tile preset is the manual schedule's: an unknown one, or one given with another schedule, is
// refused with the reason (not ignored).
TEST(HalideCuda, TilePresetsBelongToTheManualSchedule) {
  const auto available = [](const std::string& schedule, const std::string& tile) {
    BackendOptions o;
    o.halide_schedule = schedule;
    o.halide_tile = tile;
    return make_halide_cuda_backend(o)->available();
  };
  const Support unknown = available("manual", "c256");
  EXPECT_FALSE(unknown.ok);
  EXPECT_NE(unknown.reason.find("c256"), std::string::npos) << unknown.reason;
  EXPECT_NE(unknown.reason.find("auto c32 c64 c128 k16 w4"), std::string::npos) << unknown.reason;
  const Support other = available("manual_basic", "c64");
  EXPECT_FALSE(other.ok);
  EXPECT_NE(other.reason.find("manual schedule"), std::string::npos) << other.reason;
  // Where a device exists these are available; without one, only for the missing device.
  for (const char* tile : {"", "auto", "c32", "c64", "c128", "k16", "w4"}) {
    const Support s = available("manual", tile);
    EXPECT_EQ(s.ok, testing::gpu_unavailable_reason().empty()) << tile << ": " << s.reason;
  }
}

TEST(HalideCuda, Li2018CompilesOrSaysWhy) {
  BackendOptions o;
  o.halide_schedule = "li2018";
  for (const char* d : {"mb2ic4ih16oc8kh3ph1", "mb2ic4ih16oc8kh3ph1nhwc"}) {
    try {
      EXPECT_EQ(halide_cuda_compile_only(parse_problem(d), o), "auto:Li2018");
    } catch (const bench::Unsupported& e) {
      EXPECT_NE(std::string(e.what()).find("Li2018"), std::string::npos) << e.what();
    }
  }
}

// ---- On the GPU ---------------------------------------------------------------------------------

// Every problem, dtype and layout against the float64 reference, with schedule (and tile preset).
// tf32 runs as strict fp32.
void expect_matches_the_reference(const std::string& schedule, const std::string& tile = "") {
  int failed = 0, tiled = 0;
  for (Problem p : testing::halide_cuda_problems())
    for (DataType dt : bench::all_data_types())
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        p.dtype = dt;
        p.layout = layout;
        const bench::Result r = run_halide(p, schedule, tiny_options(), tile);
        EXPECT_EQ(r.status, bench::Status::passed) << describe(r);
        if (r.status != bench::Status::passed) {
          ++failed;
          continue;
        }
        EXPECT_TRUE(r.gpu_time_ms.has_value()) << describe(r);
        EXPECT_EQ(r.algorithm.rfind(schedule + " " + to_string(layout), 0), 0u) << r.algorithm;
        if (r.algorithm.find(" tiled ") != std::string::npos) ++tiled;
        if (dt == DataType::tf32) {
          EXPECT_NE(r.algorithm.find("strict fp32"), std::string::npos) << r.algorithm;
        }
      }
  std::cout << "[ INFO     ] " << schedule << (tile.empty() ? "" : " tile " + tile) << ": "
            << failed << " case(s) did not pass, " << tiled << " ran tiled\n";
  if (schedule == "manual") {
    EXPECT_GT(tiled, 0);
  }
}

// The default schedule: tiled in shared memory where it applies, else the basic one.
TEST(HalideCuda, ManualMatchesTheReference) {
  MYCONV_SKIP_WITHOUT_GPU();
  expect_matches_the_reference("manual");
}

TEST(HalideCuda, ManualBasicMatchesTheReference) {
  MYCONV_SKIP_WITHOUT_GPU();
  expect_matches_the_reference("manual_basic");
}

// The other tile presets, on the fixed problems in fp32 (the dtypes' conversions are the same
// code as the default preset's).
TEST(HalideCuda, TilePresetsMatchTheReference) {
  MYCONV_SKIP_WITHOUT_GPU();
  for (const char* tile : {"c32", "c64", "c128", "k16", "w4"})
    for (Problem p : testing::halide_cuda_fixed_problems())
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        p.layout = layout;
        const bench::Result r = run_halide(p, "manual", tiny_options(), tile);
        EXPECT_EQ(r.status, bench::Status::passed) << tile << " " << describe(r);
      }
}

// The output is poisoned on the device: read back without a run it is NaN everywhere and fails
// the check; after a run it passes; poisoned again after that run, it is NaN again.
TEST(HalideCuda, UnwrittenOutputFails) {
  MYCONV_SKIP_WITHOUT_GPU();
  for (const char* d : {"mb2ic4ih12oc8kh3", "mb2ic16ih10oc32kh3ph1dtbf16nhwc"}) {
    SCOPED_TRACE(d);
    const Problem p = parse_problem(d);
    const HostData data = make_host_data(p, 3);
    const std::unique_ptr<Backend> backend = make_halide_cuda_backend(BackendOptions());
    const std::unique_ptr<Instance> inst = backend->prepare(p, data);
    inst->compile();
    const bench::Tolerance tol = bench::dot_tolerance(p.dtype, p.reduction_length(), data.ref_rms);
    std::vector<float> out(static_cast<std::size_t>(p.dst_elements()), 0.0f);
    const auto all_nan = [&] {
      for (float v : out)
        if (!std::isnan(v)) return false;
      return true;
    };

    inst->poison_output();
    inst->sync();
    inst->read_output(out.data());
    EXPECT_TRUE(all_nan());
    EXPECT_FALSE(bench::compare(out.data(), data.ref.data(), out.size(), tol).passed);

    inst->run();
    inst->sync();
    inst->read_output(out.data());
    EXPECT_TRUE(bench::compare(out.data(), data.ref.data(), out.size(), tol).passed);

    inst->poison_output();
    inst->sync();
    inst->read_output(out.data());
    EXPECT_TRUE(all_nan());
  }
}

// The device timer brackets Halide's kernels: GPU time is positive, at most the total time, and
// for a problem of milliseconds most of it (were the events on another stream or context than
// Halide's launches, GPU time would be microseconds).
TEST(HalideCuda, GpuTimeIsPositiveAndWithinTotal) {
  MYCONV_SKIP_WITHOUT_GPU();
  CaseOptions o = tiny_options();
  o.measure.min_iters = 5;
  o.measure.max_iters = 20;
  o.measure.max_time_ms = 200;
  for (const char* schedule : {"manual", "manual_basic"})
    for (const char* d :
         {"mb2ic4ih64oc8kh5", "mb32ic64ih56oc64kh3ph1", "mb32ic64ih56oc64kh3ph1nhwc"}) {
      const bench::Result r = run_halide(parse_problem(d), schedule, o);
      ASSERT_EQ(r.status, bench::Status::passed) << describe(r);
      ASSERT_TRUE(r.gpu_time_ms.has_value()) << d;
      ASSERT_TRUE(r.total_time_ms.has_value()) << d;
      const double gpu = r.gpu_time_ms->median, total = r.total_time_ms->median;
      std::cout << "[ INFO     ] " << d << " [" << r.algorithm << "]: GPU " << gpu << " ms, total "
                << total << " ms, compile " << r.compile_time_ms.value_or(-1) << " ms, first run "
                << r.first_run_ms.value_or(-1) << " ms\n";
      EXPECT_GT(gpu, 0.0) << d;
      EXPECT_LE(gpu, total + 1e-3) << d;
      if (total > 0.5) {
        EXPECT_GT(gpu, 0.5 * total) << d;
      }
      EXPECT_EQ(r.extra.value("first_run_includes", std::string()).find("CUDA module load"), 0u);
      EXPECT_GT(
          r.extra.value("hook_calls", nlohmann::ordered_json::object()).value("get_stream", 0L),
          0L);
    }
}

// Pure timing replays a CUDA graph captured from run() on the backend's stream; the runner checks
// the output of the replayed graph once more after timing.
TEST(HalideCuda, GraphReplayPasses) {
  MYCONV_SKIP_WITHOUT_GPU();
  const std::unique_ptr<bench::DeviceServices> services = bench::make_cuda_services();
  CaseOptions o = tiny_options();
  o.timing = TimingMode::pure;
  o.pure_runs = 4;
  o.device_services = services.get();
  for (const char* schedule : {"manual", "manual_basic"})
    for (const char* d : {"mb2ic4ih64oc8kh5", "mb8ic32ih14oc64kh3ph1nhwc"}) {
      const bench::Result r = run_halide(parse_problem(d), schedule, o);
      ASSERT_EQ(r.status, bench::Status::passed) << describe(r);
      EXPECT_EQ(r.timing_mode, "pure:graph") << r.extra.value("graph_not_used", std::string());
    }
}

TEST(HalideCuda, Li2018PassesOrSaysWhy) {
  MYCONV_SKIP_WITHOUT_GPU();
  BackendOptions o;
  o.halide_schedule = "li2018";
  if (const Support a = make_halide_cuda_backend(o)->available(); !a.ok) {
    GTEST_SKIP() << a.reason;
  }
  for (const char* d : {"mb2ic4ih16oc8kh3ph1", "mb2ic4ih16oc8kh3ph1nhwc", "g2mb3ic6ih13oc4kh3sh2",
                        "mb2ic16ih10oc32kh3ph1dtfp16"}) {
    const bench::Result r = run_halide(parse_problem(d), "li2018");
    SCOPED_TRACE(describe(r));
    EXPECT_TRUE(r.status == bench::Status::passed || r.status == bench::Status::unsupported);
    if (r.status == bench::Status::passed) {
      EXPECT_EQ(r.algorithm, "auto:Li2018");
      EXPECT_TRUE(r.gpu_time_ms.has_value());
    } else {
      EXPECT_FALSE(r.reason.empty());
    }
  }
}

}  // namespace
}  // namespace conv
