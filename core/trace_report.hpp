// Reading a Trace (core/trace.hpp): kernel names made readable, per-kernel and per-call figures,
// the console debug block (myconv --debug) and the Chrome trace file (--trace-dir) that Perfetto
// and chrome://tracing load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "core/trace.hpp"

namespace bench {

// The C++ name behind a mangled one ("_Z3fooPf" -> "foo(float*)"); other names unchanged.
std::string demangle(const std::string& name);

// A kernel name short enough for a table: demangled, without its return type, parameter list and
// "(anonymous namespace)::", template arguments kept at the first level only ("<...>" below it),
// and cut to max_chars with "..." at the end.
//   "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>,
//    std::array<char*, 1ul>>(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
//   -> "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<...>,
//   std::array<...>>"
std::string short_kernel_name(const std::string& name, std::size_t max_chars = 100);

// One kernel (by its full name) over the traced calls.
struct KernelStats {
  std::string name;        // as reported (often mangled)
  std::string short_name;  // short_kernel_name(name)
  int calls = 0;
  double total_us = 0, mean_us = 0;
  double share = 0;  // of the summed duration of all kernels, memcpys and memsets, 0..1
};

// Copies or sets of one kind ("Memcpy HtoD", "Memset").
struct TransferStats {
  std::string name;
  int count = 0;
  std::uint64_t bytes = 0;
  double total_us = 0;
};

// Device work belongs to the traced call whose window holds the start of its launch API call
// (host clock, exact) or, without a launch record, its own start (GPU clock mapped to the
// host's). With traced calls, the kernel and copy figures count the work of those calls only
// (not that of the uncounted set-up call); without, all device work.
struct TraceSummary {
  std::size_t total_events = 0;
  std::size_t device_events_with_time = 0;      // kernels, memcpys, memsets with a duration > 0
  std::size_t host_events_with_time = 0;        // host ranges and API calls with a duration > 0
  std::size_t device_events_outside_calls = 0;  // not counted below
  double device_time_us = 0;                    // summed durations of the counted device work
  std::vector<KernelStats> kernels;             // largest total first
  std::vector<TransferStats> transfers;         // largest total first
  int calls = 0;                                // traced calls
  // Kernels per traced call, and their summed duration per call (0 without calls).
  double kernels_per_call = 0;
  double kernel_time_per_call_us = 0;
  // Median over the calls of (first device work start - call start): the host's launch path up
  // to work on the device. Absent without device work in the calls.
  std::optional<double> call_to_first_kernel_us;
  // Median over counted kernels with a launch record of (kernel start - launch API call start).
  std::optional<double> launch_to_kernel_us;
  // Host ranges at nesting depth 0 and 1 (the case and its phases), in start order, in ms.
  std::vector<std::pair<std::string, double>> phases_ms;
  double run_median_us = 0, sync_median_us = 0;  // the "run" and "sync" ranges of the calls
};

TraceSummary summarize_trace(const Trace& trace);

// The debug block printed after a case's result block (print_result_block): event counts, the
// top_kernels largest kernels, copies, kernels per call, launch latencies, host phases, the
// algorithm and setup times, and where the trace file went (trace_path; empty: none written).
// Every line starts with "    [DEBUG] ".
void print_debug_block(std::ostream& os, const Trace& trace, const Result& r,
                       const std::string& trace_path = "", int top_kernels = 10);

// The trace as Chrome trace JSON (object form): "traceEvents" with host ranges and API calls
// (ph "X", pid 1, tid = OS thread), device work (ph "X", pid 100 + device, tid = stream), flow
// events from each launch to its work ("s" at the API call, "f" with "bp": "e" at the work,
// id = correlation id), process and thread names ("M"); ts and dur in microseconds since tracing
// began. "otherData" holds the case: backend, device, problem, algorithm, status, times.
nlohmann::ordered_json chrome_trace_json(const Trace& trace, const Result& r);
void write_chrome_trace(const std::string& path, const Trace& trace, const Result& r);

// "<backend>.<problem>[.<label>].json" with every character outside [A-Za-z0-9._-] replaced by
// '_', e.g. "cudnn.mb2ic4ih64oc8kh5.json".
std::string trace_file_name(const Result& r);

}  // namespace bench
