// Tests of baselines/ops/onednn_cpu.cpp (the op suite's oneDNN backend), run through the case
// runner as myops runs them: every category in fp32 passes (rmsnorm: unsupported with a reason);
// bf16 and fp16 pass or are unsupported with a reason where this CPU's oneDNN has no kernel, never
// incorrect or failed.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "baselines/ops/backends.hpp"
#include "ops/bench.hpp"
#include "ops/data.hpp"
#include "tests/common/case_helpers.hpp"

namespace ops {
namespace {

bench::Result run_onednn(const std::string& descriptor) {
  return bench::testing::run_on(*make_onednn_cpu_ops_backend(BackendOptions()),
                                parse_problem(descriptor));
}

using bench::testing::describe;

// Every category, with odd sizes (no dimension a multiple of a vector length hides a missed tail),
// broadcasts of each kind, reduced axes inner, outer and all, ranks 1 to 4.
const std::vector<std::string> kProblems = {
    // element
    "add:37x53", "sub:33x17+1x17", "mul:33x17+33x1", "div:8x5x7+1x1x1", "add:3x4x5x6+3x1x5x1",
    // activation
    "relu:1001", "sigmoid:4x257", "tanh:4x257", "gelu_erf:4x257", "gelu_tanh:4x257", "silu:4x257",
    // reduction
    "sum:4x5x6", "sum:4x5x33:axis=2", "mean:4x5x6:axis=0,2", "max:7x33:axis=0", "mean:1000",
    "max:3x4x5x6:axis=1,3",
    // normalization
    "softmax:4x5x33", "softmax:77", "layernorm:6x100", "layernorm:2x3x64",
    // matmul
    "matmul:m17n23k31", "matmul:b3m8n16k12",
    // memory
    "copy:5x7x9", "transpose:13x17", "transpose:2x3x4", "permute:2x3x4x5:perm=3,1,0,2",
    "permute:6x7x8:perm=2,0,1", "concat:4x6:inputs=3:axis=1", "concat:4x6", "concat:2x3x5:axis=2"};

TEST(OnednnCpuOps, IdentifiesItself) {
  const std::unique_ptr<Backend> backend = make_onednn_cpu_ops_backend(BackendOptions());
  EXPECT_EQ(backend->name(), "onednn_cpu");
  EXPECT_EQ(backend->device(), "cpu");
  EXPECT_EQ(backend->library_version().rfind("oneDNN 2.", 0), 0u) << backend->library_version();
  EXPECT_NE(backend->library_version().find("cpu isa: "), std::string::npos);
  EXPECT_TRUE(backend->available().ok) << backend->available().reason;
}

TEST(OnednnCpuOps, EveryCategoryPassesInFp32) {
  for (const std::string& d : kProblems) {
    const bench::Result r = run_onednn(d);
    EXPECT_EQ(r.status, bench::Status::passed) << describe(r);
    if (r.status != bench::Status::passed) continue;
    EXPECT_FALSE(r.algorithm.empty()) << d;
    EXPECT_EQ(r.extra.value("onednn_impl", ""), r.algorithm) << d;
    ASSERT_TRUE(r.compile_time_ms.has_value()) << d;
    EXPECT_GT(*r.compile_time_ms, 0.0) << d;
    ASSERT_TRUE(r.workspace_bytes.has_value()) << d;
    EXPECT_GE(*r.workspace_bytes, 0) << d;
  }
}

// Where the CPU lacks a kernel oneDNN finds no implementation: unsupported with a reason, never
// a wrong result or an error.
void expect_passed_or_unsupported(const std::string& descriptor) {
  const bench::Result r = run_onednn(descriptor);
  EXPECT_TRUE(r.status == bench::Status::passed || r.status == bench::Status::unsupported)
      << describe(r);
  if (r.status == bench::Status::unsupported) {
    EXPECT_FALSE(r.reason.empty()) << descriptor;
  }
}

TEST(OnednnCpuOps, EveryCategoryPassesOrIsUnsupportedInBf16) {
  for (const std::string& d : kProblems) expect_passed_or_unsupported(d + ":bf16");
}

TEST(OnednnCpuOps, Fp16PassesOrIsUnsupported) {
  for (const char* d : {"add:33x17+1x17:fp16", "gelu_erf:4x257:fp16", "sum:4x5x33:axis=2:fp16",
                        "softmax:4x5x33:fp16", "layernorm:6x100:fp16", "matmul:m17n23k31:fp16",
                        "transpose:13x17:fp16", "concat:4x6:fp16"})
    expect_passed_or_unsupported(d);
}

TEST(OnednnCpuOps, RmsnormIsUnsupportedWithAReason) {
  for (const char* d : {"rmsnorm:6x100", "rmsnorm:6x100:bf16"}) {
    const bench::Result r = run_onednn(d);
    EXPECT_EQ(r.status, bench::Status::unsupported) << describe(r);
    EXPECT_NE(r.reason.find("rmsnorm"), std::string::npos) << r.reason;
  }
}

// oneDNN refuses a reduction whose src and dst dims are equal: unsupported, not failed.
TEST(OnednnCpuOps, ReductionOverExtentOneAxesIsUnsupported) {
  for (const char* d : {"sum:4x1:axis=1", "max:4x1x3:axis=1:bf16", "mean:1"}) {
    const bench::Result r = run_onednn(d);
    EXPECT_EQ(r.status, bench::Status::unsupported) << describe(r);
    EXPECT_FALSE(r.reason.empty()) << d;
  }
}

TEST(OnednnCpuOps, Tf32IsUnsupported) {
  const bench::Result r = run_onednn("matmul:m17n23k31:tf32");
  EXPECT_EQ(r.status, bench::Status::unsupported) << describe(r);
  EXPECT_NE(r.reason.find("tf32"), std::string::npos) << r.reason;
}

TEST(OnednnCpuOps, PoisonedOutputIsOverwrittenOnEveryRun) {
  const std::unique_ptr<Backend> backend = make_onednn_cpu_ops_backend(BackendOptions());
  for (const char* d : {"sum:4x5x6:axis=1", "permute:2x3x4:perm=2,0,1", "layernorm:3x10"}) {
    const Problem p = parse_problem(d);
    const HostData data = make_host_data(p, 2);
    std::unique_ptr<Instance> inst = backend->prepare(p, data);
    inst->compile();
    const bench::testing::PoisonedRuns r = bench::testing::run_twice_after_poison(
        *inst, static_cast<std::size_t>(p.output_elements()));
    ASSERT_TRUE(r.poisoned) << d;
    EXPECT_EQ(r.first, r.second) << d;
    for (float v : r.second) ASSERT_FALSE(std::isnan(v)) << d;
  }
}

}  // namespace
}  // namespace ops
