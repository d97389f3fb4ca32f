#include "ops/bench.hpp"

#include <algorithm>

#include "core/case_result.hpp"
#include "core/compare.hpp"
#include "core/peak.hpp"
#include "ops/score.hpp"

namespace ops {

bench::Result make_result(const std::string& backend, const std::string& device, const Problem& p,
                          const CaseOptions& options) {
  return bench::case_result("ops", "myops", backend, device, p, options);
}

CaseOutput run_case(const Backend* backend, const std::string& backend_name,
                    const std::string& device, const std::string& why_missing, const Problem& p,
                    const HostData& data, const CaseOptions& options) {
  CaseOutput out;
  bench::CaseHooks hooks = bench::backend_hooks(backend, why_missing);
  if (backend) {
    hooks.check_support = [backend, &p] { return backend->check_support(p); };
    hooks.prepare = [backend, &p, &data]() -> std::unique_ptr<bench::Instance> {
      return backend->prepare(p, data);
    };
    hooks.check = [&p, &data](bench::Instance& base, bench::Result& r, bool) {
      auto& inst = static_cast<Instance&>(base);  // prepare() made it
      std::vector<float> got(static_cast<std::size_t>(p.output_elements()), 0.0f);
      inst.read_output(got.data());
      r.shape_ok = true;  // read_output's contract: the problem's output shape, or it throws
      r.correctness = check_output(p, data, got.data());
      if (!data.ref_index.empty()) {  // a sampled check: the reference holds only these elements
        r.extra["checked_elements"] = data.ref_index.size();
        r.extra["check"] = "sampled";
      }
      return bench::CheckOutcome{r.correctness->passed, r.correctness->message};
    };
  }
  bench::CaseRun run =
      bench::run_case(make_result(backend_name, device, p, options), hooks, options);
  out.result = std::move(run.result);
  out.trace = std::move(run.trace);
  return out;
}

void SuiteRun::order(std::vector<const Entry*>& selected) {
  std::stable_sort(selected.begin(), selected.end(), [](const Entry* a, const Entry* b) {
    auto key = [](const Entry* e) {
      return 2 * (e->device == "cuda") + (e->name != reference_backend(e->device));
    };
    return key(a) < key(b);
  });
}

void SuiteRun::before_cases(std::ostream& os, nlohmann::ordered_json& system,
                            const std::vector<const Entry*>& selected,
                            const std::vector<Problem>& problems) const {
  if (no_peaks_) {
    system["bandwidth"] = {{"why", "not measured (--no-peaks)"}};
    return;
  }
  std::vector<bench::DataType> matmul_dtypes;
  for (const auto& p : problems)
    if (p.op == Op::matmul &&
        std::find(matmul_dtypes.begin(), matmul_dtypes.end(), p.dtype) == matmul_dtypes.end())
      matmul_dtypes.push_back(p.dtype);
  auto uses = [&](const std::string& device) {
    return std::any_of(selected.begin(), selected.end(),
                       [&](const Entry* e) { return e->backend && e->device == device; });
  };
  if (uses("cpu")) {
    os << "measuring the host's copy bandwidth (STREAM copy)...\n";
    system["bandwidth"]["cpu"] = bench::measure_cpu_copy_bandwidth();
  }
  if (uses("cuda") && measure_gpu_limits) measure_gpu_limits(os, system, matmul_dtypes);
}

void SuiteRun::make_inputs(const Problem& p, bool host_fits) {
  data_ = host_fits ? make_host_data(p, seed_) : HostData{};
}

CaseOutput SuiteRun::run(const Entry& e, const Problem& p, const CaseOptions& options,
                         const bench::ResultSet& set) const {
  CaseOutput out = run_case(e.backend.get(), e.name, e.device, e.why_missing, p, data_, options);
  fill_metrics(out.result, reference_of(set.results, out.result), set.system);
  return out;
}

void SuiteRun::report(std::ostream& os, const bench::ResultSet& set,
                      const std::string& markdown_path) const {
  os << "\n== Scores (bandwidth against the measured copy bandwidth; speed-up = PyTorch time / "
        "backend time on the same device) ==\n";
  print_scores(os, set.results);
  if (!markdown_path.empty()) write_markdown(markdown_path, set);
}

}  // namespace ops
