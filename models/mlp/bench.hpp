// Runs one MLP-suite case through the core's case runner (core/runner.hpp): the hooks are the
// backend's support check, the gradient check against the float64 reference (or, for a matmul
// case, the sampled check of C), and after the timed sampling the forward/backward split and the
// peak memory (and the profile, when asked). Never throws: every outcome is a status.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/registry.hpp"
#include "core/result.hpp"
#include "core/runner.hpp"
#include "core/trace.hpp"
#include "models/mlp/backend.hpp"

namespace mlp {

struct CaseOutput {
  bench::Result result;
  std::shared_ptr<bench::Trace> trace;
};

// The result record with the case's identity (suite "mlp", backend, problem, work, command).
bench::Result make_result(const std::string& backend, const std::string& device, const Problem& p,
                          const bench::CaseOptions& options);

struct MlpCaseSettings {
  // The float64 reference for the backend's GeLU, computed when the first check needs it (the
  // driver caches it per problem and form); may throw (the case then fails).
  std::function<const Reference&(Gelu)> reference;
  int phase_steps = 10;  // steps timed for the forward/backward split
  // When set: called after the split with the prepared instance (--profile).
  std::function<void(Instance&, bench::Result&)> profile;
};

// backend may be null (not built): the case is recorded as skipped with why_missing.
CaseOutput run_mlp_case(const Backend* backend, const std::string& backend_name,
                        const std::string& device, const std::string& why_missing,
                        const MlpProblem& p, const MlpData& data, const MlpCaseSettings& settings,
                        const bench::CaseOptions& options);

CaseOutput run_matmul_case(const Backend* backend, const std::string& backend_name,
                           const std::string& device, const std::string& why_missing,
                           const MatmulProblem& p, const MatmulData& data,
                           const bench::CaseOptions& options);

// Fills r.metrics of a passed case (results/README.md, suite mlp): time_per_call_ms, tflops, and
// against the measured matmul ceiling of r's device and dtype (when given) ceiling_tflops,
// fraction_of_ceiling and ceiling_bound_ms; an MLP case also step_ms (per step, from the call's
// median). The split and the memory are filled by the case itself.
void fill_metrics(bench::Result& r, std::optional<double> ceiling_tflops);

// The measured matmul ceiling the suite's TFLOP/s are held against.
// system.mlp_matmul_ceiling (results/README.md): for each dtype of `problems` and each selected
// backend that runs it, a square n^3 matmul (n_cuda on the GPU, n_cpu on the CPU), random
// inputs, best of 3 synchronized calls after one warm-up, host clock; one "measuring" line each on
// stdout. A backend that throws is recorded under "failed".
nlohmann::ordered_json measure_ceilings(
    const std::vector<const bench::RegistryEntry<Backend>*>& selected,
    const std::vector<Problem>& problems, std::int64_t n_cpu, std::int64_t n_cuda);

// The ceiling of r's device and dtype in `ceilings`, where measured.
std::optional<double> ceiling_of(const nlohmann::ordered_json& ceilings, const bench::Result& r);

}  // namespace mlp
