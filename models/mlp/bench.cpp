#include "models/mlp/bench.hpp"

#include <algorithm>
#include <iostream>
#include <set>

#include "core/stats.hpp"
#include "core/timer.hpp"
#include "models/mlp/data.hpp"

namespace mlp {
namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

CaseOutput finish(bench::CaseRun run) {
  CaseOutput out;
  out.result = std::move(run.result);
  out.trace = std::move(run.trace);
  return out;
}

}  // namespace

bench::Result make_result(const std::string& backend, const std::string& device, const Problem& p,
                          const bench::CaseOptions& options) {
  bench::Result r;
  r.suite = "mlp";
  r.backend = backend;
  r.device = device;
  r.problem = str(p);
  r.dtype = bench::to_string(dtype_of(p));
  std::visit(
      [&](const auto& x) {
        r.name = x.name;
        r.flop = x.flops();
        r.bytes = x.bytes();
        r.params = x.params();
      },
      p);
  r.command = (options.command_prefix.empty() ? "mymlp" : options.command_prefix) +
              " --problem '" + str_with_name(p) + "' --backend " + backend;
  return r;
}

CaseOutput run_mlp_case(const Backend* backend, const std::string& backend_name,
                        const std::string& device, const std::string& why_missing,
                        const MlpProblem& p, const MlpData& data, const MlpCaseSettings& settings,
                        const bench::CaseOptions& options) {
  bench::CaseHooks hooks = bench::backend_hooks(backend, why_missing);
  if (backend) {
    hooks.check_support = [backend, &p] { return backend->check_support(p); };
    hooks.prepare = [backend, &p, &data]() -> std::unique_ptr<bench::Instance> {
      return backend->prepare(p, data);
    };
    hooks.check = [backend, &p, &settings](bench::Instance& base, bench::Result& r, bool) {
      auto& inst = static_cast<Instance&>(base);  // prepare() made it
      const Reference& ref = settings.reference(backend->gelu());
      const double loss = inst.loss();
      const GradientCheck g = check_gradients(p, loss, inst.gradients(), ref);
      r.correctness = g.correctness;
      r.extra["gradient_check"] = g.detail;
      r.extra["gelu"] = to_string(backend->gelu());
      return bench::CheckOutcome{g.correctness.passed, g.correctness.message};
    };
    hooks.after_sampling = [&p, &settings](bench::Instance& base, bench::Result& r) {
      auto& inst = static_cast<Instance&>(base);
      const PhaseTimes t = inst.time_phases(settings.phase_steps);
      if (!t.forward_ms.empty()) {
        r.metrics["forward_ms"] = median_of(t.forward_ms);
        r.metrics["backward_ms"] = median_of(t.backward_ms);
        r.extra["phase_split"] = {{"steps", t.forward_ms.size()},
                                  {"clock", t.clock},
                                  {"statistic", "median per step"}};
      }
      std::string why;
      if (const auto peak = inst.peak_memory_bytes(&why))
        r.metrics["peak_memory_bytes"] = *peak;
      else
        r.extra["peak_memory_not_measured"] = why;
      (void)p;
      if (settings.profile) settings.profile(inst, r);
    };
  }
  return finish(bench::run_case(make_result(backend_name, device, p, options), hooks, options));
}

CaseOutput run_matmul_case(const Backend* backend, const std::string& backend_name,
                           const std::string& device, const std::string& why_missing,
                           const MatmulProblem& p, const MatmulData& data,
                           const bench::CaseOptions& options) {
  bench::CaseHooks hooks = bench::backend_hooks(backend, why_missing);
  if (backend) {
    hooks.check_support = [backend, &p] { return backend->check_matmul_support(p); };
    hooks.prepare = [backend, &p, &data]() -> std::unique_ptr<bench::Instance> {
      return backend->prepare_matmul(p, data);
    };
    hooks.check = [&p, &data](bench::Instance& base, bench::Result& r, bool) {
      auto& inst = static_cast<MatmulInstance&>(base);
      const std::vector<double> got_d = inst.read_elements(data.check_index);
      const std::vector<float> got(got_d.begin(), got_d.end());
      const double ref_rms = bench::rms(data.check_ref.data(), data.check_ref.size());
      r.correctness = bench::compare(got.data(), data.check_ref.data(), got.size(),
                                     matmul_tolerance(p, ref_rms));
      r.extra["check"] = "sampled";
      r.extra["checked_elements"] = got.size();
      return bench::CheckOutcome{r.correctness->passed, r.correctness->message};
    };
  }
  return finish(bench::run_case(make_result(backend_name, device, p, options), hooks, options));
}

void fill_metrics(bench::Result& r, std::optional<double> ceiling_tflops) {
  const std::optional<double> ms = r.primary_time_ms();
  if (r.status != bench::Status::passed || !ms || *ms <= 0) return;
  const double tflops = r.flop / (*ms * 1e-3) / 1e12;
  r.metrics["time_per_call_ms"] = *ms;
  if (r.params.value("kind", "") == "mlp")
    r.metrics["step_ms"] = *ms / r.params["num_steps"].get<double>();
  r.metrics["tflops"] = tflops;
  if (ceiling_tflops && *ceiling_tflops > 0) {
    r.metrics["ceiling_tflops"] = *ceiling_tflops;
    r.metrics["fraction_of_ceiling"] = tflops / *ceiling_tflops;
    r.metrics["ceiling_bound_ms"] = r.flop / (*ceiling_tflops * 1e12) * 1e3;
  }
}

nlohmann::ordered_json measure_ceilings(
    const std::vector<const bench::RegistryEntry<Backend>*>& selected,
    const std::vector<Problem>& problems, std::int64_t n_cpu, std::int64_t n_cuda) {
  nlohmann::ordered_json out = {
      {"method", "best over the implementations' GEMMs (torch::mm, cuBLASLt) of a square " +
                     std::to_string(n_cpu) + "^3 (cpu) or " + std::to_string(n_cuda) +
                     "^3 (cuda) matmul, random inputs, best of 3 synchronized calls after one "
                     "warm-up, host clock"}};
  std::set<std::pair<std::string, std::string>> done;
  for (const auto& p : problems)
    for (const auto* e : selected) {
      if (!e->backend || !e->backend->available().ok) continue;
      const bench::DataType dt = dtype_of(p);
      const std::string d = bench::to_string(dt);
      MatmulProblem mm;
      mm.n = e->device == "cuda" ? n_cuda : n_cpu;
      mm.dtype = dt;
      if (!e->backend->check_matmul_support(mm).ok) continue;
      if (!done.insert({e->name, d}).second) continue;
      try {
        std::cout << "measuring the matmul ceiling: " << e->name << " " << mm.str() << "...\n";
        const MatmulData data = make_matmul_data(mm, 1);
        auto inst = e->backend->prepare_matmul(mm, data);
        inst->compile();
        inst->run();
        inst->sync();
        double best = 1e30;
        for (int i = 0; i < 3; ++i) {
          bench::WallTimer t;
          inst->run();
          inst->sync();
          best = std::min(best, t.elapsed().count());
        }
        const double tflops = mm.flops() / (best * 1e-3) / 1e12;
        out["by_backend"][e->name][d] = tflops;
        auto& cur = out["tflops"][e->device][d];
        if (cur.is_null() || cur.get<double>() < tflops) cur = tflops;
      } catch (const std::exception& ex) {
        out["failed"][e->name][d] = ex.what();
      }
    }
  return out;
}

std::optional<double> ceiling_of(const nlohmann::ordered_json& c, const bench::Result& r) {
  if (!c.contains("tflops") || !c["tflops"].contains(r.device) ||
      !c["tflops"][r.device].contains(r.dtype))
    return std::nullopt;
  return c["tflops"][r.device][r.dtype].get<double>();
}

}  // namespace mlp
