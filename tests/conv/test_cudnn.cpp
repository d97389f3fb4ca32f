// Tests of baselines/conv/cudnn.cpp and cudnn_graph.cpp: both of cuDNN's APIs (--cudnn-api legacy |
// graph), run through the case runner as myconv runs them. The option tests run everywhere; every
// test that runs on the GPU skips, with the reason, where no CUDA device is present.
//
// On a GPU host this binary is the quick check of the backend (a minute or two):
//   build/tests/test_cudnn
// It prints, per case that does not pass, the problem, API, engine and reason.
#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "baselines/conv/backends.hpp"
#include "conv/bench.hpp"
#include "conv/data.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_services.hpp"
#include "core/error.hpp"
#include "experiments/registry/conv.hpp"
#include "tests/common/gpu_skip.hpp"
#include "tests/conv/random_problems.hpp"

namespace conv {
namespace {

BackendOptions options(const std::string& api, const std::string& algo = "heuristic") {
  BackendOptions o;
  o.cudnn_api = api;
  o.cudnn_algo = algo;
  return o;
}

CaseOptions tiny_options() {
  CaseOptions o;
  o.measure.warmup_iters = 1;
  o.measure.min_iters = 2;
  o.measure.max_iters = 3;
  o.measure.min_time_ms = 0;
  o.measure.max_time_ms = 5;
  return o;
}

bench::Result run_cudnn(const Problem& p, const BackendOptions& backend_options,
                        const CaseOptions& case_options = tiny_options()) {
  const std::unique_ptr<Backend> backend = make_cudnn_backend(backend_options);
  const HostData data = make_host_data(p, 5);
  return run_case(backend.get(), backend->name(), backend->device(), "", p, data, case_options)
      .result;
}

std::string describe(const bench::Result& r) {
  return r.problem + " " + r.extra.value("cudnn_api", std::string("?")) + " [" + r.algorithm +
         "]: " + bench::to_string(r.status) + " " + r.reason;
}

// Fixed problems for the paths that matter (groups, depthwise, stride, padding, dilation,
// channels of 1 and odd counts, 1x1, batch 32), then randomized ones (batch 1, 2, 3, 32).
std::vector<Problem> problems() {
  std::vector<Problem> fixed;
  for (const char* d :
       {"mb2ic4ih64oc8kh5", "mb32ic3ih12iw9oc5kh3kw3sh2sw2ph1pw1", "g4mb1ic8ih13oc8kh3ph1dh1",
        "g8mb2ic8ih10oc8kh3ph1", "mb2ic64ih20oc128kh3ph1", "mb3ic5ih31oc7kh1",
        "g2mb3ic6ih13iw11oc4kh3kw2sh2ph2pw1dh1dw2", "mb1ic1ih9oc1kh3"})
    fixed.push_back(parse_problem(d));
  return testing::randomized_problems(std::move(fixed), 16, 2026, {6, 6});
}

// ---- Without a GPU ----------------------------------------------------------------------------

TEST(CudnnOptions, GraphIsTheDefaultApi) {
  EXPECT_EQ(BackendOptions().cudnn_api, "graph");
  EXPECT_EQ(BackendOptions().cudnn_algo, "heuristic");
}

TEST(CudnnOptions, UnknownApiIsAUsageError) {
  for (const char* api : {"v7", "Graph", "", "frontend"}) {
    EXPECT_THROW(make_cudnn_backend(options(api)), bench::UsageError) << api;
  }
  BackendOptions o;
  o.cudnn_api = "v8";
  EXPECT_THROW(make_registry(o), bench::UsageError);
}

TEST(CudnnOptions, AlgorithmNumbersDependOnTheApi) {
  for (const char* api : {"legacy", "graph"})
    for (const char* algo : {"heuristic", "search", "0", "7"}) {
      EXPECT_NO_THROW(make_cudnn_backend(options(api, algo))) << api << " " << algo;
    }
  // legacy numbers are cudnnConvolutionFwdAlgo_t values; graph numbers index engine configs.
  EXPECT_THROW(make_cudnn_backend(options("legacy", "8")), bench::UsageError);
  EXPECT_NO_THROW(make_cudnn_backend(options("graph", "8")));
  EXPECT_NO_THROW(make_cudnn_backend(options("graph", "42")));
  for (const char* api : {"legacy", "graph"})
    for (const char* algo : {"fastest", "-1", "1x", "1000", "search2"}) {
      EXPECT_THROW(make_cudnn_backend(options(api, algo)), bench::UsageError) << api << " " << algo;
    }
}

TEST(CudnnOptions, IdentifiesItself) {
  for (const char* api : {"legacy", "graph"}) {
    const std::unique_ptr<Backend> backend = make_cudnn_backend(options(api));
    EXPECT_EQ(backend->name(), "cudnn");
    EXPECT_EQ(backend->device(), "cuda");
    EXPECT_EQ(backend->library_version().rfind("cuDNN ", 0), 0u) << backend->library_version();
    const Support a = backend->available();
    EXPECT_EQ(a.ok, testing::gpu_unavailable_reason().empty()) << a.reason;
  }
}

// ---- On the GPU ---------------------------------------------------------------------------------

// Both APIs, every problem, dtype and layout against the float64 reference.
TEST(CudnnGpu, BothApisMatchTheReference) {
  MYCONV_SKIP_WITHOUT_GPU();
  int not_passed = 0;
  for (const char* api : {"legacy", "graph"})
    for (Problem p : problems())
      for (DataType dt : bench::all_data_types())
        for (Layout layout : {Layout::nchw, Layout::nhwc}) {
          p.dtype = dt;
          p.layout = layout;
          const bench::Result r = run_cudnn(p, options(api));
          EXPECT_EQ(r.status, bench::Status::passed) << describe(r);
          if (r.status != bench::Status::passed) {
            ++not_passed;
            continue;
          }
          EXPECT_EQ(r.extra.value("cudnn_api", std::string()), api) << describe(r);
          EXPECT_FALSE(r.algorithm.empty());
          EXPECT_TRUE(r.gpu_time_ms.has_value()) << describe(r);
          EXPECT_TRUE(r.workspace_bytes.has_value()) << describe(r);
        }
  std::cout << "[ INFO     ] " << not_passed << " case(s) did not pass\n";
}

// The graph API never runs strict FP32 on a tensor-core (TF32) engine, as PyTorch with
// allow_tf32 off; it says which engine it took and how many the heuristics offered.
TEST(CudnnGpu, GraphFp32NeverUsesTensorCores) {
  MYCONV_SKIP_WITHOUT_GPU();
  for (const char* algo : {"heuristic", "search", "0"})
    for (Problem p : problems())
      for (Layout layout : {Layout::nchw, Layout::nhwc}) {
        p.dtype = DataType::fp32;
        p.layout = layout;
        const bench::Result r = run_cudnn(p, options("graph", algo));
        ASSERT_EQ(r.status, bench::Status::passed) << describe(r);
        EXPECT_EQ(r.extra.at("cudnn_tensor_cores"), false) << describe(r);
        for (const auto& note : r.extra.at("cudnn_numerical_notes")) {
          EXPECT_NE(note, "TENSOR_CORE") << describe(r);
        }
        EXPECT_NE(r.algorithm.find("tensor cores off"), std::string::npos) << r.algorithm;
        EXPECT_GE(r.extra.at("cudnn_heuristic_configs").get<int>(),
                  r.extra.at("cudnn_configs_allowed").get<int>());
        EXPECT_GE(r.extra.at("cudnn_configs_allowed").get<int>(), 1);
      }
}

// --cudnn-algo search times several plans and keeps the fastest; a fixed number picks that
// allowed config, or says why not.
TEST(CudnnGpu, GraphSearchAndFixedConfigs) {
  MYCONV_SKIP_WITHOUT_GPU();
  for (const char* d : {"mb2ic4ih64oc8kh5", "mb8ic32ih28oc64kh3ph1", "g4mb2ic16ih14oc16kh3ph1"})
    for (DataType dt : bench::all_data_types()) {
      Problem p = parse_problem(d);
      p.dtype = dt;
      SCOPED_TRACE(p.str());
      const bench::Result searched = run_cudnn(p, options("graph", "search"));
      ASSERT_EQ(searched.status, bench::Status::passed) << describe(searched);
      const auto& timed = searched.extra.at("cudnn_search_timed");
      ASSERT_GE(timed.size(), 1u);
      EXPECT_LE(timed.size(), 8u);
      double fastest = 1e30;
      for (const auto& t : timed) fastest = std::min(fastest, t.at("time_ms").get<double>());
      EXPECT_DOUBLE_EQ(searched.extra.at("cudnn_search_time_ms").get<double>(), fastest);
      EXPECT_NE(searched.algorithm.find("fastest of"), std::string::npos) << searched.algorithm;

      const bench::Result first = run_cudnn(p, options("graph", "0"));
      ASSERT_EQ(first.status, bench::Status::passed) << describe(first);
      const bench::Result heuristic = run_cudnn(p, options("graph"));
      ASSERT_EQ(heuristic.status, bench::Status::passed) << describe(heuristic);
      if (heuristic.extra.at("cudnn_heuristic_mode") == "A") {
        // The heuristic choice is the first allowed config unless that one cannot be built.
        EXPECT_LE(first.extra.at("cudnn_heuristic_index").get<int>(),
                  heuristic.extra.at("cudnn_heuristic_index").get<int>());
      }
      const bench::Result second = run_cudnn(p, options("graph", "1"));
      EXPECT_TRUE(second.status == bench::Status::passed ||
                  second.status == bench::Status::unsupported)
          << describe(second);

      const bench::Result beyond = run_cudnn(p, options("graph", "999"));
      EXPECT_EQ(beyond.status, bench::Status::unsupported) << describe(beyond);
      EXPECT_NE(beyond.reason.find("999"), std::string::npos) << beyond.reason;
    }
}

// The graph API's run() is one cudnnBackendExecute on the backend's stream: it captures into a
// CUDA graph and replays correctly (--timing pure).
TEST(CudnnGpu, BothApisReplayInACudaGraph) {
  MYCONV_SKIP_WITHOUT_GPU();
  const std::unique_ptr<bench::DeviceServices> services = bench::make_cuda_services();
  CaseOptions o = tiny_options();
  o.timing = TimingMode::pure;
  o.device_services = services.get();
  o.pure_runs = 4;
  for (const char* api : {"legacy", "graph"})
    for (const char* d : {"mb2ic4ih64oc8kh5", "g4mb2ic16ih14oc16kh3ph1dtbf16nhwc"}) {
      const bench::Result r = run_cudnn(parse_problem(d), options(api), o);
      EXPECT_EQ(r.status, bench::Status::passed) << describe(r);
      EXPECT_EQ(r.timing_mode, "pure:graph") << describe(r) << " " << r.extra.dump();
    }
}

// Host time per call in real timing mode, legacy against graph, for the record (no assertion:
// timings depend on the host).
TEST(CudnnGpu, HostTimePerCall) {
  MYCONV_SKIP_WITHOUT_GPU();
  CaseOptions o;
  o.measure.min_iters = 50;
  o.measure.max_iters = 200;
  o.measure.min_time_ms = 0;
  o.measure.max_time_ms = 200;
  for (const char* d : {"mb1ic16ih14oc16kh3ph1", "mb32ic64ih56oc64kh3ph1"})
    for (const char* api : {"legacy", "graph"}) {
      const bench::Result r = run_cudnn(parse_problem(d), options(api), o);
      ASSERT_EQ(r.status, bench::Status::passed) << describe(r);
      std::cout << "[ INFO     ] " << d << " " << api << ": host " << r.cpu_time_ms->median * 1e3
                << " us, GPU " << r.gpu_time_ms->median * 1e3 << " us per call [" << r.algorithm
                << "]\n";
    }
}

}  // namespace
}  // namespace conv
