// libtorch_cuda: the process-global ATen flags it sets per dtype (strict FP32 turns TF32 off,
// tf32 turns it on), cudnn.benchmark from the option, and what compile() and the result record
// say about it. Correctness over many problems is test_backends_gpu's. Skips without a GPU.
#include <gtest/gtest.h>

#include <ATen/Context.h>

#include "conv/bench.hpp"
#include "experiments/registry/conv.hpp"

namespace conv {
namespace {

struct Ran {
  bench::Result result;
  bool allow_tf32_cudnn, allow_tf32_cublas, benchmark;
};

// One case of libtorch_cuda, with ATen's flags as the case left them.
Ran run_one(const std::string& problem, DataType dt, Layout layout, bool benchmark) {
  BackendOptions o;
  o.torch_cudnn_benchmark = benchmark;
  const auto registry = make_registry(o);
  const RegistryEntry* entry = nullptr;
  for (const auto& e : registry)
    if (e.name == "libtorch_cuda") entry = &e;
  Problem p = parse_problem(problem);
  p.dtype = dt;
  p.layout = layout;
  CaseOptions options;
  options.measure.warmup_iters = 0;
  options.measure.min_iters = 1;
  options.measure.max_iters = 2;
  options.measure.min_time_ms = 0;
  options.measure.max_time_ms = 1;
  Ran r;
  r.result = run_case(entry->backend.get(), entry->name, entry->device, "", p, make_host_data(p, 5),
                      options)
                 .result;
  const at::Context& ctx = at::globalContext();
  r.allow_tf32_cudnn = ctx.allowTF32CuDNN();
  r.allow_tf32_cublas = ctx.allowTF32CuBLAS();
  r.benchmark = ctx.benchmarkCuDNN();
  return r;
}

class LibtorchCuda : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const auto& e : make_registry(BackendOptions{}))
      if (e.name == "libtorch_cuda") {
        if (const Support a = e.backend->available(); !a.ok) GTEST_SKIP() << a.reason;
      }
  }
};

TEST_F(LibtorchCuda, Fp32IsStrictAndTf32AllowsTensorCores) {
  const Ran fp32 = run_one("mb2ic16ih20oc32kh3ph1", DataType::fp32, Layout::nchw, false);
  ASSERT_EQ(fp32.result.status, bench::Status::passed) << fp32.result.reason;
  EXPECT_FALSE(fp32.allow_tf32_cudnn);
  EXPECT_FALSE(fp32.allow_tf32_cublas);
  EXPECT_NE(fp32.result.algorithm.find("allow_tf32=off"), std::string::npos);

  const Ran tf32 = run_one("mb2ic16ih20oc32kh3ph1", DataType::tf32, Layout::nhwc, false);
  ASSERT_EQ(tf32.result.status, bench::Status::passed) << tf32.result.reason;
  EXPECT_TRUE(tf32.allow_tf32_cudnn);
  EXPECT_TRUE(tf32.allow_tf32_cublas);
  EXPECT_NE(tf32.result.algorithm.find("allow_tf32=on"), std::string::npos);
  EXPECT_NE(tf32.result.algorithm.find("channels_last"), std::string::npos);
}

TEST_F(LibtorchCuda, BenchmarkModeSearchesInCompile) {
  // A shape no other case here uses, so that ATen's plan cache has no plan for it yet.
  const Ran on = run_one("mb4ic24ih29oc40kh3ph1", DataType::fp32, Layout::nchw, true);
  ASSERT_EQ(on.result.status, bench::Status::passed) << on.result.reason;
  EXPECT_TRUE(on.benchmark);
  EXPECT_NE(on.result.algorithm.find("cudnn.benchmark=on"), std::string::npos);
  EXPECT_EQ(on.result.extra.value("torch_cudnn_benchmark", false), true);
  EXPECT_NE(on.result.extra.value("compile_includes", std::string()).find("search"),
            std::string::npos);
  ASSERT_TRUE(on.result.compile_time_ms.has_value());
  ASSERT_TRUE(on.result.first_run_ms.has_value());
  std::cout << "cudnn.benchmark on: compile " << *on.result.compile_time_ms << " ms, first run "
            << *on.result.first_run_ms << " ms, algorithm " << on.result.algorithm << "\n";

  const Ran off = run_one("mb4ic24ih29oc40kh3ph1", DataType::fp32, Layout::nchw, false);
  ASSERT_EQ(off.result.status, bench::Status::passed) << off.result.reason;
  EXPECT_FALSE(off.benchmark);
  EXPECT_NE(off.result.algorithm.find("cudnn.benchmark=off"), std::string::npos);
}

}  // namespace
}  // namespace conv
