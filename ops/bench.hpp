// Runs one (backend, problem) op case through the core's case runner (core/runner.hpp): the op
// hooks are the backend's support check and the check of its output against the float64
// reference (every element, or the sampled elements of a large matmul). Never throws: every
// outcome is a status in the returned record.
// SuiteRun: what the driver loop (core/driver_loop.hpp) asks of the suite across a run's cases.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/registry.hpp"
#include "core/result.hpp"
#include "core/runner.hpp"
#include "core/trace.hpp"
#include "ops/backend.hpp"
#include "ops/data.hpp"

namespace ops {

using bench::CaseOptions;
using bench::TimingMode;

struct CaseOutput {
  bench::Result result;
  std::shared_ptr<bench::Trace> trace;  // with CaseOptions::trace, once the case got to prepare()
};

// A result record with the case's identity filled in (suite "ops", backend, problem, work,
// command; the command starts with options.command_prefix, "myops" when that is empty).
bench::Result make_result(const std::string& backend, const std::string& device, const Problem& p,
                          const CaseOptions& options);

// backend may be null (not built): the case is recorded as skipped with why_missing.
CaseOutput run_case(const Backend* backend, const std::string& backend_name,
                    const std::string& device, const std::string& why_missing, const Problem& p,
                    const HostData& data, const CaseOptions& options);

using Entry = bench::RegistryEntry<Backend>;

// A run's cases as the driver loop calls them: the backends' order, the machine's measured limits
// before the first case, each problem's inputs and float64 reference, each case with its scores
// against the reference backend, the closing scores table and the Markdown file.
class SuiteRun {
 public:
  // The GPU's limits into `system` (bandwidth.cuda, matmul_ceiling for matmul_dtypes, where not
  // empty) with a "measuring" line each on os, where a device is usable; measured with the
  // libraries of baselines/ops/, so the registry gives it (experiments/registry/ops.hpp); empty
  // where the build has no CUDA.
  std::function<void(std::ostream& os, nlohmann::ordered_json& system,
                     const std::vector<bench::DataType>& matmul_dtypes)>
      measure_gpu_limits;

  // no_peaks: --no-peaks (no limits measured, no efficiencies).
  SuiteRun(std::uint64_t seed, bool no_peaks) : seed_(seed), no_peaks_(no_peaks) {}

  // Run order: PyTorch first on each device, so that every other backend's score is at hand
  // when its case ends.
  static void order(std::vector<const Entry*>& selected);
  // The machine's measured limits, once, for the devices the selected backends run on: the host's
  // copy bandwidth, and the GPU's (measure_gpu_limits); or why not (--no-peaks).
  void before_cases(std::ostream& os, nlohmann::ordered_json& system,
                    const std::vector<const Entry*>& selected,
                    const std::vector<Problem>& problems) const;
  // The problem's inputs and reference (none where the host side does not fit).
  void make_inputs(const Problem& p, bool host_fits);
  // One case with its scores against the reference backend's result in `set`, where it ran.
  CaseOutput run(const Entry& e, const Problem& p, const CaseOptions& options,
                 const bench::ResultSet& set) const;
  // After the summary: the scores table, and the Markdown file where markdown_path is given.
  void report(std::ostream& os, const bench::ResultSet& set,
              const std::string& markdown_path) const;

 private:
  std::uint64_t seed_;
  bool no_peaks_;
  HostData data_;
};

}  // namespace ops
