// Tests of baselines/conv/halide_cpu.cpp (and the algorithm in baselines/conv/halide_conv.cpp), run
// through the case runner as myconv runs them.
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "baselines/conv/backends.hpp"
#include "conv/bench.hpp"
#include "conv/data.hpp"
#include "tests/common/case_helpers.hpp"

namespace conv {
namespace {

using bench::testing::tiny_case_options;

bench::Result run_halide(const std::string& descriptor, const std::string& schedule = "manual") {
  BackendOptions options;
  options.halide_schedule = schedule;
  const std::unique_ptr<Backend> backend = make_halide_cpu_backend(options);
  const Problem p = parse_problem(descriptor);
  const HostData data = make_host_data(p, 1);
  return run_case(backend.get(), backend->name(), backend->device(), "", p, data,
                  tiny_case_options())
      .result;
}

// A failed or incorrect case prints its reason; the tests compare statuses.
std::string describe(const bench::Result& r) {
  return r.problem + " " + r.algorithm + ": " + bench::to_string(r.status) + " " + r.reason;
}

TEST(HalideCpu, IdentifiesItself) {
  const std::unique_ptr<Backend> backend = make_halide_cpu_backend(BackendOptions());
  EXPECT_EQ(backend->name(), "halide_cpu");
  EXPECT_EQ(backend->device(), "cpu");
  EXPECT_EQ(backend->library_version().rfind("Halide 14.", 0), 0u) << backend->library_version();
  EXPECT_NE(backend->library_version().find("(target x86-64-linux"), std::string::npos)
      << backend->library_version();
  EXPECT_TRUE(backend->available().ok);
}

TEST(HalideCpu, Fp32NchwPasses) {
  const bench::Result r = run_halide("mb2ic4ih12oc8kh3");
  ASSERT_EQ(r.status, bench::Status::passed) << describe(r);
  EXPECT_EQ(r.algorithm.rfind("manual nchw", 0), 0u) << r.algorithm;
  ASSERT_TRUE(r.compile_time_ms.has_value());
  EXPECT_GT(*r.compile_time_ms, 0.0);
  ASSERT_TRUE(r.shape_ok.has_value());
  EXPECT_TRUE(*r.shape_ok);
  EXPECT_EQ(r.extra.value("schedule", ""), "manual");
  EXPECT_EQ(r.extra.value("halide_target", "").rfind("x86-64-linux", 0), 0u);
  EXPECT_GT(r.extra.value("jit_compile_ms", 0.0), 0.0);
}

TEST(HalideCpu, Fp32NhwcPasses) {
  const bench::Result r = run_halide("mb2ic16ih12oc32kh3ph1nhwc");
  ASSERT_EQ(r.status, bench::Status::passed) << describe(r);
  EXPECT_EQ(r.algorithm.rfind("manual nhwc", 0), 0u) << r.algorithm;
  ASSERT_TRUE(r.compile_time_ms.has_value());
  EXPECT_GT(*r.compile_time_ms, 0.0);
}

// compile() holds the JIT: the first run must not compile again (a realize() with another target
// than compile_jit()'s would), so it takes a fraction of the JIT time.
TEST(HalideCpu, FirstRunDoesNotCompile) {
  for (const char* descriptor : {"mb2ic4ih12oc8kh3", "mb2ic4ih12oc8kh3nhwc"}) {
    const bench::Result r = run_halide(descriptor);
    ASSERT_EQ(r.status, bench::Status::passed) << describe(r);
    ASSERT_TRUE(r.first_run_ms.has_value());
    const double jit_ms = r.extra.value("jit_compile_ms", 0.0);
    EXPECT_LT(*r.first_run_ms, 0.25 * jit_ms) << descriptor << ": jit " << jit_ms << " ms";
  }
}

TEST(HalideCpu, GroupedStridedDilatedPaddedPasses) {
  // Odd sizes and unequal height/width parameters catch swapped or dropped fields.
  for (const char* layout : {"", "nhwc"}) {
    const bench::Result r =
        run_halide(std::string("g2mb3ic6ih13iw11oc4kh3kw2sh2ph2pw1dh1dw2") + layout);
    EXPECT_EQ(r.status, bench::Status::passed) << describe(r);
  }
}

// Output extents below the vector width and the register tile (the schedules shrink their
// factors), depthwise, a channel count that is no multiple of the tile.
TEST(HalideCpu, SmallAndOddExtentsPass) {
  for (const char* problem : {"mb1ic3ih5oc1kh3", "g16mb2ic16ih10oc16kh3ph1",
                              "mb3ic5ih9iw23oc37kh2kw2", "mb1ic2ih3oc3kh3ph1"})
    for (const char* layout : {"", "nhwc"}) {
      const bench::Result r = run_halide(std::string(problem) + layout);
      EXPECT_EQ(r.status, bench::Status::passed) << describe(r);
    }
}

// nhwc with fewer output channels than vector lanes but rows of at least one vector takes the
// x-vectorized schedule with the input transposed per task.
TEST(HalideCpu, NhwcNarrowChannelsPass) {
  for (const char* problem :
       {"mb2ic4ih20oc8kh3ph1nhwc", "g2mb1ic4ih19iw21oc6kh3kw3ph1pw1dh1dw1nhwc",
        "mb2ic4ih20oc8kh3dtbf16nhwc"}) {
    const bench::Result r = run_halide(problem);
    EXPECT_EQ(r.status, bench::Status::passed) << describe(r);
    if (r.extra.value("halide_target", "").find("avx512") != std::string::npos) {  // 16 lanes
      EXPECT_NE(r.algorithm.find("x vectorized by 16"), std::string::npos) << r.algorithm;
    }
  }
}

// Each autoscheduler schedules the same algorithm: it must pass, or say why it cannot.
TEST(HalideCpu, AutoschedulersPassOrSayWhy) {
  const std::pair<const char*, const char*> schedulers[] = {{"adams2019", "auto:Adams2019"},
                                                            {"mullapudi2016", "auto:Mullapudi2016"},
                                                            {"li2018", "auto:Li2018"}};
  for (const auto& [option, algorithm] : schedulers)
    for (const char* layout : {"", "nhwc"}) {
      const bench::Result r = run_halide(std::string("mb2ic4ih16oc8kh3ph1") + layout, option);
      SCOPED_TRACE(describe(r));
      EXPECT_TRUE(r.status == bench::Status::passed || r.status == bench::Status::unsupported);
      if (r.status == bench::Status::passed) {
        EXPECT_EQ(r.algorithm, algorithm);
        EXPECT_EQ(r.extra.value("schedule", ""), option);
      } else {
        EXPECT_FALSE(r.reason.empty());
      }
    }
}

// fp16 and bf16 are stored as 16-bit in Halide buffers, multiplied and summed in fp32, and the
// output rounded to nearest even (Halide's x86 conversions agree bit for bit with
// bench::float_to_half_bits / float_to_bf16_bits). Padded and unpadded problems take different
// schedule paths (input staged or read in place).
TEST(HalideCpu, Fp16AndBf16Pass) {
  for (const char* dtype : {"dtfp16", "dtbf16"})
    for (const char* problem :
         {"mb2ic4ih12oc8kh3", "g2mb3ic6ih13iw11oc4kh3kw2sh2ph2pw1dh1dw2", "mb2ic16ih10oc32kh3ph1"})
      for (const char* layout : {"", "nhwc"}) {
        const bench::Result r = run_halide(std::string(problem) + dtype + layout);
        EXPECT_EQ(r.status, bench::Status::passed) << describe(r);
        EXPECT_EQ(r.extra.value("storage_type", ""),
                  std::string(dtype) == "dtfp16" ? "float16" : "bfloat16");
      }
}

TEST(HalideCpu, UnknownScheduleIsNotAvailable) {
  BackendOptions options;
  options.halide_schedule = "fastest";
  const Support s = make_halide_cpu_backend(options)->available();
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("fastest"), std::string::npos) << s.reason;
}

// halide_cuda's manual_basic is not a halide_cpu schedule: said so, not run as another.
TEST(HalideCpu, CudaOnlyScheduleIsNotAvailable) {
  BackendOptions options;
  options.halide_schedule = "manual_basic";
  const Support s = make_halide_cpu_backend(options)->available();
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("halide_cuda"), std::string::npos) << s.reason;
}

TEST(HalideCpu, Tf32IsUnsupported) {
  const bench::Result r = run_halide("mb2ic4ih12oc8kh3dttf32");
  EXPECT_EQ(r.status, bench::Status::unsupported) << describe(r);
  EXPECT_NE(r.reason.find("tf32"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace conv
