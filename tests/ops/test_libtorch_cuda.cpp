// Tests of baselines/ops/libtorch_cuda.cpp: the PyTorch calls of every category on CUDA tensors
// through the case runner, real and pure (an at::cuda::CUDAGraph replay), every dtype; ATen's
// allow_tf32 switch set for the matmul call and put back after it. Built only with a CUDA
// LibTorch; skips without a GPU.
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ATen/Context.h>

#include "baselines/ops/backends.hpp"
#include "core/cuda/cuda_services.hpp"
#include "ops/bench.hpp"
#include "ops/data.hpp"

namespace ops {
namespace {

std::string describe(const bench::Result& r) {
  return r.problem + " (" + r.timing_mode + "): " + bench::to_string(r.status) + " " + r.reason;
}

class OpsLibtorchCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = make_libtorch_cuda_ops_backend(BackendOptions());
    if (const Support a = backend_->available(); !a.ok) GTEST_SKIP() << a.reason;
  }

  bench::Result run_one(const std::string& descriptor, bool pure) {
    static const std::unique_ptr<bench::DeviceServices> services = bench::make_cuda_services();
    const Problem p = parse_problem(descriptor);
    CaseOptions o;
    o.measure.warmup_iters = 1;
    o.measure.min_iters = 2;
    o.measure.min_time_ms = 0;
    o.measure.max_time_ms = 5;
    o.device_services = services.get();
    if (pure) {
      o.timing = TimingMode::pure;
      o.pure_runs = 3;
    }
    return run_case(backend_.get(), backend_->name(), backend_->device(), "", p,
                    make_host_data(p, 6), o)
        .result;
  }

  void expect_all_pass(const std::vector<std::string>& problems) {
    for (const std::string& d : problems)
      for (const char* dt : {"fp32", "fp16", "bf16"}) {
        const bench::Result real = run_one(d + ":" + dt, false);
        EXPECT_EQ(real.status, bench::Status::passed) << describe(real);
        EXPECT_TRUE(real.extra.contains("torch_call")) << describe(real);
        const bench::Result pure = run_one(d + ":" + dt, true);
        EXPECT_EQ(pure.status, bench::Status::passed) << describe(pure);
        EXPECT_EQ(pure.timing_mode, "pure:graph") << describe(pure) << " " << pure.extra.dump();
      }
  }

  std::unique_ptr<Backend> backend_;
};

TEST_F(OpsLibtorchCuda, ElementOpsAndActivationsPass) {
  expect_all_pass({"add:256x300", "div:64x96", "mul:256x300+1x300", "sub:256x300+256x1",
                   "add:2x3x4+1x1x1", "relu:4096", "sigmoid:64x65", "tanh:64x65", "gelu_erf:64x65",
                   "gelu_tanh:64x65", "silu:3x7x11"});
}

TEST_F(OpsLibtorchCuda, ReductionsAndNormalizationsPass) {
  expect_all_pass({"sum:100003", "mean:64x96:axis=1", "max:4x6x8:axis=0,2", "sum:64x96:axis=0",
                   "max:3x5x7", "softmax:64x96", "layernorm:2x3x130", "rmsnorm:64x96"});
}

TEST_F(OpsLibtorchCuda, MatmulAndMemoryOpsPass) {
  expect_all_pass({"matmul:m64n48k32", "matmul:b3m16n24k40", "copy:64x96", "transpose:3x5x7",
                   "permute:4x6x8:perm=2,0,1", "concat:8x16:inputs=3:axis=1"});
}

TEST_F(OpsLibtorchCuda, Tf32SwitchIsSetForTheCallAndPutBack) {
  at::Context& ctx = at::globalContext();
  for (const bool before : {false, true}) {
    ctx.setAllowTF32CuBLAS(before);
    const bench::Result tf32 = run_one("matmul:m128n128k128:tf32", false);
    ASSERT_EQ(tf32.status, bench::Status::passed) << describe(tf32);
    EXPECT_NE(tf32.algorithm.find("allow_tf32=on"), std::string::npos) << tf32.algorithm;
    EXPECT_EQ(tf32.extra.value("torch_allow_tf32_cublas", false), true);
    EXPECT_EQ(ctx.allowTF32CuBLAS(), before);
    const bench::Result fp32 = run_one("matmul:m128n128k128", false);
    ASSERT_EQ(fp32.status, bench::Status::passed) << describe(fp32);
    EXPECT_NE(fp32.algorithm.find("allow_tf32=off"), std::string::npos) << fp32.algorithm;
    EXPECT_EQ(ctx.allowTF32CuBLAS(), before);
  }
  ctx.setAllowTF32CuBLAS(false);
}

TEST_F(OpsLibtorchCuda, RmsnormSaysWhichFormRan) {
  const bench::Result r = run_one("rmsnorm:8x64", false);
  ASSERT_EQ(r.status, bench::Status::passed) << describe(r);
  EXPECT_NE(r.extra.value("rmsnorm_form", std::string()).find("rms_norm"), std::string::npos);
}

}  // namespace
}  // namespace ops
