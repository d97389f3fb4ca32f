// mymlp: the lecture's MLP benchmark (run_mlp: num_layers x (Linear(dim, dim) -> GeLU), each step a
// forward pass, the mean loss and a backward pass) through LibTorch eager (CPU, CUDA), LibTorch
// replaying a CUDA graph, and cuBLASLt with fused epilogues; per implementation the time per call,
// per step with the forward and the backward apart, the TFLOP/s against the measured matmul
// ceiling, the peak memory, and the gradients checked against float64. Also the lecture's scaling
// studies (--scale), square matmuls (--matmul) and profile (--profile).
//
//   mymlp --dim 128 --num-layers 16 --batch-size 128 --num-steps 5     the lecture's example
//   mymlp --scale all --base dim=256,num_layers=4,batch_size=256,num_steps=2
//   mymlp --matmul --dtype fp32,bf16
//   mymlp --profile prof/
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>

#include "core/driver_loop.hpp"
#include "core/error.hpp"
#include "core/option_checks.hpp"
#include "core/paths.hpp"
#include "core/printers.hpp"
#include "core/system_info.hpp"
#include "core/trace_report.hpp"
#include "experiments/registry/mlp.hpp"
#include "models/mlp/bench.hpp"
#include "models/mlp/scaling.hpp"
#if MYCONV_HAVE_TORCH
#include "models/mlp/profile.hpp"
#include "models/mlp/ref_mlp.hpp"
#endif
#if MYCONV_HAVE_CUPTI
#include "core/cuda/cupti_tracer.hpp"
#endif

namespace {

using bench::UsageError;

struct Options {
  bench::DriverOptions common;
  std::int64_t dim = 128, num_layers = 16, batch_size = 128, num_steps = 5;
  bool example = false, matmul = false, no_ceiling = false;
  std::vector<std::string> problems, scale, dtypes = {"fp32"}, backends;
  std::string base = "dim=256,num_layers=4,batch_size=256,num_steps=2";
  std::vector<std::int64_t> matmul_dims = {1024, 2048, 4096, 8192, 16384};
  int num_warmups = -1, num_trials = -1, phase_steps = 10;
  std::int64_t ceiling_n_cpu = 1024, ceiling_n_cuda = 8192;
  std::string profile_dir;
};

std::string problem_flops_text(const mlp::Problem& p) {
  return std::visit(
      [](const auto& x) {
        return bench::format_fixed(x.flops() / 1e9, 3) + " GFLOP per call, " +
               bench::format_fixed(x.bytes() / 1e6, 2) + " MB moved at least";
      },
      p);
}

bool in_study(const mlp::Problem& p) {
  const std::string n = std::visit([](const auto& x) { return x.name; }, p);
  return n == "base" || n.rfind("scale_", 0) == 0;
}

// Settings -> problems, in order, without duplicates.
std::vector<mlp::Problem> expand(const Options& o, const CLI::App& app,
                                 const std::vector<bench::DataType>& dtypes) {
  std::vector<mlp::Problem> out;
  std::set<std::string> seen;
  auto add = [&](const mlp::Problem& p) {
    if (seen.insert(mlp::str_with_name(p)).second) out.push_back(p);
  };
  const bool dims_given = app.count("--dim") || app.count("--num-layers") ||
                          app.count("--batch-size") || app.count("--num-steps");
  const bool run_example =
      o.example || dims_given || (o.problems.empty() && o.scale.empty() && !o.matmul);
  for (const auto dt : dtypes) {
    for (const auto& d : o.problems) {
      try {
        add(mlp::parse_problem(d, dt));
      } catch (const UsageError& e) {
        throw UsageError(std::string("--problem: ") + e.what());
      }
    }
    if (run_example) {
      mlp::MlpProblem p;
      p.dim = o.dim;
      p.num_layers = o.num_layers;
      p.batch_size = o.batch_size;
      p.num_steps = o.num_steps;
      p.dtype = dt;
      if (const std::string why = p.validate(); !why.empty()) throw UsageError(why);
      if (!dims_given) p.name = "example";  // the lecture's example
      add(p);
    }
    if (!o.scale.empty())
      for (const auto& p : mlp::study_problems(mlp::parse_base(o.base, dt), o.scale)) add(p);
    if (o.matmul)
      for (const auto n : o.matmul_dims) {
        mlp::MatmulProblem p;
        p.n = n;
        p.dtype = dt;
        if (const std::string why = p.validate(); !why.empty())
          throw UsageError("--matmul-dims: " + why);
        add(p);
      }
  }
  return out;
}

// The measured matmul ceiling of each (device, dtype): the best TFLOP/s of every available
// backend's GEMM on a square matmul (best of 3 synchronized calls after one warm-up).
nlohmann::ordered_json measure_ceilings(const Options& o,
                                        const std::vector<const mlp::RegistryEntry*>& selected,
                                        const std::vector<mlp::Problem>& problems) {
  nlohmann::ordered_json out = {
      {"method", "best over the implementations' GEMMs (torch::mm, cuBLASLt) of a square " +
                     std::to_string(o.ceiling_n_cpu) + "^3 (cpu) or " +
                     std::to_string(o.ceiling_n_cuda) +
                     "^3 (cuda) matmul, random inputs, best of 3 synchronized calls after one "
                     "warm-up, host clock"}};
  std::set<std::pair<std::string, std::string>> done;
  for (const auto& p : problems)
    for (const auto* e : selected) {
      if (!e->backend || !e->backend->available().ok) continue;
      const bench::DataType dt = mlp::dtype_of(p);
      const std::string d = bench::to_string(dt);
      mlp::MatmulProblem mm;
      mm.n = e->device == "cuda" ? o.ceiling_n_cuda : o.ceiling_n_cpu;
      mm.dtype = dt;
      if (!e->backend->check_matmul_support(mm).ok) continue;
      if (!done.insert({e->name, d}).second) continue;
      try {
        std::cout << "measuring the matmul ceiling: " << e->name << " " << mm.str() << "...\n";
        const mlp::MatmulData data = mlp::make_matmul_data(mm, 1);
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

// The lecture's numbers of one passed MLP case, after its result block.
void print_mlp_summary(std::ostream& os, const bench::Result& r) {
  if (r.status != bench::Status::passed) return;
  const auto& m = r.metrics;
  const auto& p = r.params;
  const bench::Summary& s = r.gpu_time_ms ? *r.gpu_time_ms : *r.total_time_ms;
  os << "    config: dim " << p["dim"] << ", num_layers " << p["num_layers"] << ", batch_size "
     << p["batch_size"] << ", num_steps " << p["num_steps"] << ", " << r.dtype << "\n"
     << "    run_mlp: median " << bench::format_ms(s.median) << " ms, mean "
     << bench::format_ms(s.mean) << ", min " << bench::format_ms(s.min) << ", spread (p90-p10) "
     << bench::format_ms(s.p90 - s.p10) << " over " << s.samples << " trials ("
     << (r.gpu_time_ms ? "GPU" : "total") << " time)\n";
  if (m.contains("forward_ms"))
    os << "    per step: " << bench::format_ms(m.value("step_ms", 0.0)) << " ms = forward "
       << bench::format_ms(m["forward_ms"].get<double>()) << " + backward "
       << bench::format_ms(m["backward_ms"].get<double>()) << " (split measured apart)\n";
  if (m.contains("tflops"))
    os << "    " << bench::format_fixed(m["tflops"].get<double>(), 3)
       << " TFLOP/s (6*B*D^2*L*S = " << r.flop / 1e9 << " GFLOP)"
       << (m.contains("ceiling_tflops")
               ? ", ceiling " + bench::format_fixed(m["ceiling_tflops"].get<double>(), 3) +
                     " TFLOP/s: " +
                     bench::format_fixed(100 * m["fraction_of_ceiling"].get<double>(), 1) + "%"
               : std::string(", no ceiling measured"))
       << "\n";
  os << "    peak memory: "
     << (m.contains("peak_memory_bytes")
             ? bench::format_fixed(m["peak_memory_bytes"].get<double>() / (1 << 20), 1) + " MiB"
             : r.extra.value("peak_memory_not_measured", std::string("n/a")))
     << "\n";
}

// row with, where modes, a timing column (`timing`, else its header) inserted at `at`.
std::vector<std::string> with_timing(std::vector<std::string> row, std::size_t at, bool modes,
                                     const std::string& timing = "timing") {
  if (modes) row.insert(row.begin() + static_cast<std::ptrdiff_t>(at), timing);
  return row;
}

// With --timing both (modes), a timing column in this table and the next.
void print_studies(std::ostream& os, const nlohmann::ordered_json& studies, bool modes) {
  if (studies.empty()) return;
  os << "\n== Scaling studies: time = a x factor^b, least squares in log-log ==\n";
  bench::Table t(with_timing({"backend", "dtype", "parameter", "factors", "times ms", "b", "R^2",
                              "expected"},
                             2, modes));
  for (const auto& s : studies) {
    std::string f, ms;
    for (std::size_t i = 0; i < s["factors"].size(); ++i) {
      f += (i ? "," : "") + bench::format_fixed(s["factors"][i].get<double>(), 0);
      ms += (i ? "," : "") + bench::format_ms(s["time_ms"][i].get<double>(), 3);
    }
    t.add_row(with_timing({s["backend"], s["dtype"], s["parameter"], f, ms,
                           bench::format_fixed(s["fit_exponent"].get<double>(), 3),
                           bench::format_fixed(s["fit_r2"].get<double>(), 4),
                           bench::format_fixed(s["expected_exponent"].get<double>(), 0)},
                          2, modes, s["timing"]));
  }
  t.print(os);
}

void print_mlp_figures(std::ostream& os, const std::vector<bench::Result>& results, bool modes) {
  bench::Table t(with_timing({"problem", "name", "backend", "status", "ms/call", "fwd ms",
                              "bwd ms", "TFLOP/s", "% ceiling", "peak MiB"},
                             3, modes));
  for (const auto& r : results) {
    const auto& m = r.metrics;
    auto num = [&](const char* k, double scale, int digits) {
      return m.contains(k) ? bench::format_fixed(m[k].get<double>() * scale, digits)
                           : std::string("-");
    };
    t.add_row(with_timing({r.problem, r.name, r.backend, bench::to_string(r.status),
                           bench::format_ms(r.primary_time_ms()), num("forward_ms", 1, 4),
                           num("backward_ms", 1, 4), num("tflops", 1, 3),
                           num("fraction_of_ceiling", 100, 1),
                           num("peak_memory_bytes", 1.0 / (1 << 20), 1)},
                          3, modes, r.timing_mode));
  }
  t.print(os);
}

std::string file_stem(const bench::Result& r) {
  std::string s = r.backend + "." + r.problem + (r.name.empty() ? "" : "." + r.name);
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return s;
}

int run(const Options& o, const CLI::App& app, const std::string& command_head) {
  const bench::DriverOptions& c = o.common;
  bench::Suite<mlp::Problem, mlp::RegistryEntry> s;
  s.program = "mymlp";
  s.command_head = command_head;
  s.backends = o.backends;
  s.known_backends = mlp::known_backend_names();
  s.make_registry = [] { return mlp::make_registry(); };
  s.problems = [&](std::vector<std::string>*) {
    std::vector<bench::DataType> dtypes;
    for (const auto& d : o.dtypes) {
      const bench::DataType dt = bench::parse_data_type(d);
      if (!mlp::is_mlp_dtype(dt))
        throw UsageError("--dtype: " + d + " is not one of the MLP suite's: fp32, tf32, bf16");
      dtypes.push_back(dt);
    }
    std::vector<mlp::Problem> problems = expand(o, app, dtypes);
    if (!c.list_cases) bench::check_output_dir("--profile", o.profile_dir);
    return problems;
  };
  s.name_of = [](const mlp::Problem& p) { return mlp::str_with_name(p); };
  s.memory_need = [](const mlp::Problem& p, bool gpu) { return mlp::memory_need(p, gpu); };
  s.identity = [](const mlp::RegistryEntry& e, const mlp::Problem& p,
                  const bench::CaseOptions& options) {
    return mlp::make_result(e.name, e.device, p, options);
  };
  bool uses_gpu = false;
  // The ceiling's matmuls, measured first, must fit.
  s.before_session = [&](const std::vector<const mlp::RegistryEntry*>& selected,
                         const bench::MemoryGate& memory) {
    for (const auto* e : selected) {
      uses_gpu = uses_gpu || (e->backend && e->device == "cuda");
      if (!e->backend || o.no_ceiling || c.list_cases) continue;
      mlp::MatmulProblem mm;
      mm.n = e->device == "cuda" ? o.ceiling_n_cuda : o.ceiling_n_cpu;
      if (const std::string why = bench::memory_shortfall(mlp::memory_need(mm, e->device == "cuda"),
                                                          memory.available());
          !why.empty())
        throw UsageError(std::string(e->device == "cuda" ? "--ceiling-n" : "--ceiling-n-cpu") +
                         ": the ceiling matmul " + mm.str() + " does not fit in memory: " + why +
                         " (--no-ceiling measures none)");
    }
    if (!c.list_cases) bench::make_output_dir("--profile", o.profile_dir);
    return false;
  };
  nlohmann::ordered_json ceilings;
#if MYCONV_HAVE_CUPTI
  // --profile of a backend CUPTI sees (cuBLASLt): the core's tracer, kernels and copies.
  bench::TraceConfig cupti_config;
  std::unique_ptr<bench::ActivitySource> cupti;
#endif
  s.before_cases = [&](bench::Session& session, const std::vector<const mlp::RegistryEntry*>& sel,
                       const std::vector<mlp::Problem>& problems) {
    auto& system = session.set.system;
    if (o.no_ceiling)
      system["mlp_matmul_ceiling"] = {{"why", "not measured (--no-ceiling)"}};
    else
      system["mlp_matmul_ceiling"] = measure_ceilings(o, sel, problems);
    ceilings = system["mlp_matmul_ceiling"];
#if MYCONV_HAVE_CUPTI
    if (!o.profile_dir.empty() && uses_gpu && !session.case_options.trace) {
      cupti = bench::make_cupti_activity_source();
      cupti_config.device_activity = cupti.get();
      cupti_config.calls = 1;
    }
#endif
  };
  mlp::MlpData mlp_data;
  mlp::MatmulData matmul_data;
  std::map<mlp::Gelu, mlp::Reference> refs;
  s.begin_problem = [&](bench::Session& session, const mlp::Problem& problem, bool host_fits) {
    std::cout << "\n== " << mlp::str_with_name(problem) << ": " << problem_flops_text(problem)
              << " ==\n";
    refs.clear();
    if (const auto* p = std::get_if<mlp::MlpProblem>(&problem))
      mlp_data = bench::timed_reference(
          session, [&] { return host_fits ? mlp::make_data(*p, c.seed) : mlp::MlpData{}; });
    else
      matmul_data = bench::timed_reference(session, [&] {
        const auto& mm = std::get<mlp::MatmulProblem>(problem);
        return host_fits ? mlp::make_matmul_data(mm, c.seed) : mlp::MatmulData{};
      });
  };
  std::string profile_table;
  s.run = [&](bench::Session& session, const mlp::RegistryEntry& e, const mlp::Problem& problem,
              bench::CaseOptions options) -> std::optional<bench::CaseRun> {
    const auto* p = std::get_if<mlp::MlpProblem>(&problem);
    if (!p) {
      mlp::CaseOutput out = mlp::run_matmul_case(e.backend.get(), e.name, e.device, e.why_missing,
                                                 std::get<mlp::MatmulProblem>(problem),
                                                 matmul_data, options);
      mlp::fill_metrics(out.result, ceiling_of(ceilings, out.result));
      return bench::CaseRun{std::move(out.result), out.trace};
    }
    mlp::MlpCaseSettings settings;
    settings.phase_steps = o.phase_steps;
    settings.reference = [&](mlp::Gelu g) -> const mlp::Reference& {
      auto it = refs.find(g);
      if (it != refs.end()) return it->second;
#if MYCONV_HAVE_TORCH
      return refs.emplace(g, mlp::reference(*p, mlp_data, g)).first->second;
#else
      throw std::runtime_error("no float64 reference: LibTorch is not built");
#endif
    };
    profile_table.clear();
    const bool profiled = !o.profile_dir.empty() && !in_study(problem) && e.backend;
    if (profiled && e.backend->profiler() == "libtorch") {
#if MYCONV_HAVE_TORCH
      settings.profile = [&](mlp::Instance& inst, bench::Result& r) {
        const mlp::ProfileOutput po =
            mlp::profile_libtorch([&] { inst.run_for_profile(); }, [&] { inst.sync(); },
                                  e.device == "cuda", o.profile_dir, file_stem(r));
        r.extra["profile"] = mlp::to_json(po);
        profile_table = po.table;
      };
#endif
    }
#if MYCONV_HAVE_CUPTI
    if (profiled && e.backend->profiler() == "cupti" && cupti) options.trace = &cupti_config;
#endif
    mlp::CaseOutput out = mlp::run_mlp_case(e.backend.get(), e.name, e.device, e.why_missing, *p,
                                            mlp_data, settings, options);
    mlp::fill_metrics(out.result, ceiling_of(ceilings, out.result));
    if (!out.trace || session.case_options.trace)
      return bench::CaseRun{std::move(out.result), out.trace};
    // The CUPTI profile of this case, recorded here.
    const std::string path =
        (std::filesystem::path(o.profile_dir) / (file_stem(out.result) + ".trace.json")).string();
    bench::write_chrome_trace(path, *out.trace, out.result);
    out.result.extra["profile"] = {{"profiler", "CUPTI (core/cuda/cupti_tracer)"},
                                   {"trace_file", path}};
    bench::print_result_block(std::cout, out.result);
    bench::print_debug_block(std::cout, *out.trace, out.result, path, 20);
    print_mlp_summary(std::cout, out.result);
    session.set.results.push_back(std::move(out.result));
    bench::write_results(session);
    return std::nullopt;
  };
  s.after_case = [&](bench::Session&, const bench::Result& r) {
    if (r.params.value("kind", std::string()) != "mlp") {
      if (r.metrics.contains("tflops"))
        std::cout << "    " << bench::format_fixed(r.metrics["tflops"].get<double>(), 3)
                  << " TFLOP/s\n";
      return;
    }
    print_mlp_summary(std::cout, r);
    if (!profile_table.empty())
      std::cout << "    profile (" << r.extra["profile"]["sort_by"].get<std::string>()
                << "), trace " << r.extra["profile"]["trace_file"].get<std::string>()
                << ", stacks " << r.extra["profile"]["stacks_file"].get<std::string>() << ":\n"
                << profile_table;
  };
  s.report = [&](bench::Session& session) {
    auto& set = session.set;
    set.blocks["studies"] = mlp::studies_json(set.results);
    if (set.blocks["studies"].empty()) set.blocks.erase("studies");
    std::cout << "\n== MLP figures (per call; forward and backward per step) ==\n";
    const bool modes = c.timing == "both";
    print_mlp_figures(std::cout, set.results, modes);
    if (set.blocks.contains("studies")) print_studies(std::cout, set.blocks["studies"], modes);
  };
  s.written = {{o.profile_dir, "profiles"}};
  return bench::run_suite(app, c, s);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "mymlp: the lecture's MLP benchmark (run_mlp) through LibTorch eager, a CUDA graph and "
      "cuBLASLt: time per call and per step (forward, backward), TFLOP/s against the measured "
      "matmul ceiling, peak memory, gradients checked against float64; scaling studies, square "
      "matmuls and a profile"};
  bench::add_version_flag(app);
  // Sizes: integers from 1; the problem's own check bounds them (models/mlp/problem.hpp).
  const auto size = bench::integer_in(1, std::numeric_limits<std::int64_t>::max());
  app.add_option("--dim", o.dim, "Width of every Linear layer")->capture_default_str()->check(size);
  app.add_option("--num-layers", o.num_layers, "Layers")->capture_default_str()->check(size);
  app.add_option("--batch-size", o.batch_size, "Rows of the input")
      ->capture_default_str()
      ->check(size);
  app.add_option("--num-steps", o.num_steps, "Steps (forward, loss, backward) per call")
      ->capture_default_str()
      ->check(size);
  app.add_flag("--example", o.example,
               "Also run the configuration of --dim/--num-layers/--batch-size/--num-steps with "
               "--scale, --matmul or --problem (alone it runs by default)");
  app.add_option("--problem", o.problems,
                 "Descriptor, e.g. mlp:d128l16b128s5:bf16 or mm:n4096 (repeatable)");
  app.add_option("--scale", o.scale,
                 "Scaling studies: num_steps num_layers batch_size dim, or all (list); factors "
                 "2..5 from --base")
      ->delimiter(',');
  app.add_option("--base", o.base, "Base of the scaling studies (key=value list)")
      ->capture_default_str();
  app.add_flag("--matmul", o.matmul, "Square matmuls over --matmul-dims for each implementation");
  app.add_option("--matmul-dims", o.matmul_dims, "Sizes of --matmul (list)")
      ->capture_default_str()
      ->delimiter(',')
      ->check(size);
  app.add_option("--dtype", o.dtypes, "Data types: fp32 tf32 bf16 (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--backend", o.backends, "Backends to run (list; default: all built)")
      ->delimiter(',');
  app.add_option("--num-warmups", o.num_warmups,
                 "The lecture's fixed warm-up count (default: the core's --warmup)")
      ->check(bench::integer_in(0, std::numeric_limits<int>::max()));
  app.add_option("--num-trials", o.num_trials,
                 "The lecture's fixed trial count: exactly this many samples, no adaptive stop")
      ->check(bench::integer_in(2, 1000000));
  app.add_option("--phase-steps", o.phase_steps, "Steps timed for the forward/backward split")
      ->capture_default_str()
      ->check(bench::integer_in(1, 1000000));
  app.add_option("--profile", o.profile_dir,
                 "Profile the cases outside scaling studies into DIR: top-ops table, Chrome "
                 "trace, flame-graph stacks (LibTorch profiler; CUPTI for cuBLASLt)");
  app.add_flag("--no-ceiling", o.no_ceiling,
               "Do not measure the matmul ceiling (no fraction of ceiling)");
  // The ceiling's matmuls are the suite's square matmuls: n up to 2^17 (mm:n<size>).
  app.add_option("--ceiling-n", o.ceiling_n_cuda, "Size of the GPU ceiling matmul")
      ->capture_default_str()
      ->check(bench::integer_in(1, 131072));
  app.add_option("--ceiling-n-cpu", o.ceiling_n_cpu, "Size of the CPU ceiling matmul")
      ->capture_default_str()
      ->check(bench::integer_in(1, 131072));
  bench::add_common_options(app, o.common);

  return bench::run_main(app, argc, argv, "mymlp", [&] {
    o.backends = bench::canonical_backend_names(o.backends);  // older names too
    std::string prefix = "mymlp";
    if (o.num_warmups >= 0) prefix += " --num-warmups " + std::to_string(o.num_warmups);
    if (o.num_trials >= 0) prefix += " --num-trials " + std::to_string(o.num_trials);
    (void)bench::check_common_options(app, o.common);
    if (o.num_warmups >= 0) o.common.measure.warmup_iters = o.num_warmups;
    if (o.num_trials >= 0) {  // the lecture's fixed count: no adaptive stop
      auto& m = o.common.measure;
      m.min_iters = m.max_iters = o.num_trials;
      m.min_time_ms = 0;
      m.max_time_ms = 1e12;
      m.target_cv = 0;
    }
    return run(o, app, prefix);
  });
}
