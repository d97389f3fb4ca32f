// Variant 9 of im2col_gemm_cuda (conv/cuda/caffe_gemm.cpp): variant 5's im2col, then cuBLASLt's
// GEMM, against the float64 reference on the kernel problems (tests/conv/random_problems.hpp) in
// fp32, tf32, fp16 and bf16, both layouts, with the strided batch and with the batch looped on the
// host (the fallback where cuBLASLt has no algorithm for the strided batch). The output and the
// column buffer are poisoned (NaN) before every run, so an output element the GEMM leaves
// unwritten, or a column element it reads that im2col did not write, fails. Then the instance
// through the case runner: the split (metrics.im2col_ms, metrics.gemm_ms), the algorithm text,
// strict FP32. Skips, with the reason, where no GPU is usable.
#include "conv/cuda/caffe_gemm.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "conv/bench.hpp"
#include "conv/cuda/im2col_gemm_cuda.hpp"
#include "conv/cuda/im2col_gemm_kernels.hpp"
#include "core/compare.hpp"
#include "core/cuda/cublaslt_raii.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/dtype.hpp"
#include "tests/common/case_helpers.hpp"
#include "tests/conv/device_case.hpp"
#include "tests/conv/random_problems.hpp"

namespace conv {
namespace {

using testing::gpu_unavailable_reason;
using testing::kernel_problems;

MmaType im2col_type_of(DataType dt) {
  return dt == DataType::fp16   ? MmaType::fp16
         : dt == DataType::bf16 ? MmaType::bf16
                                : MmaType::tf32;  // fp32 and tf32: FP32 values copied
}

// Poisons the output and the columns, runs im2col and the GEMM, checks against the reference.
// Returns the failure text, or "".
std::string check(testing::DeviceBuffers& c, const HostData& data, const CaffeGemm& gemm,
                  bench::DeviceBuffer<unsigned char>& col,
                  bench::DeviceBuffer<unsigned char>& workspace) {
  col.fill_bytes_async(0xFF, c.stream.get());  // the GEMM must read only what im2col wrote
  return c.check(data, [&](cudaStream_t s) {
    launch_mma_im2col(c.g, im2col_type_of(c.p.dtype), c.src.data(), col.data(), s);
    gemm.run(c.wei.data(), col.data(), c.dst.data(), workspace.data(), s);
  });
}

TEST(CaffeGemmCuda, EveryDtypeLayoutAndBatchFormMatchesTheReference) {
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  const bench::LtHandle handle = bench::make_lt_handle();
  int cases = 0;
  for (Problem p : kernel_problems())
    for (DataType dt : bench::all_data_types())
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        p.layout = layout;
        p.dtype = dt;
        const HostData data = make_host_data(p, 3);
        testing::DeviceBuffers c(p, data);
        bench::DeviceBuffer<unsigned char> col(mma_column_buffer_elements(c.g, im2col_type_of(dt)) *
                                               std::size_t(c.bytes));
        for (bool strided_batch : {true, false}) {
          CaffeGemm gemm(handle.get(), c.g, dt);
          gemm.choose(strided_batch);
          bench::DeviceBuffer<unsigned char> workspace(gemm.workspace_bytes());
          const std::string what = p.str() + " " + gemm.describe();
          EXPECT_EQ(check(c, data, gemm, col, workspace), "") << what;
          const CaffeGemmPlan& plan = gemm.plan();
          if (strided_batch && gemm.json().value("gemm_unbatched_why", "").empty()) {
            EXPECT_EQ(gemm.matmul_calls(), plan.calls) << what;
          } else {
            EXPECT_EQ(gemm.matmul_calls(), plan.calls * plan.batch) << what;
          }
          if (dt == DataType::fp32) {
            EXPECT_NE(what.find("CUBLAS_COMPUTE_32F,"), std::string::npos) << what;
          }
          if (dt == DataType::tf32) {
            EXPECT_NE(what.find("CUBLAS_COMPUTE_32F_FAST_TF32"), std::string::npos) << what;
          }
          ++cases;
        }
      }
  EXPECT_GT(cases, 0);
}

// Where cuBLASLt took the strided batch (the form run() uses unless it had no algorithm for it):
// printed, so that the H200's log says which forms the library takes.
TEST(CaffeGemmCuda, StridedBatchFormsTheLibraryTakes) {
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  const bench::LtHandle handle = bench::make_lt_handle();
  for (const char* text : {"g4mb8ic8ih9oc8kh3", "g8mb2ic8ih10oc8kh3ph1", "mb8ic16ih9oc24kh3",
                           "g2mb2ic32ih9oc48kh3ph1"})
    for (Layout layout : {Layout::nchw, Layout::nhwc})
      for (DataType dt : bench::all_data_types()) {
        Problem p = parse_problem(text);
        p.layout = layout;
        p.dtype = dt;
        CaffeGemm gemm(handle.get(), make_im2col_geometry(p), dt);
        gemm.choose();
        const std::string why = gemm.json().value("gemm_unbatched_why", "");
        std::cout << "  " << p.str() << " " << bench::to_string(dt) << ": "
                  << caffe_batching_text(gemm.plan())
                  << (why.empty() ? ", strided batch taken" : ", batch looped: " + why) << "\n";
      }
}

// The instance through the case runner: passed, with the split and the workspace recorded.
TEST(CaffeGemmCuda, InstanceRecordsTheSplitAndTheAlgorithm) {
  if (const std::string why = gpu_unavailable_reason(); !why.empty()) {
    GTEST_SKIP() << why;
  }
  BackendOptions o;
  o.variant = "9";
  const auto backend = make_im2col_gemm_cuda_backend(o);
  CaseOptions options = bench::testing::quick_case_options();
  for (const char* text : {"mb4ic64ih14oc128kh3ph1", "g2mb2ic16ih9oc96kh3ph1sh2"})
    for (DataType dt : bench::all_data_types())
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        Problem p = parse_problem(text);
        p.dtype = dt;
        p.layout = layout;
        const HostData data = make_host_data(p, 5);
        const bench::Result r =
            run_case(backend.get(), "im2col_gemm_cuda", "cuda", "", p, data, options).result;
        SCOPED_TRACE(p.str() + ": " + bench::to_string(r.status) + " " + r.reason + " | " +
                     r.algorithm);
        ASSERT_EQ(r.status, bench::Status::passed);
        EXPECT_GT(r.metrics.value("im2col_ms", 0.0), 0.0);
        EXPECT_GT(r.metrics.value("gemm_ms", 0.0), 0.0);
        EXPECT_TRUE(r.extra.contains("phase_split"));
        EXPECT_EQ(r.extra.value("variant", 0), 9);
        EXPECT_NE(r.algorithm.find("cublasLtMatmul"), std::string::npos);
        EXPECT_NE(r.algorithm.find("col[group][m][Kp]"), std::string::npos);
        EXPECT_NE(r.algorithm.find(layout == Layout::nhwc ? "in nhwc" : "in nchw"),
                  std::string::npos);
        EXPECT_EQ(r.extra.value("compute_type", ""),
                  dt == DataType::tf32 ? "CUBLAS_COMPUTE_32F_FAST_TF32" : "CUBLAS_COMPUTE_32F");
        ASSERT_TRUE(r.workspace_bytes.has_value());
        EXPECT_GE(*r.workspace_bytes, r.extra.value("column_buffer_bytes", std::int64_t(0)));
        EXPECT_GT(r.extra.value("column_buffer_bytes", std::int64_t(0)), 0);
      }
}

}  // namespace
}  // namespace conv
