// Tests of baselines/ops/libtorch_cpu.cpp (and the calls it shares with libtorch_cuda in
// libtorch_ops.hpp), run through the op suite's case runner as myops runs them: every category in
// fp32, the 16-bit dtypes passed or unsupported with ATen's reason, tf32 unsupported.
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

bench::Result run_torch(const std::string& descriptor) {
  return bench::testing::run_on(*make_libtorch_cpu_ops_backend(BackendOptions()),
                                parse_problem(descriptor));
}

using bench::testing::describe;

void expect_passed(const std::vector<std::string>& descriptors) {
  for (const std::string& d : descriptors) {
    const bench::Result r = run_torch(d);
    EXPECT_EQ(r.status, bench::Status::passed) << describe(r);
    EXPECT_FALSE(r.algorithm.empty()) << d;
    EXPECT_TRUE(r.extra.contains("torch_call")) << d;
  }
}

// Where LibTorch has no CPU kernel for a dtype it says so: unsupported with ATen's reason, never
// an error. A wrong result only where the backend names the library's known issue.
void expect_passed_or_unsupported(const std::vector<std::string>& descriptors) {
  for (const std::string& d : descriptors) {
    const bench::Result r = run_torch(d);
    const bool known = r.status == bench::Status::incorrect &&
                       r.reason.find("(known issue: ") != std::string::npos;
    EXPECT_TRUE(r.status == bench::Status::passed || r.status == bench::Status::unsupported ||
                known)
        << describe(r);
    if (r.status == bench::Status::unsupported) {
      EXPECT_NE(r.reason.find("LibTorch"), std::string::npos) << r.reason;
    }
  }
}

TEST(OpsLibtorchCpu, IdentifiesItself) {
  const std::unique_ptr<Backend> backend = make_libtorch_cpu_ops_backend(BackendOptions());
  EXPECT_EQ(backend->name(), "libtorch_cpu");
  EXPECT_EQ(backend->device(), "cpu");
  EXPECT_EQ(backend->library_version().rfind("LibTorch ", 0), 0u) << backend->library_version();
  EXPECT_TRUE(backend->available().ok);
}

TEST(OpsLibtorchCpu, ElementOpsPass) {
  expect_passed({"add:64x96", "sub:3x5x7", "mul:1000", "div:64x96"});
}

TEST(OpsLibtorchCpu, BroadcastElementOpsPass) {
  // Row, column, scalar and a middle axis: ATen broadcasts by the tensors' shapes.
  expect_passed(
      {"add:64x96+1x96", "sub:64x96+64x1", "mul:64x96+1x1", "div:4x6x8+4x1x8", "add:2x3x4+1x1x1"});
}

TEST(OpsLibtorchCpu, ActivationsPass) {
  expect_passed({"relu:4096", "sigmoid:64x65", "tanh:64x65", "gelu_erf:64x65", "gelu_tanh:64x65",
                 "silu:3x7x11"});
}

TEST(OpsLibtorchCpu, ReductionsPass) {
  expect_passed({"sum:64x96", "sum:64x96:axis=1", "sum:64x96:axis=0", "mean:4x6x8:axis=0,2",
                 "mean:4x6x8", "mean:4x6x8:axis=-1", "max:64x96", "max:4x6x8:axis=1",
                 "max:4x6x8:axis=0,1"});
}

TEST(OpsLibtorchCpu, NormalizationsPass) {
  expect_passed({"softmax:64x96", "softmax:2x3x130", "layernorm:64x96", "layernorm:2x3x130",
                 "rmsnorm:64x96", "rmsnorm:2x3x130"});
}

TEST(OpsLibtorchCpu, RmsnormSaysWhichFormRan) {
  const bench::Result r = run_torch("rmsnorm:8x64");
  ASSERT_EQ(r.status, bench::Status::passed) << describe(r);
  ASSERT_TRUE(r.extra.contains("rmsnorm_form"));
  EXPECT_NE(r.extra["rmsnorm_form"].get<std::string>().find("rms_norm"), std::string::npos);
}

TEST(OpsLibtorchCpu, MatmulPasses) {
  expect_passed({"matmul:m64n48k32", "matmul:m7n5k3", "matmul:b3m16n24k40"});
}

TEST(OpsLibtorchCpu, MemoryOpsPass) {
  expect_passed({"copy:64x96", "transpose:64x96", "transpose:3x5x7", "permute:4x6x8:perm=2,0,1",
                 "permute:2x3x4x5:perm=0,2,1,3", "concat:8x16:inputs=2:axis=0",
                 "concat:8x16:inputs=3:axis=1", "concat:2x3x4:inputs=4:axis=1"});
}

TEST(OpsLibtorchCpu, SixteenBitDtypesPassOrAreUnsupported) {
  for (const char* dt : {"fp16", "bf16"}) {
    const std::string s = std::string(":") + dt;
    expect_passed_or_unsupported(
        {"add:64x96" + s, "mul:64x96+1x96" + s, "relu:4096" + s, "sigmoid:64x65" + s,
         "gelu_erf:64x65" + s, "gelu_tanh:64x65" + s, "tanh:64x65" + s, "silu:64x65" + s,
         "sum:64x96:axis=1" + s, "mean:64x96" + s, "max:4x6x8:axis=1" + s, "softmax:64x96" + s,
         "layernorm:64x96" + s, "rmsnorm:64x96" + s, "matmul:m32n24k16" + s, "copy:64x96" + s,
         "transpose:64x96" + s, "permute:4x6x8:perm=2,0,1" + s, "concat:8x16:inputs=2:axis=1" + s});
  }
}

TEST(OpsLibtorchCpu, Tf32IsUnsupported) {
  const bench::Result r = run_torch("matmul:m16n16k16:tf32");
  EXPECT_EQ(r.status, bench::Status::unsupported) << describe(r);
  EXPECT_NE(r.reason.find("tf32"), std::string::npos) << r.reason;
}

TEST(OpsLibtorchCpu, PoisonedOutputIsReplacedOnEveryRun) {
  const std::unique_ptr<Backend> backend = make_libtorch_cpu_ops_backend(BackendOptions());
  const Problem p = parse_problem("sum:5x7:axis=1");
  const HostData data = make_host_data(p, 2);
  std::unique_ptr<Instance> inst = backend->prepare(p, data);
  inst->compile();
  const bench::testing::PoisonedRuns r = bench::testing::run_twice_after_poison(
      *inst, static_cast<std::size_t>(p.output_elements()));
  ASSERT_TRUE(r.poisoned);
  EXPECT_EQ(r.first, r.second);
  for (std::size_t i = 0; i < r.second.size(); ++i) EXPECT_NEAR(r.second[i], data.ref[i], 1e-5);
}

TEST(OpsLibtorchCpu, ScalarOutputIsOneElement) {
  const std::unique_ptr<Backend> backend = make_libtorch_cpu_ops_backend(BackendOptions());
  const Problem p = parse_problem("max:3x4x5");
  const HostData data = make_host_data(p, 3);
  std::unique_ptr<Instance> inst = backend->prepare(p, data);
  inst->compile();
  inst->run();
  float out = 0;
  inst->read_output(&out);
  EXPECT_EQ(double(out), data.ref[0]);
}

}  // namespace
}  // namespace ops
