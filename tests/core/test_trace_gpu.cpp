// GPU activity in the debug traces (CUPTI, core/cuda/cupti_tracer.hpp):
//  - without a GPU, starting CUPTI fails with a reason, never a crash;
//  - with one, a memset and its API call are recorded with one correlation id, on the host's
//    clock (inside the host window around them);
//  - every GPU backend of the registry, run through the case runner's tracing path, shows at
//    least one kernel per traced call, and its kernel time per call is within its measured GPU
//    time (at most 1.1 x the median + 2 us).
// Skips, with the reason, where no GPU is present or CUPTI is not built.
#include <gtest/gtest.h>

#include <iostream>

#include "conv/bench.hpp"
#include "core/printers.hpp"
#include "core/trace_report.hpp"
#include "experiments/registry/conv.hpp"

#if MYCONV_HAVE_CUPTI
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/cupti_tracer.hpp"
#endif

namespace conv {
namespace {

#if MYCONV_HAVE_CUPTI

TEST(CuptiActivity, WithoutAGpuStartFailsWithAReason) {
  if (bench::cuda_device_available().ok) GTEST_SKIP() << "a GPU is present";
  auto source = bench::make_cupti_activity_source();
  std::string why;
  EXPECT_FALSE(source->start(&why));
  EXPECT_FALSE(why.empty());
  std::cout << "CUPTI without a GPU: " << why << "\n";
  std::vector<bench::TraceEvent> events;
  std::string warning;
  source->stop(&events, &warning);  // harmless when not started
  EXPECT_TRUE(events.empty());
}

TEST(CuptiActivity, RecordsAMemsetAndItsCallOnTheHostClock) {
  if (const auto a = bench::cuda_device_available(); !a.ok) GTEST_SKIP() << a.reason;
  bench::Stream stream;
  bench::DeviceBuffer<float> buffer(1 << 20);
  buffer.fill_bytes_async(0, stream.get());  // context and module set up before recording
  stream.synchronize();
  auto source = bench::make_cupti_activity_source();
  std::string why;
  ASSERT_TRUE(source->start(&why)) << why;
  const std::int64_t before = bench::trace_clock_ns();
  buffer.fill_bytes_async(0xFF, stream.get());
  stream.synchronize();
  const std::int64_t after = bench::trace_clock_ns();
  std::vector<bench::TraceEvent> events;
  std::string warning;
  source->stop(&events, &warning);
  EXPECT_TRUE(warning.empty()) << warning;
  std::cout << source->description() << "\n";

  const bench::TraceEvent* memset = nullptr;
  for (const auto& e : events)
    if (e.kind == bench::EventKind::memset) memset = &e;
  ASSERT_NE(memset, nullptr) << events.size() << " events, none a memset";
  EXPECT_EQ(memset->bytes, buffer.bytes());
  EXPECT_GE(memset->start_ns, before);
  EXPECT_LE(memset->end_ns, after);
  EXPECT_LE(memset->start_ns, memset->end_ns);
  bool launched = false;
  for (const auto& e : events)
    if (e.kind == bench::EventKind::cuda_api && e.correlation == memset->correlation) {
      launched = true;
      EXPECT_NE(e.name.find("Memset"), std::string::npos) << e.name;
      EXPECT_EQ(e.thread, bench::trace_thread_id());
      EXPECT_GE(e.start_ns, before);
      EXPECT_LE(e.start_ns, memset->start_ns);
    }
  EXPECT_TRUE(launched) << "no API record with the memset's correlation id";
}

TEST(TracedGpuBackends, ShowKernelsWithinTheirMeasuredGpuTime) {
  if (const auto a = bench::cuda_device_available(); !a.ok) GTEST_SKIP() << a.reason;
  auto source = bench::make_cupti_activity_source();
  bench::TraceConfig trace;
  trace.calls = 3;
  trace.device_activity = source.get();
  CaseOptions options;
  options.measure.warmup_iters = 3;
  options.measure.min_iters = 20;
  options.measure.max_iters = 500;
  options.measure.min_time_ms = 10;
  options.measure.max_time_ms = 200;
  options.trace = &trace;
  int traced = 0;
  for (const char* descriptor : {"mb2ic4ih64oc8kh5", "mb32ic64ih56oc64kh3ph1"}) {
    const Problem p = parse_problem(descriptor);
    const HostData data = make_host_data(p, 3);
    for (const auto& e : make_registry(BackendOptions{})) {
      if (e.device != "cuda") continue;
      SCOPED_TRACE(e.name + " " + p.str());
      if (!e.backend) {
        std::cout << "[ SKIPPED  ] " << e.name << ": not built: " << e.why_missing << "\n";
        continue;
      }
      const CaseOutput c = run_case(e.backend.get(), e.name, e.device, "", p, data, options);
      if (c.result.status == bench::Status::unsupported) {
        std::cout << "[ SKIPPED  ] " << e.name << ": " << c.result.reason << "\n";
        continue;
      }
      ASSERT_EQ(c.result.status, bench::Status::passed) << c.result.reason;
      ASSERT_TRUE(c.trace);
      bench::print_result_block(std::cout, c.result);
      bench::print_debug_block(std::cout, *c.trace, c.result);
      ASSERT_FALSE(c.trace->device_activity_source.empty()) << c.trace->device_activity_note;
      const bench::TraceSummary s = bench::summarize_trace(*c.trace);
      ASSERT_EQ(s.calls, 3);
      EXPECT_GE(s.kernels_per_call, 1.0);
      ASSERT_FALSE(s.kernels.empty());
      ASSERT_TRUE(c.result.gpu_time_ms);
      const double gpu_us = c.result.gpu_time_ms->median * 1e3;
      EXPECT_GT(s.kernel_time_per_call_us, 0.0);
      EXPECT_LE(s.kernel_time_per_call_us, 1.1 * gpu_us + 2.0)
          << "kernels " << s.kernel_time_per_call_us << " us per call, GPU time median " << gpu_us
          << " us";
      ++traced;
    }
  }
  if (traced == 0) GTEST_SKIP() << "no GPU backend built or supported";
}

#else

TEST(TracedGpuBackends, ShowKernelsWithinTheirMeasuredGpuTime) {
  GTEST_SKIP() << "built without CUPTI (needs CUDA and the toolkit's CUPTI)";
}

#endif

}  // namespace
}  // namespace conv
