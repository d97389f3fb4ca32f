// The tracer: nested host ranges, traced calls with their windows, and the device activity
// source started and stopped around them (a fake source stands in for CUPTI).
#include "core/trace.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace bench {
namespace {

class FakeSource final : public ActivitySource {
 public:
  bool fail_start = false;
  int starts = 0, stops = 0;
  bool start(std::string* why) override {
    ++starts;
    if (fail_start) *why = "no device here";
    return !fail_start;
  }
  void stop(std::vector<TraceEvent>* out, std::string*) override {
    ++stops;
    TraceEvent k;
    k.kind = EventKind::kernel;
    k.name = "kernel";
    k.start_ns = trace_clock_ns();
    k.end_ns = k.start_ns + 1000;
    out->push_back(k);
  }
  std::string description() const override { return "fake source"; }
};

const TraceEvent* find(const Trace& t, const std::string& name) {
  for (const auto& e : t.events)
    if (e.name == name) return &e;
  return nullptr;
}

TEST(Tracer, NullTracerRangesOnlyRunTheBody) {
  { TraceRange range(nullptr, "nothing recorded"); }
  EXPECT_EQ(in_range(nullptr, "value", [] { return 42; }), 42);
}

TEST(Tracer, NestedRangesHaveDepthAndNest) {
  auto trace = std::make_shared<Trace>();
  Tracer tracer(trace, TraceConfig{}, false);
  {
    TraceRange outer(&tracer, "outer");
    TraceRange inner(&tracer, "inner");
  }
  ASSERT_EQ(trace->events.size(), 2u);
  const TraceEvent* outer = find(*trace, "outer");
  const TraceEvent* inner = find(*trace, "inner");
  ASSERT_TRUE(outer && inner);
  EXPECT_EQ(outer->depth, 0);
  EXPECT_EQ(inner->depth, 1);
  EXPECT_LE(outer->start_ns, inner->start_ns);
  EXPECT_GE(outer->end_ns, inner->end_ns);
  EXPECT_GE(outer->start_ns, trace->origin_ns);
  EXPECT_EQ(outer->kind, EventKind::host_range);
  EXPECT_EQ(outer->thread, trace_thread_id());
  EXPECT_EQ(trace->host_thread, trace_thread_id());
  EXPECT_NE(trace->device_activity_note.find("host"), std::string::npos);
}

TEST(Tracer, RangesCloseWhenTheBodyThrows) {
  auto trace = std::make_shared<Trace>();
  Tracer tracer(trace, TraceConfig{}, false);
  EXPECT_THROW(in_range(&tracer, "throws", []() -> int { throw std::runtime_error("x"); }),
               std::runtime_error);
  ASSERT_EQ(trace->events.size(), 1u);
  EXPECT_EQ(trace->events[0].name, "throws");
}

TEST(Tracer, TracedCallsRecordWindowsAndDeviceActivity) {
  FakeSource source;
  TraceConfig config;
  config.calls = 3;
  config.device_activity = &source;
  auto trace = std::make_shared<Trace>();
  Tracer tracer(trace, config, true);
  int runs = 0, syncs = 0;
  trace_calls(
      tracer, [&] { ++runs; }, [&] { ++syncs; });
  EXPECT_EQ(runs, 4);  // the uncounted set-up call first
  EXPECT_EQ(syncs, 4);
  ASSERT_TRUE(find(*trace, "set-up call (not counted)"));
  EXPECT_LE(find(*trace, "set-up call (not counted)")->end_ns, trace->calls[0].start_ns);
  EXPECT_EQ(source.starts, 1);
  EXPECT_EQ(source.stops, 1);
  ASSERT_EQ(trace->calls.size(), 3u);
  for (std::size_t i = 0; i + 1 < trace->calls.size(); ++i) {
    EXPECT_LE(trace->calls[i].start_ns, trace->calls[i].end_ns);
    EXPECT_LE(trace->calls[i].end_ns, trace->calls[i + 1].start_ns);
  }
  int run_ranges = 0, sync_ranges = 0;
  for (const auto& e : trace->events) {
    run_ranges += e.name == "run";
    sync_ranges += e.name == "sync";
  }
  EXPECT_EQ(run_ranges, 3);
  EXPECT_EQ(sync_ranges, 3);
  ASSERT_TRUE(find(*trace, "traced calls"));
  EXPECT_EQ(find(*trace, "traced calls")->depth, 0);
  EXPECT_EQ(find(*trace, "call 2")->depth, 1);
  EXPECT_EQ(find(*trace, "run")->depth, 2);
  ASSERT_TRUE(find(*trace, "kernel"));
  EXPECT_EQ(trace->device_activity_source, "fake source");
  EXPECT_TRUE(trace->device_activity_note.empty());
}

TEST(Tracer, DeviceActivityIsNotStartedForHostCases) {
  FakeSource source;
  TraceConfig config;
  config.device_activity = &source;
  auto trace = std::make_shared<Trace>();
  Tracer tracer(trace, config, false);
  int runs = 0;
  trace_calls(
      tracer, [&] { ++runs; }, [] {});
  EXPECT_EQ(runs, 3);  // no set-up call without device activity
  EXPECT_EQ(source.starts, 0);
  EXPECT_TRUE(trace->device_activity_source.empty());
}

TEST(Tracer, TracedCallTracerIsSetOnlyInsideTheTracedCalls) {
  TraceConfig config;
  auto trace = std::make_shared<Trace>();
  Tracer tracer(trace, config, false);
  EXPECT_EQ(traced_call_tracer(), nullptr);
  int seen = 0;
  trace_calls(
      tracer,
      [&] {
        seen += traced_call_tracer() == &tracer;
        TraceRange part(traced_call_tracer(), "prefill");  // a backend's part of one call
      },
      [] {});
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(traced_call_tracer(), nullptr);
  ASSERT_TRUE(find(*trace, "prefill"));
  EXPECT_EQ(find(*trace, "prefill")->depth, 3);  // traced calls > call i > run > prefill
  EXPECT_THROW(trace_calls(
                   tracer, [] { throw std::runtime_error("x"); }, [] {}),
               std::runtime_error);
  EXPECT_EQ(traced_call_tracer(), nullptr);
}

TEST(Tracer, AFailedStartIsNotedWithItsReason) {
  FakeSource source;
  source.fail_start = true;
  TraceConfig config;
  config.device_activity = &source;
  auto trace = std::make_shared<Trace>();
  Tracer tracer(trace, config, true);
  trace_calls(
      tracer, [] {}, [] {});
  EXPECT_EQ(source.stops, 0);
  EXPECT_EQ(trace->device_activity_note, "unavailable: no device here");
  EXPECT_EQ(trace->calls.size(), 3u);
}

TEST(Tracer, NoSourceIsNotedWithTheConfiguredReason) {
  TraceConfig config;
  config.why_no_device_activity = "built without CUDA";
  auto trace = std::make_shared<Trace>();
  Tracer tracer(trace, config, true);
  EXPECT_EQ(trace->device_activity_note, "unavailable: built without CUDA");
}

TEST(Tracer, DeviceActivityStopsWhenACallThrows) {
  FakeSource source;
  TraceConfig config;
  config.device_activity = &source;
  auto trace = std::make_shared<Trace>();
  Tracer tracer(trace, config, true);
  EXPECT_THROW(trace_calls(
                   tracer, [] { throw std::runtime_error("boom"); }, [] {}),
               std::runtime_error);
  EXPECT_EQ(source.stops, 1);
}

}  // namespace
}  // namespace bench
