// Runs one (backend, problem) case through the benchmark core: setup and compile timed, the
// first output checked against the float64 reference, then sampled. Never throws: every outcome
// is a status in the returned record.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "conv/backend.hpp"
#include "conv/data.hpp"
#include "core/measure.hpp"
#include "core/result.hpp"
#include "core/trace.hpp"

namespace conv {

// real: every call synchronized, launch and synchronization overhead included (what a caller
// that needs the result at once sees). pure: calls back to back, runs_per_sample of them between
// one timer pair, or a CUDA graph of them replayed where the backend allows capture (device
// throughput, launch gaps hidden). Both modes treat every backend alike.
enum class TimingMode { real, pure };

struct CaseOptions {
  bench::MeasureConfig measure;
  TimingMode timing = TimingMode::real;
  bool use_graph = true;    // pure mode: replay a captured graph where the backend allows it
  int pure_runs = 0;        // pure mode: calls per sample; 0 = enough for about 2 ms per sample
  bool cold_cache = false;  // flush the device's L2 (or the CPU caches) before every sample
  // Cache flush, clocks and graph capture of the GPU; null where there is none (then GPU
  // backends run without clock records, and --cold-cache fails their cases).
  bench::DeviceServices* device_services = nullptr;
  // Command line that reproduces the case, minus the problem and backend (e.g. "myconv --seed 7").
  std::string command_prefix = "myconv";
  // Tracing (--debug, --trace-dir): null = off. When set, the case's phases are recorded as host
  // ranges and, after the timed sampling of a passed case, trace->calls more calls are traced
  // with device activity; no recorded time includes tracing.
  const bench::TraceConfig* trace = nullptr;
};

struct CaseOutput {
  bench::Result result;
  std::vector<float> output;            // the checked output (empty when none was produced)
  std::shared_ptr<bench::Trace> trace;  // with CaseOptions::trace, once the case got to prepare()
};

// A result record with the case's identity filled in (suite, backend, problem, work, command).
bench::Result make_result(const std::string& backend, const std::string& device, const Problem& p,
                          const CaseOptions& options);

// backend may be null (not built): the case is recorded as skipped with why_missing.
CaseOutput run_case(const Backend* backend, const std::string& backend_name,
                    const std::string& device, const std::string& why_missing, const Problem& p,
                    const HostData& data, const CaseOptions& options);

}  // namespace conv
