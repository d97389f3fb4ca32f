// Reading traces: kernel names made short, per-kernel and per-call figures from synthetic activity
// records, the debug block, and the Chrome trace JSON that Perfetto loads.
#include "core/trace_report.hpp"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "tests/common/temp_dir.hpp"

namespace bench {
namespace {

TEST(KernelNames, DemangleLeavesPlainNamesAlone) {
  EXPECT_EQ(demangle("_Z3fooPf"), "foo(float*)");
  EXPECT_EQ(demangle("sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw"),
            "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nchw");
  EXPECT_EQ(demangle("_Znot a name"), "_Znot a name");
}

TEST(KernelNames, ShortNamesDropReturnTypeParametersAndInnerTemplates) {
  // PyTorch's fill kernel, as the driver reports it (mangled).
  EXPECT_EQ(short_kernel_name("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
                              "11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"),
            "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<...>, "
            "std::array<...>>");
  EXPECT_EQ(short_kernel_name("_ZN2at6native12_GLOBAL__N_113im2col_kernelIfEEvPKT_PS3_l"),
            "at::native::im2col_kernel<float>");
  EXPECT_EQ(short_kernel_name("void conv::implicit_gemm<32, 128, 8>(float const*, float*)"),
            "conv::implicit_gemm<32, 128, 8>");
  EXPECT_EQ(short_kernel_name("void f<int>(void (*)(int), int)"), "f<int>");
  EXPECT_EQ(short_kernel_name("cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_nn_align4>"),
            "cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_nn_align4>");
  EXPECT_EQ(short_kernel_name("plain_c_kernel"), "plain_c_kernel");
}

TEST(KernelNames, LongNamesAreCut) {
  const std::string longest(200, 'k');
  const std::string s = short_kernel_name(longest, 20);
  EXPECT_EQ(s.size(), 20u);
  EXPECT_EQ(s.substr(17), "...");
}

// A synthetic trace of two traced calls: call 1 launches kernels A and B and one copy, call 2
// launches A; one zero-length API record and host ranges around them.
Trace synthetic_trace() {
  Trace t;
  t.origin_ns = 1'000'000;
  t.host_thread = 7;
  t.device_activity_source = "fake CUPTI";
  auto host = [&](const std::string& name, std::int64_t s, std::int64_t e, int depth) {
    TraceEvent x;
    x.name = name;
    x.start_ns = s;
    x.end_ns = e;
    x.depth = depth;
    x.thread = 7;
    t.events.push_back(x);
  };
  auto api = [&](const std::string& name, std::int64_t s, std::int64_t e, std::uint32_t corr) {
    TraceEvent x;
    x.kind = EventKind::cuda_api;
    x.name = name;
    x.start_ns = s;
    x.end_ns = e;
    x.thread = 7;
    x.correlation = corr;
    t.events.push_back(x);
  };
  auto device = [&](EventKind kind, const std::string& name, std::int64_t s, std::int64_t e,
                    std::uint32_t corr, std::uint64_t bytes = 0) {
    TraceEvent x;
    x.kind = kind;
    x.name = name;
    x.start_ns = s;
    x.end_ns = e;
    x.device = 0;
    x.stream = 13;
    x.correlation = corr;
    x.bytes = bytes;
    t.events.push_back(x);
  };
  host("compile", 1'000'000, 1'500'000, 1);
  host("traced calls", 2'000'000, 2'100'000, 0);
  host("call 1", 2'000'000, 2'050'000, 1);
  host("run", 2'000'000, 2'010'000, 2);
  host("sync", 2'010'000, 2'050'000, 2);
  host("call 2", 2'050'000, 2'100'000, 1);
  host("run", 2'050'000, 2'060'000, 2);
  host("sync", 2'060'000, 2'100'000, 2);
  t.calls = {{2'000'000, 2'050'000}, {2'050'000, 2'100'000}};
  api("cudaLaunchKernel", 2'001'000, 2'003'000, 1);
  api("cudaLaunchKernel", 2'004'000, 2'005'000, 2);
  api("cudaMemcpyAsync", 2'006'000, 2'007'000, 3);
  api("cudaStreamSynchronize", 2'010'000, 2'010'000, 0);  // no duration
  api("cudaLaunchKernel", 2'051'000, 2'052'000, 4);
  device(EventKind::kernel, "void kA<float>(float*)", 2'005'000, 2'035'000, 1);  // 30 us
  device(EventKind::kernel, "kB", 2'035'000, 2'045'000, 2);                      // 10 us
  device(EventKind::memcpy, "Memcpy DtoD", 2'045'000, 2'047'000, 3, 4096);       // 2 us
  device(EventKind::kernel, "void kA<float>(float*)", 2'055'000, 2'085'000, 4);  // 30 us
  return t;
}

TEST(TraceSummary, AggregatesKernelsCopiesAndCalls) {
  const TraceSummary s = summarize_trace(synthetic_trace());
  EXPECT_EQ(s.total_events, 17u);
  EXPECT_EQ(s.device_events_with_time, 4u);
  EXPECT_EQ(s.host_events_with_time, 12u);  // 8 ranges + 4 API calls with a duration
  EXPECT_DOUBLE_EQ(s.device_time_us, 72);
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_EQ(s.kernels[0].short_name, "kA<float>");
  EXPECT_EQ(s.kernels[0].calls, 2);
  EXPECT_DOUBLE_EQ(s.kernels[0].total_us, 60);
  EXPECT_DOUBLE_EQ(s.kernels[0].mean_us, 30);
  EXPECT_DOUBLE_EQ(s.kernels[0].share, 60.0 / 72);
  EXPECT_EQ(s.kernels[1].name, "kB");
  ASSERT_EQ(s.transfers.size(), 1u);
  EXPECT_EQ(s.transfers[0].name, "Memcpy DtoD");
  EXPECT_EQ(s.transfers[0].bytes, 4096u);
  EXPECT_EQ(s.calls, 2);
  EXPECT_DOUBLE_EQ(s.kernels_per_call, 1.5);
  EXPECT_DOUBLE_EQ(s.kernel_time_per_call_us, 35);
  ASSERT_TRUE(s.call_to_first_kernel_us);
  EXPECT_DOUBLE_EQ(*s.call_to_first_kernel_us, 5);  // 5 us in both calls
  ASSERT_TRUE(s.launch_to_kernel_us);
  EXPECT_DOUBLE_EQ(*s.launch_to_kernel_us, 4);  // 4, 31, 4 us: median 4
  EXPECT_DOUBLE_EQ(s.run_median_us, 10);
  EXPECT_DOUBLE_EQ(s.sync_median_us, 40);
  EXPECT_EQ(s.device_events_outside_calls, 0u);
  ASSERT_EQ(s.phases_ms.size(), 4u);  // compile, traced calls, call 1, call 2
  EXPECT_EQ(s.phases_ms[0].first, "compile");
  EXPECT_DOUBLE_EQ(s.phases_ms[0].second, 0.5);
}

TEST(TraceSummary, WorkBelongsToTheCallOfItsLaunch) {
  Trace t = synthetic_trace();
  // Call 2's kernel, as if the GPU clock were mapped 60 us late: its launch still places it.
  for (auto& e : t.events)
    if (e.kind == EventKind::kernel && e.correlation == 4) e.start_ns += 60'000, e.end_ns += 60'000;
  // Work of a set-up call before the traced calls, with its launch: not counted.
  TraceEvent setup_launch;
  setup_launch.kind = EventKind::cuda_api;
  setup_launch.name = "cudaLaunchKernel";
  setup_launch.start_ns = 1'900'000;
  setup_launch.end_ns = 1'901'000;
  setup_launch.correlation = 9;
  t.events.push_back(setup_launch);
  TraceEvent setup_kernel;
  setup_kernel.kind = EventKind::kernel;
  setup_kernel.name = "kB";
  setup_kernel.start_ns = 1'905'000;
  setup_kernel.end_ns = 1'915'000;
  setup_kernel.correlation = 9;
  t.events.push_back(setup_kernel);
  const TraceSummary s = summarize_trace(t);
  EXPECT_EQ(s.device_events_outside_calls, 1u);
  EXPECT_EQ(s.device_events_with_time, 5u);
  EXPECT_DOUBLE_EQ(s.kernels_per_call, 1.5);
  EXPECT_DOUBLE_EQ(s.kernel_time_per_call_us, 35);
  EXPECT_DOUBLE_EQ(s.device_time_us, 72);
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_EQ(s.kernels[1].calls, 1);  // kB of call 1 only
}

TEST(TraceSummary, EmptyTraceHasNoFigures) {
  const TraceSummary s = summarize_trace(Trace{});
  EXPECT_EQ(s.total_events, 0u);
  EXPECT_TRUE(s.kernels.empty());
  EXPECT_FALSE(s.call_to_first_kernel_us);
  EXPECT_FALSE(s.launch_to_kernel_us);
  EXPECT_EQ(s.kernels_per_call, 0);
}

Result sample_result() {
  Result r;
  r.suite = "conv";
  r.backend = "cudnn";
  r.device = "cuda";
  r.problem = "mb2ic4ih64oc8kh5";
  r.algorithm = "IMPLICIT_PRECOMP_GEMM";
  r.status = Status::passed;
  r.compile_time_ms = 0.5;
  r.first_run_ms = 1.25;
  Summary gpu;
  gpu.median = 0.040;
  r.gpu_time_ms = gpu;
  return r;
}

TEST(DebugBlock, GpuCaseListsKernelsCopiesAndLatencies) {
  std::ostringstream os;
  print_debug_block(os, synthetic_trace(), sample_result(), "T/cudnn.json");
  const std::string text = os.str();
  for (const char* expected :
       {"    [DEBUG] Total events: 17\n", "[DEBUG] CUDA events with time > 0: 4\n",
        "[DEBUG] CPU events with time > 0: 12\n", "algorithm: IMPLICIT_PRECOMP_GEMM",
        "compile time 0.5 ms", "GPU activity: fake CUPTI", "kA<float>", "83.3%",
        "memcpy/memset: Memcpy DtoD: 1 x, 4.00 KiB", "kernels per conv call: 1.50",
        "35.00 us per call", "measured GPU time median 40.00 us",
        "call -> first kernel start: 5.00 us", "launch API -> kernel start: 4.00 us",
        "host phases: compile 0.5 ms", "trace file: T/cudnn.json"})
    EXPECT_NE(text.find(expected), std::string::npos) << expected << "\n" << text;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    EXPECT_EQ(line.rfind("    [DEBUG] ", 0), 0u) << line;
}

TEST(DebugBlock, HostCaseSaysWhyThereIsNoGpuActivity) {
  Trace t;
  t.device_activity_note = "not recorded: the case runs on the host";
  TraceEvent e;
  e.name = "compile";
  e.start_ns = 0;
  e.end_ns = 2'000'000;
  t.events.push_back(e);
  Result r = sample_result();
  r.device = "cpu";
  r.gpu_time_ms.reset();
  std::ostringstream os;
  print_debug_block(os, t, r);
  const std::string text = os.str();
  EXPECT_NE(text.find("CUDA events with time > 0: 0"), std::string::npos) << text;
  EXPECT_NE(text.find("CPU events with time > 0: 1"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU activity: not recorded: the case runs on the host"), std::string::npos);
  EXPECT_EQ(text.find("top GPU kernels"), std::string::npos);
  EXPECT_NE(text.find("host phases: compile 2 ms"), std::string::npos) << text;
}

TEST(ChromeTrace, HasEventsFlowsAndMetadata) {
  const Trace t = synthetic_trace();
  const nlohmann::ordered_json j = chrome_trace_json(t, sample_result());
  ASSERT_TRUE(j.contains("traceEvents"));
  ASSERT_TRUE(j["traceEvents"].is_array());
  std::size_t complete = 0, kernels = 0;
  std::set<std::uint64_t> starts, finishes;
  std::set<std::string> metadata;
  for (const auto& e : j["traceEvents"]) {
    for (const char* key : {"ph", "name", "pid", "tid"}) ASSERT_TRUE(e.contains(key)) << e;
    const std::string ph = e["ph"];
    if (ph == "X") {
      ++complete;
      ASSERT_TRUE(e.contains("ts") && e.contains("dur")) << e;
      EXPECT_GE(e["ts"].get<double>(), 0.0);
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      if (e["cat"] == "kernel") {
        ++kernels;
        EXPECT_EQ(e["pid"], 100);
        EXPECT_EQ(e["tid"], 13);
        EXPECT_TRUE(e["args"].contains("name"));
      }
    } else if (ph == "s") {
      starts.insert(e["id"].get<std::uint64_t>());
      EXPECT_EQ(e["pid"], 1);
    } else if (ph == "f") {
      finishes.insert(e["id"].get<std::uint64_t>());
      EXPECT_EQ(e["bp"], "e");
    } else if (ph == "M") {
      metadata.insert(e["name"].get<std::string>() + ":" + std::to_string(e["pid"].get<int>()));
      EXPECT_TRUE(e["args"].is_object());
    }
  }
  EXPECT_EQ(complete, t.events.size());
  EXPECT_EQ(kernels, 3u);
  EXPECT_EQ(starts, (std::set<std::uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(starts, finishes);
  for (const char* m : {"process_name:1", "thread_name:1", "process_labels:1", "process_name:100",
                        "thread_name:100"})
    EXPECT_TRUE(metadata.count(m)) << m;
  // The compile range starts when tracing began: ts 0.
  EXPECT_EQ(j["traceEvents"][3]["name"], "compile");
  EXPECT_DOUBLE_EQ(j["traceEvents"][3]["ts"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(j["traceEvents"][3]["dur"].get<double>(), 500.0);
  const auto& other = j["otherData"];
  EXPECT_EQ(other["algorithm"], "IMPLICIT_PRECOMP_GEMM");
  EXPECT_EQ(other["problem"], "mb2ic4ih64oc8kh5");
  EXPECT_EQ(other["backend"], "cudnn");
  EXPECT_EQ(other["traced_calls"], 2);
}

TEST(ChromeTrace, FileParsesBack) {
  testing::TempDir dir;
  const std::string path = (dir.path() / "t.json").string();
  write_chrome_trace(path, synthetic_trace(), sample_result());
  const auto j = nlohmann::json::parse(testing::read_file(path));
  EXPECT_TRUE(j["traceEvents"].is_array());
  EXPECT_EQ(j["displayTimeUnit"], "ms");
}

TEST(ChromeTrace, FileNamesAreSanitized) {
  Result r = sample_result();
  EXPECT_EQ(trace_file_name(r), "cudnn.mb2ic4ih64oc8kh5.json");
  r.name = "resnet50 res2/3x3";
  EXPECT_EQ(trace_file_name(r), "cudnn.mb2ic4ih64oc8kh5.resnet50_res2_3x3.json");
}

}  // namespace
}  // namespace bench
