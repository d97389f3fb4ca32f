// Tests of baselines/conv/halide_cuda.cpp (and the algorithm in baselines/conv/halide_conv.cpp), run through
// the case runner as myconv runs them. Compiling a schedule for the CUDA target needs no device,
// nor does running the manual schedule's tiling on the host, so those tests run everywhere;
// every test that runs on the GPU skips, with the reason, where no CUDA device is present.
//
// On a GPU host this binary is the quick check of the backend (a few minutes):
//   build/tests/test_halide_cuda
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
#include "tests/gpu_skip.hpp"
#include "tests/random_problems.hpp"

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
                         const CaseOptions& options = tiny_options()) {
  BackendOptions backend_options;
  backend_options.halide_schedule = schedule;
  const std::unique_ptr<Backend> backend = make_halide_cuda_backend(backend_options);
  const HostData data = make_host_data(p, 7);
  return run_case(backend.get(), backend->name(), backend->device(), "", p, data, options).result;
}

std::string describe(const bench::Result& r) {
  return r.problem + " [" + r.algorithm + "]: " + bench::to_string(r.status) + " " + r.reason;
}

// Problems that take every path of the manual schedules: register tiles that shrink for small
// outputs and stay whole for large ones, extents below a tile (ShiftInwards needs none above),
// nhwc with fewer and more than 32 output channels (x-threads and c-threads schedules), groups,
// depthwise, stride, dilation, padding, kernels of 1 to 7, odd and non-square sizes, batch 1 to
// 8; then randomized ones (batch 1, 2, 3, 32).
std::vector<Problem> problems() {
  std::vector<Problem> fixed;
  for (const char* d :
       {"mb2ic4ih64oc8kh5", "mb1ic3ih5oc1kh3", "mb3ic5ih9iw23oc37kh2kw2", "mb1ic2ih3oc3kh3ph1",
        "g2mb3ic6ih13iw11oc4kh3kw2sh2ph2pw1dh1dw2", "g16mb2ic16ih10oc16kh3ph1",
        "mb8ic32ih14oc64kh3ph1", "mb5ic16ih17iw15oc128kh3kw3sh2sw2ph1pw1", "mb4ic24ih20oc48kh1",
        "g4mb2ic32ih12oc160kh3ph1dh1", "mb1ic3ih40oc32kh7sh2ph3", "mb6ic8ih33iw33oc40kh2kw2sw2",
        // Outputs large enough for register tiles (4 rows x 4 and x 2 channels in nchw, 14 and 8
        // columns in nhwc) and, for 7 x 7 images, channel groups as a third thread dimension.
        "mb8ic64ih56oc64kh3ph1", "mb4ic32ih31oc256kh3ph1", "mb16ic128ih7oc256kh3ph1"})
    fixed.push_back(parse_problem(d));
  return testing::randomized_problems(std::move(fixed), 23, 4242, {6, 6});
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

// The manual schedules lower and compile to PTX for every path and layout: all fixed problems in
// fp32, fp16 and bf16 (converted from their bits) on a few that cover the tile shapes.
TEST(HalideCuda, ManualSchedulesCompileForTheCudaTarget) {
  std::vector<Problem> ps = problems();
  ps.resize(15);  // the fixed problems: every schedule path, without the randomized repeats
  for (std::size_t i = 0; i < ps.size(); ++i)
    for (DataType dt : {DataType::fp32, DataType::fp16, DataType::bf16})
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        if (dt != DataType::fp32 && i != 0 && i != 4 && i != 12 && i != 14) continue;
        Problem p = ps[i];
        p.dtype = dt;
        p.layout = layout;
        std::string algorithm;
        EXPECT_NO_THROW(algorithm = halide_cuda_compile_only(p, BackendOptions())) << p.str();
        EXPECT_EQ(algorithm.rfind("manual " + to_string(layout), 0), 0u)
            << p.str() << ": " << algorithm;
      }
}

// The manual schedules' tiling (splits shifted inwards, register tiles, compute_at per thread)
// with the GPU loops left serial on the host, against the reference: every fixed problem in
// fp32, and fp16 and bf16 (integer conversions from the bits) on a few.
TEST(HalideCuda, ManualTilingMatchesTheReferenceOnTheHost) {
  std::vector<Problem> ps = problems();
  ps.resize(15);
  for (std::size_t i = 0; i < ps.size(); ++i)
    for (DataType dt : {DataType::fp32, DataType::fp16, DataType::bf16})
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        if (dt != DataType::fp32 && i != 0 && i != 4 && i != 13) continue;
        Problem p = ps[i];
        p.dtype = dt;
        p.layout = layout;
        const HostData data = make_host_data(p, 9);
        std::vector<float> out(static_cast<std::size_t>(p.dst_elements()),
                               std::numeric_limits<float>::quiet_NaN());
        ASSERT_NO_THROW(halide_cuda_run_tiling_on_host(p, data, out.data())) << p.str();
        const bench::Correctness c =
            bench::compare(out.data(), data.ref.data(), out.size(),
                           bench::dot_tolerance(p.dtype, p.reduction_length(), data.ref_rms));
        EXPECT_TRUE(c.passed) << p.str() << ": " << c.message;
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

// Every problem, dtype and layout against the float64 reference. tf32 runs as strict fp32.
TEST(HalideCuda, MatchesTheReference) {
  MYCONV_SKIP_WITHOUT_GPU();
  int failed = 0;
  for (Problem p : problems())
    for (DataType dt : bench::all_data_types())
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        p.dtype = dt;
        p.layout = layout;
        const bench::Result r = run_halide(p);
        EXPECT_EQ(r.status, bench::Status::passed) << describe(r);
        if (r.status != bench::Status::passed) {
          ++failed;
          continue;
        }
        EXPECT_TRUE(r.gpu_time_ms.has_value()) << describe(r);
        EXPECT_EQ(r.algorithm.rfind("manual " + to_string(layout), 0), 0u) << r.algorithm;
        if (dt == DataType::tf32) {
          EXPECT_NE(r.algorithm.find("strict fp32"), std::string::npos) << r.algorithm;
        }
      }
  std::cout << "[ INFO     ] " << failed << " case(s) did not pass\n";
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
  for (const char* d :
       {"mb2ic4ih64oc8kh5", "mb32ic64ih56oc64kh3ph1", "mb32ic64ih56oc64kh3ph1nhwc"}) {
    const bench::Result r = run_halide(parse_problem(d), "manual", o);
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
    EXPECT_GT(r.extra.value("hook_calls", nlohmann::ordered_json::object()).value("get_stream", 0L),
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
  for (const char* d : {"mb2ic4ih64oc8kh5", "mb8ic32ih14oc64kh3ph1nhwc"}) {
    const bench::Result r = run_halide(parse_problem(d), "manual", o);
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
