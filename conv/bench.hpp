// Runs one (backend, problem) case through the benchmark core: setup and compile timed, the
// first output checked against the float64 reference, then sampled. Never throws: every outcome
// is a status in the returned record.
#pragma once

#include <string>
#include <vector>

#include "conv/backend.hpp"
#include "conv/data.hpp"
#include "core/measure.hpp"
#include "core/result.hpp"

namespace conv {

struct CaseOptions {
  bench::MeasureConfig measure;
  // Command line that reproduces the case, minus the problem and backend (e.g. "myconv --seed 7").
  std::string command_prefix = "myconv";
};

struct CaseOutput {
  bench::Result result;
  std::vector<float> output;  // the checked output (empty when none was produced)
};

// A result record with the case's identity filled in (suite, backend, problem, work, command).
bench::Result make_result(const std::string& backend, const std::string& device, const Problem& p,
                          const CaseOptions& options);

// backend may be null (not built): the case is recorded as skipped with why_missing.
CaseOutput run_case(const Backend* backend, const std::string& backend_name,
                    const std::string& device, const std::string& why_missing, const Problem& p,
                    const HostData& data, const CaseOptions& options);

}  // namespace conv
