// Runs one MLP-suite case through the core's case runner (core/runner.hpp): the hooks are the
// backend's support check, the gradient check against the float64 reference (or, for a matmul
// case, the sampled check of C), and after the timed sampling the forward/backward split and the
// peak memory (and the profile, when asked). Never throws: every outcome is a status.
// SuiteRun: what the driver loop (core/driver_loop.hpp) asks of the suite across a run's cases.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/registry.hpp"
#include "core/result.hpp"
#include "core/runner.hpp"
#include "core/trace.hpp"
#include "core/memory_fit.hpp"
#include "models/mlp/backend.hpp"
#include "models/mlp/data.hpp"
#include "models/mlp/settings.hpp"

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

using Entry = bench::RegistryEntry<Backend>;

// A run's cases as the driver loop calls them: the matmul ceiling (checked against the memory,
// then measured), each problem's inputs and float64 references, each case with its metrics and
// its profile (--profile), the lines after a case and the closing tables. What needs LibTorch or
// CUPTI the driver gives (empty where not built).
class SuiteRun {
 public:
  // The float64 reference (ref_mlp.hpp); without it an MLP case's check fails.
  std::function<Reference(const MlpProblem&, const MlpData&, Gelu)> reference;
  // LibTorch's profile of one case into a folder (profile.hpp profile_case): its console table.
  std::function<std::string(Instance&, bench::Result&, bool cuda, const std::string& dir)>
      profile_libtorch;
  // The device activity a cuBLASLt case's --profile records (core/cuda/cupti_tracer.hpp).
  std::function<std::unique_ptr<bench::ActivitySource>()> make_cupti;

  // both_modes: --timing both (a case is profiled in its real mode only).
  SuiteRun(RunSettings settings, std::uint64_t seed, bool both_modes)
      : settings_(std::move(settings)), seed_(seed), both_modes_(both_modes) {}

  // bench::UsageError where a selected backend's ceiling matmul does not fit in `available`.
  void check_ceilings_fit(const std::vector<const Entry*>& selected,
                          const bench::MemoryAvailable& available) const;
  // Measures the ceilings into system["mlp_matmul_ceiling"] (or says why not); with --profile of
  // a GPU backend, the CUPTI source unless the session traces already (traced).
  void before_cases(nlohmann::ordered_json& system, const std::vector<const Entry*>& selected,
                    const std::vector<Problem>& problems, bool traced);
  // The problem's inputs (none where the host side does not fit); its references are made when
  // a check first needs them.
  void make_inputs(const Problem& p, bool host_fits);
  // One case with its metrics against the ceiling, and its profile when asked.
  CaseOutput run(const Entry& e, const Problem& p, bench::CaseOptions options);
  // A case CUPTI profiled, where the session does not trace (traced false): writes its trace
  // into the profile folder, records it in out.result.extra.profile and prints its result and
  // debug blocks and its summary; true where it did (the driver then records the case).
  bool write_cupti_profile(CaseOutput& out, bool traced, std::ostream& os) const;
  // The lines after a case's result block: its summary, TFLOP/s or LibTorch's profile table.
  void after_case(std::ostream& os, const bench::Result& r) const;
  // After the summary: the studies block of `set` and the figures and fits tables.
  void report(std::ostream& os, bench::ResultSet& set) const;

 private:
  RunSettings settings_;
  std::uint64_t seed_;
  bool both_modes_;
  nlohmann::ordered_json ceilings_;
  bench::TraceConfig cupti_config_;
  std::unique_ptr<bench::ActivitySource> cupti_;
  MlpData mlp_data_;
  MatmulData matmul_data_;
  std::map<Gelu, Reference> refs_;
  std::string profile_table_;
};

}  // namespace mlp
