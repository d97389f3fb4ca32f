// Runs one (backend, problem) op case through the core's case runner (core/runner.hpp): the op
// hooks are the backend's support check and the check of its output against the float64
// reference (every element, or the sampled elements of a large matmul). Never throws: every
// outcome is a status in the returned record.
#pragma once

#include <memory>
#include <string>
#include <vector>

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

}  // namespace ops
