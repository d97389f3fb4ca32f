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
#include "models/mlp/report.hpp"
#include "models/mlp/scaling.hpp"
#include "models/mlp/settings.hpp"
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
  mlp::Settings settings;
  bool no_ceiling = false;
  std::vector<std::string> backends;
  int num_warmups = -1, num_trials = -1, phase_steps = 10;
  std::int64_t ceiling_n_cpu = 1024, ceiling_n_cuda = 8192;
  std::string profile_dir;
};

int run(const Options& o, const CLI::App& app, const std::string& command_head) {
  const bench::DriverOptions& c = o.common;
  bench::Suite<mlp::Problem, mlp::RegistryEntry> s;
  s.program = "mymlp";
  s.command_head = command_head;
  s.backends = o.backends;
  s.known_backends = mlp::known_backend_names();
  s.make_registry = [] { return mlp::make_registry(); };
  s.problems = [&](std::vector<std::string>*) {
    std::vector<mlp::Problem> problems = mlp::expand(o.settings);
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
      system["mlp_matmul_ceiling"] =
          mlp::measure_ceilings(sel, problems, o.ceiling_n_cpu, o.ceiling_n_cuda);
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
    mlp::print_problem(std::cout, problem);
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
      mlp::CaseOutput out =
          mlp::run_matmul_case(e.backend.get(), e.name, e.device, e.why_missing,
                               std::get<mlp::MatmulProblem>(problem), matmul_data, options);
      mlp::fill_metrics(out.result, mlp::ceiling_of(ceilings, out.result));
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
    // One profile per case: with --timing both, of its real-mode run (the files are named by
    // backend and problem).
    const bool profiled = !o.profile_dir.empty() && !mlp::in_study(problem) && e.backend &&
                          !(c.timing == "both" && options.timing == bench::TimingMode::pure);
    if (profiled && e.backend->profiler() == "libtorch") {
#if MYCONV_HAVE_TORCH
      settings.profile = [&](mlp::Instance& inst, bench::Result& r) {
        const mlp::ProfileOutput po =
            mlp::profile_libtorch([&] { inst.run_for_profile(); }, [&] { inst.sync(); },
                                  e.device == "cuda", o.profile_dir, mlp::file_stem(r));
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
    mlp::fill_metrics(out.result, mlp::ceiling_of(ceilings, out.result));
    if (!out.trace || session.case_options.trace)
      return bench::CaseRun{std::move(out.result), out.trace};
    // The CUPTI profile of this case, recorded here.
    const std::string path =
        (std::filesystem::path(o.profile_dir) / (mlp::file_stem(out.result) + ".trace.json"))
            .string();
    bench::write_chrome_trace(path, *out.trace, out.result);
    out.result.extra["profile"] = {{"profiler", "CUPTI (core/cuda/cupti_tracer)"},
                                   {"trace_file", path}};
    bench::print_result_block(std::cout, out.result);
    bench::print_debug_block(std::cout, *out.trace, out.result, path, 20);
    mlp::print_summary(std::cout, out.result);
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
    mlp::print_summary(std::cout, r);
    if (!profile_table.empty())
      std::cout << "    profile (" << r.extra["profile"]["sort_by"].get<std::string>()
                << "), trace " << r.extra["profile"]["trace_file"].get<std::string>() << ", stacks "
                << r.extra["profile"]["stacks_file"].get<std::string>() << ":\n"
                << profile_table;
  };
  s.report = [&](bench::Session& session) {
    auto& set = session.set;
    set.blocks["studies"] = mlp::studies_json(set.results);
    if (set.blocks["studies"].empty()) set.blocks.erase("studies");
    std::cout << "\n== MLP figures (per call; forward and backward per step) ==\n";
    const bool modes = c.timing == "both";
    mlp::print_figures(std::cout, set.results, modes);
    if (set.blocks.contains("studies")) mlp::print_studies(std::cout, set.blocks["studies"], modes);
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
  app.add_option("--dim", o.settings.dim, "Width of every Linear layer")
      ->capture_default_str()
      ->check(size);
  app.add_option("--num-layers", o.settings.num_layers, "Layers")
      ->capture_default_str()
      ->check(size);
  app.add_option("--batch-size", o.settings.batch_size, "Rows of the input")
      ->capture_default_str()
      ->check(size);
  app.add_option("--num-steps", o.settings.num_steps, "Steps (forward, loss, backward) per call")
      ->capture_default_str()
      ->check(size);
  app.add_flag("--example", o.settings.example,
               "Also run the configuration of --dim/--num-layers/--batch-size/--num-steps with "
               "--scale, --matmul or --problem (alone it runs by default)");
  app.add_option("--problem", o.settings.problems,
                 "Descriptor, e.g. mlp:d128l16b128s5:bf16 or mm:n4096 (repeatable)");
  app.add_option("--scale", o.settings.scale,
                 "Scaling studies: num_steps num_layers batch_size dim, or all (list); factors "
                 "2..5 from --base")
      ->delimiter(',');
  app.add_option("--base", o.settings.base, "Base of the scaling studies (key=value list)")
      ->capture_default_str();
  app.add_flag("--matmul", o.settings.matmul,
               "Square matmuls over --matmul-dims for each implementation");
  app.add_option("--matmul-dims", o.settings.matmul_dims, "Sizes of --matmul (list)")
      ->capture_default_str()
      ->delimiter(',')
      ->check(size);
  app.add_option("--dtype", o.settings.dtypes, "Data types: fp32 tf32 bf16 (list)")
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
    o.settings.dims_given = app.count("--dim") || app.count("--num-layers") ||
                            app.count("--batch-size") || app.count("--num-steps");
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
