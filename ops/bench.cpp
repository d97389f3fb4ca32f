#include "ops/bench.hpp"

#include "core/case_result.hpp"
#include "core/compare.hpp"

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
      const bench::Tolerance tol = tolerance(p, data.ref_rms, data.norm_amplification);
      if (data.ref_index.empty()) {
        r.correctness = bench::compare(got.data(), data.ref.data(), got.size(), tol);
      } else {  // a sampled check: the reference holds only these elements
        std::vector<float> sampled(data.ref_index.size());
        for (std::size_t i = 0; i < sampled.size(); ++i)
          sampled[i] = got[static_cast<std::size_t>(data.ref_index[i])];
        r.correctness = bench::compare(sampled.data(), data.ref.data(), sampled.size(), tol);
        for (auto& m : r.correctness->first_mismatches)  // as output element numbers
          m.index = static_cast<std::size_t>(data.ref_index[m.index]);
        r.extra["checked_elements"] = sampled.size();
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

}  // namespace ops
