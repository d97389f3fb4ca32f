// Runs one (backend, problem) conv case through the core's case runner (core/runner.hpp): the
// conv hooks are the problem's own support check, the backend's, and the check of the output
// against the float64 reference. Never throws: every outcome is a status in the returned record.
// SuiteRun: what the driver loop (core/driver_loop.hpp) asks of the suite across a run's cases.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "conv/backend.hpp"
#include "conv/data.hpp"
#include "core/registry.hpp"
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

using Entry = bench::RegistryEntry<Backend>;

// A run's cases as the driver loop calls them: where each problem's float64 reference runs
// (MYCONV_REFERENCE: auto, cpu or gpu; MYCONV_CHECK: auto or host), each problem's inputs and
// reference, --save-tensors (the inputs, the reference and each backend's output as .npy).
class SuiteRun {
 public:
  // reference_env, check_env: the variables' values (null: unset); device: the registry's GPU
  // reference (null: not built); save_dir: --save-tensors ("" = none).
  SuiteRun(const char* reference_env, const char* check_env, DeviceReferenceConv device,
           std::string save_dir, std::uint64_t seed)
      : reference_env_(reference_env), check_env_(check_env), device_(device),
        save_dir_(std::move(save_dir)), seed_(seed) {}

  // bench::UsageError where MYCONV_REFERENCE or MYCONV_CHECK is bad (gpu: a GPU backend is
  // selected).
  void check_reference(bool gpu) const;
  // The reference, once the session knows whether a device is usable.
  void choose_reference(bool device_usable);
  // The problem's inputs and reference (none where no backend here runs it or the host side does
  // not fit); true where made.
  bool make_inputs(const Problem& p, bool host_fits);
  // After make_inputs: a GPU reference that failed is said once on err; --save-tensors.
  void after_inputs(std::ostream& err, const Problem& p, bool made);
  // One case (its output saved with --save-tensors).
  CaseOutput run(const Entry& e, const Problem& p, const CaseOptions& options) const;

 private:
  const char* reference_env_;
  const char* check_env_;
  DeviceReferenceConv device_;
  std::string save_dir_;
  std::uint64_t seed_;
  DeviceReferenceConv reference_ = nullptr;
  HostData data_;
  bool said_fallback_ = false;
};

}  // namespace conv
