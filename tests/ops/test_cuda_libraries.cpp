// Tests of the op suite's CUDA-toolkit library backends, baselines/ops/cub_cuda.cu and
// baselines/ops/cublaslt.cpp, and of the measured matmul ceiling (matmul_ceiling.hpp): their
// support answers everywhere; on a GPU, cases of every category and dtype through the case
// runner, real and pure (a captured CUDA graph). The GPU tests skip without a GPU.
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "baselines/ops/backends.hpp"
#include "baselines/ops/matmul_ceiling.hpp"
#include "core/cuda/cuda_services.hpp"
#include "ops/bench.hpp"
#include "ops/data.hpp"
#include "tests/common/gpu_skip.hpp"

namespace ops {
namespace {

std::string describe(const bench::Result& r) {
  return r.backend + " " + r.problem + " (" + r.timing_mode + "): " + bench::to_string(r.status) +
         " " + r.reason;
}

// One case, real timing, or pure timing replayed as a CUDA graph.
bench::Result run_one(const Backend& backend, const std::string& descriptor, bool pure) {
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
  return run_case(&backend, backend.name(), backend.device(), "", p, make_host_data(p, 4), o)
      .result;
}

// Each problem in fp32, fp16 and bf16 (and tf32 for matmul), real and pure: passed, the pure
// runs as a replayed graph.
void expect_all_pass(const Backend& backend, const std::vector<std::string>& problems) {
  for (const std::string& d : problems) {
    std::vector<std::string> dtypes = {"fp32", "fp16", "bf16"};
    if (d.rfind("matmul", 0) == 0) dtypes.push_back("tf32");
    for (const std::string& dt : dtypes) {
      const bench::Result real = run_one(backend, d + ":" + dt, false);
      EXPECT_EQ(real.status, bench::Status::passed) << describe(real);
      EXPECT_FALSE(real.algorithm.empty()) << describe(real);
      EXPECT_TRUE(real.workspace_bytes.has_value()) << describe(real);
      const bench::Result pure = run_one(backend, d + ":" + dt, true);
      EXPECT_EQ(pure.status, bench::Status::passed) << describe(pure);
      EXPECT_EQ(pure.timing_mode, "pure:graph") << describe(pure) << " " << pure.extra.dump();
    }
  }
}

TEST(CubCuda, IdentifiesItself) {
  const std::unique_ptr<Backend> b = make_cub_cuda_backend(BackendOptions());
  EXPECT_EQ(b->name(), "cub_cuda");
  EXPECT_EQ(b->device(), "cuda");
  EXPECT_EQ(b->library_version().rfind("CUB ", 0), 0u) << b->library_version();
}

TEST(CubCuda, SupportFollowsCubsPrimitives) {
  const std::unique_ptr<Backend> b = make_cub_cuda_backend(BackendOptions());
  for (const char* yes :
       {"add:64x64", "add:64x64+1x64", "gelu_tanh:100", "sum:4x5x6", "sum:4x5x6:axis=2",
        "mean:4x5x6:axis=1,2", "max:7:axis=0", "copy:9x9", "concat:4x5:inputs=3:axis=1"})
    EXPECT_TRUE(b->check_support(parse_problem(yes)).ok) << yes;
  for (const char* no : {"sum:4x5x6:axis=0", "max:4x5x6:axis=1", "mean:4x5x6:axis=0,2",
                         "softmax:8x8", "layernorm:8x8", "rmsnorm:8x8", "matmul:m8n8k8",
                         "transpose:8x8", "permute:2x3x4:perm=2,0,1"}) {
    const Support s = b->check_support(parse_problem(no));
    EXPECT_FALSE(s.ok) << no;
    EXPECT_NE(s.reason.find("CUB"), std::string::npos) << s.reason;
  }
}

TEST(CubCuda, EveryCategoryPasses) {
  MYCONV_SKIP_WITHOUT_GPU();
  const std::unique_ptr<Backend> b = make_cub_cuda_backend(BackendOptions());
  expect_all_pass(*b, {"add:256x300",
                       "sub:3x5x7",
                       "mul:1000",
                       "div:64x96",
                       "add:256x300+1x300",
                       "mul:256x300+256x1",
                       "sub:256x300+1x1",
                       "div:4x6x8+4x1x8",
                       "add:100003+1",
                       "relu:4096",
                       "sigmoid:64x65",
                       "tanh:64x65",
                       "gelu_erf:64x65",
                       "gelu_tanh:64x65",
                       "silu:3x7x11",
                       "sum:100003",
                       "mean:64x96",
                       "max:3x5x7",
                       "sum:64x96:axis=1",
                       "mean:4x6x8:axis=1,2",
                       "max:3x1000:axis=1",
                       "mean:7x3:axis=1",
                       "copy:64x96",
                       "concat:8x16:inputs=2:axis=0",
                       "concat:8x16:inputs=3:axis=1",
                       "concat:2x3x5:inputs=4:axis=2"});
}

TEST(CubCuda, AlgorithmNamesTheCubCall) {
  MYCONV_SKIP_WITHOUT_GPU();
  const std::unique_ptr<Backend> b = make_cub_cuda_backend(BackendOptions());
  const std::pair<const char*, const char*> cases[] = {
      {"sum:64x96", "cub::DeviceReduce::Reduce"},
      {"max:64x96:axis=1", "cub::DeviceSegmentedReduce::Reduce"},
      {"add:64x96+1x96", "broadcast gather"},
      {"copy:64x96", "cub::DeviceTransform::Transform"},
      {"concat:8x16:inputs=2:axis=1", "cub::DeviceMemcpy::Batched (16 buffers of 64 bytes)"}};
  for (const auto& [problem, call] : cases) {
    const bench::Result r = run_one(*b, problem, false);
    ASSERT_EQ(r.status, bench::Status::passed) << describe(r);
    EXPECT_NE(r.algorithm.find(call), std::string::npos) << r.algorithm;
  }
}

TEST(Cublaslt, IdentifiesItselfAndTakesOnlyMatmul) {
  const std::unique_ptr<Backend> b = make_cublaslt_backend(BackendOptions());
  EXPECT_EQ(b->name(), "cublaslt");
  EXPECT_EQ(b->device(), "cuda");
  EXPECT_EQ(b->library_version().rfind("cuBLASLt ", 0), 0u) << b->library_version();
  EXPECT_TRUE(b->check_support(parse_problem("matmul:b2m8n8k8:tf32")).ok);
  const Support s = b->check_support(parse_problem("softmax:8x8"));
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("matmul library"), std::string::npos) << s.reason;
}

TEST(Cublaslt, MatmulPassesInEveryDtype) {
  MYCONV_SKIP_WITHOUT_GPU();
  const std::unique_ptr<Backend> b = make_cublaslt_backend(BackendOptions());
  // Odd sizes catch swapped operands or leading dimensions; the batch its strides.
  expect_all_pass(
      *b, {"matmul:m64n48k32", "matmul:m7n5k3", "matmul:b3m16n24k40", "matmul:m256n264k520"});
}

TEST(Cublaslt, RecordsTheHeuristicsChoice) {
  MYCONV_SKIP_WITHOUT_GPU();
  const std::unique_ptr<Backend> b = make_cublaslt_backend(BackendOptions());
  const bench::Result r = run_one(*b, "matmul:m128n128k128:tf32", false);
  ASSERT_EQ(r.status, bench::Status::passed) << describe(r);
  EXPECT_NE(r.algorithm.find("CUBLAS_COMPUTE_32F_FAST_TF32"), std::string::npos) << r.algorithm;
  EXPECT_EQ(r.extra.value("compute_type", ""), "CUBLAS_COMPUTE_32F_FAST_TF32");
  ASSERT_TRUE(r.extra.contains("cublaslt_algo"));
  EXPECT_EQ(r.extra["cublaslt_algo"].value("heuristic_rank", 0), 1);
  EXPECT_EQ(r.extra.value("workspace_limit_bytes", 0), 32 << 20);
  ASSERT_TRUE(r.compile_time_ms.has_value());
}

TEST(MatmulCeiling, MeasuresOnAGpuOrSaysWhyNot) {
  const nlohmann::ordered_json c =
      measure_matmul_ceiling({bench::DataType::fp32, bench::DataType::bf16});
  ASSERT_TRUE(c.contains("method"));
  if (!::conv::testing::gpu_unavailable_reason().empty()) {
    ASSERT_TRUE(c.contains("why")) << c.dump();
    EXPECT_FALSE(c.contains("tflops"));
    return;
  }
  ASSERT_TRUE(c.contains("tflops")) << c.dump();
  EXPECT_FALSE(c.contains("failed")) << c.dump();
  const double fp32 = c["tflops"].value("fp32", 0.0), bf16 = c["tflops"].value("bf16", 0.0);
  EXPECT_GT(fp32, 1.0) << c.dump();
  EXPECT_GT(bf16, 2 * fp32) << c.dump();  // tensor cores: a multiple of FP32's rate
  std::cout << "matmul ceiling: " << c.dump() << "\n";
}

}  // namespace
}  // namespace ops
