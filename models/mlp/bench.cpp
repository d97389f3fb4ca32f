#include "models/mlp/bench.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>

#include "core/error.hpp"
#include "core/matmul_ceiling.hpp"
#include "core/printers.hpp"
#include "core/stats.hpp"
#include "core/timer.hpp"
#include "core/trace_report.hpp"
#include "models/mlp/data.hpp"
#include "models/mlp/report.hpp"
#include "models/mlp/scaling.hpp"

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
  const std::string method =
      "best over the implementations' GEMMs (torch::mm, cuBLASLt) of a square " +
      std::to_string(n_cpu) + "^3 (cpu) or " + std::to_string(n_cuda) +
      "^3 (cuda) matmul, random inputs, best of 3 synchronized calls after one warm-up, host "
      "clock";
  std::vector<bench::CeilingMatmul> matmuls;
  std::set<std::pair<std::string, std::string>> done;
  for (const auto& p : problems)
    for (const auto* e : selected) {
      if (!e->backend || !e->backend->available().ok) continue;
      const bench::DataType dt = dtype_of(p);
      MatmulProblem mm;
      mm.n = e->device == "cuda" ? n_cuda : n_cpu;
      mm.dtype = dt;
      if (!e->backend->check_matmul_support(mm).ok) continue;
      if (!done.insert({e->name, bench::to_string(dt)}).second) continue;
      const Backend* backend = e->backend.get();
      matmuls.push_back({e->name, e->device, dt, mm.str(), mm.flops(), [backend, mm] {
                           auto data = std::make_shared<MatmulData>(make_matmul_data(mm, 1));
                           std::shared_ptr<MatmulInstance> inst =
                               backend->prepare_matmul(mm, *data);
                           inst->compile();
                           return std::function<double()>([data, inst] {
                             bench::WallTimer t;
                             inst->run();
                             inst->sync();
                             return t.elapsed().count();
                           });
                         }});
    }
  return bench::measure_matmul_ceiling(method, matmuls, {1, 3}, [](const bench::CeilingMatmul& m) {
    std::cout << "measuring the matmul ceiling: " << m.backend << " " << m.what << "...\n";
  });
}

std::optional<double> ceiling_of(const nlohmann::ordered_json& c, const bench::Result& r) {
  if (!c.contains("tflops") || !c["tflops"].contains(r.device) ||
      !c["tflops"][r.device].contains(r.dtype))
    return std::nullopt;
  return c["tflops"][r.device][r.dtype].get<double>();
}

void SuiteRun::check_ceilings_fit(const std::vector<const Entry*>& selected,
                                  const bench::MemoryAvailable& available) const {
  for (const auto* e : selected) {
    if (!e->backend || settings_.no_ceiling) continue;
    MatmulProblem mm;
    mm.n = e->device == "cuda" ? settings_.ceiling_n_cuda : settings_.ceiling_n_cpu;
    if (const std::string why =
            bench::memory_shortfall(memory_need(mm, e->device == "cuda"), available);
        !why.empty())
      throw bench::UsageError(std::string(e->device == "cuda" ? "--ceiling-n" : "--ceiling-n-cpu") +
                              ": the ceiling matmul " + mm.str() + " does not fit in memory: " +
                              why + " (--no-ceiling measures none)");
  }
}

void SuiteRun::before_cases(nlohmann::ordered_json& system,
                            const std::vector<const Entry*>& selected,
                            const std::vector<Problem>& problems, bool traced) {
  if (settings_.no_ceiling)
    system["mlp_matmul_ceiling"] = {{"why", "not measured (--no-ceiling)"}};
  else
    system["mlp_matmul_ceiling"] = measure_ceilings(selected, problems, settings_.ceiling_n_cpu,
                                                    settings_.ceiling_n_cuda);
  ceilings_ = system["mlp_matmul_ceiling"];
  const bool uses_gpu = std::any_of(selected.begin(), selected.end(), [](const Entry* e) {
    return e->backend && e->device == "cuda";
  });
  if (make_cupti && !settings_.profile_dir.empty() && uses_gpu && !traced) {
    cupti_ = make_cupti();
    cupti_config_.device_activity = cupti_.get();
    cupti_config_.calls = 1;
  }
}

void SuiteRun::make_inputs(const Problem& problem, bool host_fits) {
  refs_.clear();
  if (const auto* p = std::get_if<MlpProblem>(&problem))
    mlp_data_ = host_fits ? make_data(*p, seed_) : MlpData{};
  else
    matmul_data_ =
        host_fits ? make_matmul_data(std::get<MatmulProblem>(problem), seed_) : MatmulData{};
}

CaseOutput SuiteRun::run(const Entry& e, const Problem& problem, bench::CaseOptions options) {
  const auto* p = std::get_if<MlpProblem>(&problem);
  if (!p) {
    CaseOutput out = run_matmul_case(e.backend.get(), e.name, e.device, e.why_missing,
                                     std::get<MatmulProblem>(problem), matmul_data_, options);
    fill_metrics(out.result, ceiling_of(ceilings_, out.result));
    return out;
  }
  MlpCaseSettings settings;
  settings.phase_steps = settings_.phase_steps;
  settings.reference = [this, p](Gelu g) -> const Reference& {
    auto it = refs_.find(g);
    if (it != refs_.end()) return it->second;
    if (!reference) throw std::runtime_error("no float64 reference: LibTorch is not built");
    return refs_.emplace(g, reference(*p, mlp_data_, g)).first->second;
  };
  profile_table_.clear();
  // One profile per case: with --timing both, of its real-mode run (the files are named by
  // backend and problem).
  const bool profiled = !settings_.profile_dir.empty() && !in_study(problem) && e.backend &&
                        !(both_modes_ && options.timing == bench::TimingMode::pure);
  if (profiled && e.backend->profiler() == "libtorch" && profile_libtorch)
    settings.profile = [this, &e](Instance& inst, bench::Result& r) {
      profile_table_ = profile_libtorch(inst, r, e.device == "cuda", settings_.profile_dir);
    };
  if (profiled && e.backend->profiler() == "cupti" && cupti_) options.trace = &cupti_config_;
  CaseOutput out = run_mlp_case(e.backend.get(), e.name, e.device, e.why_missing, *p, mlp_data_,
                                settings, options);
  fill_metrics(out.result, ceiling_of(ceilings_, out.result));
  return out;
}

bool SuiteRun::write_cupti_profile(CaseOutput& out, bool traced, std::ostream& os) const {
  if (!out.trace || traced) return false;
  const std::string path =
      (std::filesystem::path(settings_.profile_dir) / (file_stem(out.result) + ".trace.json"))
          .string();
  bench::write_chrome_trace(path, *out.trace, out.result);
  out.result.extra["profile"] = {{"profiler", "CUPTI (core/cuda/cupti_tracer)"},
                                 {"trace_file", path}};
  bench::print_result_block(os, out.result);
  bench::print_debug_block(os, *out.trace, out.result, path, 20);
  print_summary(os, out.result);
  return true;
}

void SuiteRun::after_case(std::ostream& os, const bench::Result& r) const {
  if (r.params.value("kind", std::string()) != "mlp") {
    if (r.metrics.contains("tflops"))
      os << "    " << bench::format_fixed(r.metrics["tflops"].get<double>(), 3) << " TFLOP/s\n";
    return;
  }
  print_summary(os, r);
  if (!profile_table_.empty())
    os << "    profile (" << r.extra["profile"]["sort_by"].get<std::string>() << "), trace "
       << r.extra["profile"]["trace_file"].get<std::string>() << ", stacks "
       << r.extra["profile"]["stacks_file"].get<std::string>() << ":\n"
       << profile_table_;
}

void SuiteRun::report(std::ostream& os, bench::ResultSet& set) const {
  set.blocks["studies"] = studies_json(set.results);
  if (set.blocks["studies"].empty()) set.blocks.erase("studies");
  os << "\n== MLP figures (per call; forward and backward per step) ==\n";
  print_figures(os, set.results, both_modes_);
  if (set.blocks.contains("studies")) print_studies(os, set.blocks["studies"], both_modes_);
}

}  // namespace mlp
