// Tests of baselines/conv/onednn_cpu.cpp, run through the case runner as myconv runs them.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "baselines/conv/backends.hpp"
#include "conv/bench.hpp"
#include "conv/data.hpp"
#include "core/error.hpp"
#include "tests/common/case_helpers.hpp"

namespace conv {
namespace {

bench::Result run_onednn(const std::string& descriptor) {
  return bench::testing::run_on(*make_onednn_cpu_backend(BackendOptions()),
                                parse_problem(descriptor));
}

using bench::testing::describe;

TEST(OnednnCpu, IdentifiesItself) {
  const std::unique_ptr<Backend> backend = make_onednn_cpu_backend(BackendOptions());
  EXPECT_EQ(backend->name(), "onednn_cpu");
  EXPECT_EQ(backend->device(), "cpu");
  EXPECT_EQ(backend->library_version().rfind("oneDNN 2.", 0), 0u) << backend->library_version();
  EXPECT_NE(backend->library_version().find("cpu isa: "), std::string::npos);
  EXPECT_TRUE(backend->available().ok);
}

TEST(OnednnCpu, Fp32NchwPasses) {
  const bench::Result r = run_onednn("mb2ic4ih12oc8kh3");
  ASSERT_EQ(r.status, bench::Status::passed) << describe(r);
  EXPECT_FALSE(r.algorithm.empty());
  ASSERT_TRUE(r.compile_time_ms.has_value());
  EXPECT_GT(*r.compile_time_ms, 0.0);
  ASSERT_TRUE(r.workspace_bytes.has_value());
  EXPECT_GE(*r.workspace_bytes, 0);
  EXPECT_EQ(r.extra.value("onednn_impl", ""), r.algorithm);
  EXPECT_TRUE(r.extra.contains("weights_format"));
  ASSERT_TRUE(r.shape_ok.has_value());
  EXPECT_TRUE(*r.shape_ok);
}

TEST(OnednnCpu, Fp32NhwcPasses) {
  const bench::Result r = run_onednn("mb2ic16ih12oc16kh3ph1nhwc");
  ASSERT_EQ(r.status, bench::Status::passed) << describe(r);
  EXPECT_FALSE(r.algorithm.empty());
  EXPECT_TRUE(r.compile_time_ms.has_value());
}

TEST(OnednnCpu, GroupedStridedDilatedPaddedPasses) {
  // Odd sizes and unequal height/width parameters catch swapped or dropped fields.
  for (const char* layout : {"", "nhwc"}) {
    const bench::Result r =
        run_onednn(std::string("g2mb3ic6ih13iw11oc4kh3kw2sh2ph2pw1dh1dw2") + layout);
    EXPECT_EQ(r.status, bench::Status::passed) << describe(r);
  }
}

TEST(OnednnCpu, DepthwisePasses) {
  for (const char* layout : {"", "nhwc"}) {
    const bench::Result r = run_onednn(std::string("g16mb2ic16ih10oc16kh3ph1") + layout);
    EXPECT_EQ(r.status, bench::Status::passed) << describe(r);
  }
}

// Where the CPU lacks a kernel oneDNN finds no implementation: unsupported with a reason, never
// a wrong result or an error.
void expect_passed_or_unsupported(const std::string& descriptor) {
  const bench::Result r = run_onednn(descriptor);
  EXPECT_TRUE(r.status == bench::Status::passed || r.status == bench::Status::unsupported)
      << describe(r);
  if (r.status == bench::Status::unsupported) {
    EXPECT_FALSE(r.reason.empty());
  }
}

TEST(OnednnCpu, Bf16PassesOrIsUnsupported) {
  expect_passed_or_unsupported("mb2ic8ih12oc8kh3ph1dtbf16");
  expect_passed_or_unsupported("g2mb2ic8ih12oc8kh3sh2ph1dh1dtbf16nhwc");
}

TEST(OnednnCpu, Fp16PassesOrIsUnsupported) {
  expect_passed_or_unsupported("mb2ic8ih12oc8kh3dtfp16");
}

TEST(OnednnCpu, Tf32IsUnsupported) {
  const bench::Result r = run_onednn("mb2ic4ih12oc8kh3dttf32");
  EXPECT_EQ(r.status, bench::Status::unsupported) << describe(r);
  EXPECT_NE(r.reason.find("tf32"), std::string::npos) << r.reason;
}

TEST(OnednnCpu, PoisonedOutputIsOverwrittenOnEveryRun) {
  const std::unique_ptr<Backend> backend = make_onednn_cpu_backend(BackendOptions());
  const Problem p = parse_problem("mb1ic3ih7oc5kh3");
  const HostData data = make_host_data(p, 2);
  std::unique_ptr<Instance> inst = backend->prepare(p, data);
  inst->compile();
  EXPECT_EQ(inst->output_dims(), (std::vector<std::int64_t>{1, 5, 5, 5}));
  const bench::testing::PoisonedRuns r =
      bench::testing::run_twice_after_poison(*inst, static_cast<std::size_t>(p.dst_elements()));
  ASSERT_TRUE(r.poisoned);
  EXPECT_EQ(r.first, r.second);
  for (float v : r.second) ASSERT_FALSE(std::isnan(v));
}

}  // namespace
}  // namespace conv
