// core_overhead: what the benchmark core adds to every sample. Times an empty workload (run()
// and sync() do nothing) through bench::measure, the same loop every backend goes through, and
// prints the per-sample figures in nanoseconds. Subtract nothing from reported times with it: it
// says how small a time the harness can resolve.
//
//   core_overhead [--samples N]
#include <iostream>

#include <CLI/CLI.hpp>

#include "core/measure.hpp"
#include "core/printers.hpp"
#include "core/trace.hpp"

int main(int argc, char** argv) {
  int samples = 100000;
  CLI::App app{"Per-sample overhead of the benchmark core's measurement loop"};
  app.add_option("--samples", samples, "Samples to take")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "core_overhead: error: " << e.what() << "\n";
    return 2;
  }

  bench::MeasureConfig config;
  config.warmup_iters = 1000;
  config.min_iters = samples;
  config.max_iters = samples;
  config.min_time_ms = 0;
  config.max_time_ms = 1e9;
  bench::Workload empty;
  empty.run = [] {};
  const bench::Measurement m = bench::measure(config, empty);

  bench::Table t({"figure", "median_ns", "p10_ns", "p90_ns", "mean_ns", "samples"});
  auto row = [&](const char* name, const bench::Summary& s) {
    t.add_row({name, bench::format_ms(s.median * 1e6), bench::format_ms(s.p10 * 1e6),
               bench::format_ms(s.p90 * 1e6), bench::format_ms(s.mean * 1e6),
               std::to_string(s.samples)});
  };
  row("cpu_time (host time in run)", m.host);
  row("total_time (run + sync)", m.total);
  row("thread_cpu_time", m.thread_cpu);
  std::cout << "Empty workload through bench::measure (" << samples
            << " samples, stop: " << m.stop_reason << ")\n";
  t.print(std::cout);

  // A trace range (core/trace.hpp) as the whole workload: with tracing off (a null tracer: only
  // the NVTX range, a null function pointer test without a tool attached) and on. The case runner
  // puts ranges around phases, never inside a sample, and traces its calls after sampling; these
  // figures minus the empty workload's bound what a range would cost inside a timed region.
  bench::Workload range_off;
  range_off.run = [] { bench::TraceRange range(nullptr, "range"); };
  auto trace = std::make_shared<bench::Trace>();
  bench::Tracer tracer(trace, bench::TraceConfig{}, false);
  bench::Workload range_on;
  range_on.run = [&tracer] { bench::TraceRange range(&tracer, "range"); };
  bench::Table r({"figure", "median_ns", "p10_ns", "p90_ns", "mean_ns", "samples"});
  for (const auto& [name, w] : {std::pair{"trace range, tracing off", &range_off},
                                std::pair{"trace range, tracing on", &range_on}}) {
    const bench::Summary h = bench::measure(config, *w).host;
    r.add_row({name, bench::format_ms(h.median * 1e6), bench::format_ms(h.p10 * 1e6),
               bench::format_ms(h.p90 * 1e6), bench::format_ms(h.mean * 1e6),
               std::to_string(h.samples)});
  }
  std::cout << "\nOne trace range as the workload (cpu_time, the empty workload's included)\n";
  r.print(std::cout);
  return 0;
}
