// Runs one (backend, problem) conv case through the core's case runner (core/runner.hpp): the
// conv hooks are the problem's own support check, the backend's, and the check of the output
// against the float64 reference. Never throws: every outcome is a status in the returned record.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "conv/backend.hpp"
#include "conv/data.hpp"
#include "core/result.hpp"
#include "core/runner.hpp"
#include "core/trace.hpp"

namespace conv {

using bench::CaseOptions;
using bench::TimingMode;

struct CaseOutput {
  bench::Result result;
  std::vector<float> output;            // the checked output, with keep_output (else empty)
  std::shared_ptr<bench::Trace> trace;  // with CaseOptions::trace, once the case got to prepare()
};

// A result record with the case's identity filled in (suite, backend, problem, work, command; the
// command starts with options.command_prefix, "myconv" when that is empty).
bench::Result make_result(const std::string& backend, const std::string& device, const Problem& p,
                          const CaseOptions& options);

// backend may be null (not built): the case is recorded as skipped with why_missing. The output is
// checked on the device where data.device_check holds the reference there and the backend's output
// is on that device (Instance::device_output()), else on the host; extra.check_device says which
// ("cuda" or "cpu"), extra.check_fallback why a GPU case was checked on the host. keep_output
// (--save-tensors): the output is read to the host, returned in CaseOutput::output and checked
// there.
CaseOutput run_case(const Backend* backend, const std::string& backend_name,
                    const std::string& device, const std::string& why_missing, const Problem& p,
                    const HostData& data, const CaseOptions& options, bool keep_output = false);

}  // namespace conv
