// myops: runs tensor ops (elementwise, activation, reduction, normalization, matmul, memory)
// through our CUDA kernels, PyTorch (LibTorch), CUB, cuBLASLt and oneDNN, and reports per case the
// GPU, CPU and total time, the bandwidth against the machine's measured copy bandwidth, the
// speed-up against PyTorch with Genesis's score band, and the correctness against float64.
//
//   myops                                   every op, size class medium, fp32
//   myops --category reduction --size all --dtype fp32,bf16
//   myops --problem sum:4x512x896:axis=2 --backend own_cuda --backend libtorch_cuda
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <CLI/CLI.hpp>

#include "core/driver.hpp"
#include "core/error.hpp"
#include "core/paths.hpp"
#include "core/peak.hpp"
#include "core/printers.hpp"
#include "core/system_info.hpp"
#include "experiments/registry/ops.hpp"
#include "ops/bench.hpp"
#include "ops/score.hpp"
#include "ops/settings.hpp"
#if MYCONV_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "baselines/ops/matmul_ceiling.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_peak.hpp"
#endif

namespace {

using bench::UsageError;

struct Options {
  bench::DriverOptions common;  // measurement, timing, seed, outputs, listing, source, tracing
  ops::Settings settings;
  std::vector<std::string> dtypes = {"fp32"};
  std::vector<std::string> backends;
  ops::BackendOptions backend_options;
  std::string markdown_path;
  bool fast = false, list_ops = false, no_peaks = false;
};

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

void print_op_list() {
  bench::Table t({"category", "op", "example"});
  const std::map<ops::Category, std::string> example = {
      {ops::Category::element, "add:4096x4096+1x4096"},
      {ops::Category::activation, "gelu_tanh:4096x4096:bf16"},
      {ops::Category::reduction, "sum:4x512x896:axis=2"},
      {ops::Category::normalization, "layernorm:4x512x896"},
      {ops::Category::matmul, "matmul:m4096n4096k4096:bf16"},
      {ops::Category::memory, "permute:16x512x512:perm=0,2,1"}};
  for (ops::Op op : ops::all_ops()) {
    const ops::Category c = ops::category_of(op);
    std::string e = example.at(c);
    e = ops::to_string(op) + e.substr(e.find(':'));
    t.add_row({ops::to_string(c), ops::to_string(op), e});
  }
  t.print(std::cout);
  const std::string dir = ops::ops_list_dir();
  std::cout << "size classes (--size): " << join(ops::size_classes())
            << ", all (every class but xlarge)\nop lists: "
            << (dir.empty() ? "not found (set MYCONV_OPS_DIR)" : dir) << "\n";
}

// The machine's measured limits, once, for the devices the selected backends run on.
void measure_limits(bench::ResultSet& set, bool cpu, bool gpu,
                    const std::vector<bench::DataType>& matmul_dtypes) {
  if (cpu) {
    std::cout << "measuring the host's copy bandwidth (STREAM copy)...\n";
    set.system["bandwidth"]["cpu"] = bench::measure_cpu_copy_bandwidth();
  }
#if MYCONV_HAVE_CUDA
  if (gpu && bench::cuda_device_available().ok) {
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) device = 0;
    std::cout << "measuring device " << device << "'s copy bandwidth (device-to-device copy)...\n";
    set.system["bandwidth"]["cuda"] =
        nlohmann::ordered_json::array({bench::measure_cuda_copy_bandwidth(device)});
    if (!matmul_dtypes.empty()) {
      std::cout << "measuring the matmul ceiling (cuBLASLt)...\n";
      set.system["matmul_ceiling"] = ops::measure_matmul_ceiling(matmul_dtypes);
    }
  }
#else
  (void)gpu;
  (void)matmul_dtypes;
#endif
}

// One line per passed case: time, GB/s, % of the measured peak, speed-up and band.
void print_scores(std::ostream& os, const std::vector<bench::Result>& results) {
  bench::Table t(
      {"problem", "backend", "timing", "status", "ms", "GB/s", "% peak", "vs_pytorch", "band"});
  for (const auto& r : results) {
    const auto& m = r.metrics;
    auto num = [&](const char* key, double scale, int digits) {
      return m.contains(key) ? bench::format_fixed(m[key].get<double>() * scale, digits)
                             : std::string("-");
    };
    t.add_row({r.problem, r.backend, r.timing_mode, bench::to_string(r.status),
               bench::format_ms(r.primary_time_ms()), num("bandwidth_gbs", 1, 1),
               num("bandwidth_efficiency", 100, 1),
               m.contains("speedup_vs_pytorch") ? num("speedup_vs_pytorch", 1, 2) + "x" : "-",
               m.value("score_band", std::string("-"))});
  }
  t.print(os);
}

void write_markdown(const std::string& path, const bench::ResultSet& set) {
  std::ostringstream md;
  md << "# myops results\n\n"
     << "Host " << set.system.value("host", std::string("?")) << ", source " << bench::git_commit()
     << ". Full report: `scripts/analyze_results.py` on the --json file.\n\n"
     << "| problem | dtype | backend | timing | status | ms | GB/s | % of measured peak | "
        "vs PyTorch | band | reason |\n"
     << "|---|---|---|---|---|---:|---:|---:|---:|---|---|\n";
  for (const auto& r : set.results) {
    const auto& m = r.metrics;
    auto num = [&](const char* key, double scale, int digits) {
      return m.contains(key) ? bench::format_fixed(m[key].get<double>() * scale, digits)
                             : std::string("");
    };
    md << "| `" << r.problem << "` | " << r.dtype << " | " << r.backend << " | " << r.timing_mode
       << " | " << bench::to_string(r.status) << " | " << bench::format_ms(r.primary_time_ms())
       << " | " << num("bandwidth_gbs", 1, 1) << " | " << num("bandwidth_efficiency", 100, 1)
       << " | " << num("speedup_vs_pytorch", 1, 2) << " | " << m.value("score_band", std::string())
       << " | " << (r.status == bench::Status::passed ? "" : r.reason) << " |\n";
  }
  bench::write_file_atomic(path, md.str());
}

// The case options of one timing mode: with --timing both, each case's command names the mode it
// ran in.
bench::CaseOptions options_for(const bench::CaseOptions& base, bench::TimingMode mode) {
  bench::CaseOptions options = base;
  options.timing = mode;
  std::string& prefix = options.command_prefix;
  if (const auto at = prefix.find(" --timing both"); at != std::string::npos)
    prefix.replace(at, 14, mode == bench::TimingMode::pure ? " --timing pure" : "");
  return options;
}

int run(const Options& o, const std::string& command_prefix) {
  const bench::DriverOptions& c = o.common;
  if (bench::handle_source_options(c)) return 0;
  if (o.list_ops) {
    print_op_list();
    return 0;
  }
  std::vector<ops::RegistryEntry> registry = ops::make_registry(o.backend_options);
  if (c.list_backends) {
    bench::print_backend_list(std::cout, registry);
    return 0;
  }

  // Validate everything before the first case runs, so bad input leaves no partial output.
  bench::check_backend_names(o.backends, ops::known_backend_names());
  bench::check_output_file("--markdown", o.markdown_path);
  std::vector<std::string> notes;
  const std::vector<ops::Problem> problems = ops::expand(o.settings, &notes);
  for (const auto& n : notes) std::cerr << "myops: note: " << n << "\n";

  // Run order: PyTorch first on each device, so that every other backend's score is at hand
  // when its case ends.
  std::vector<const ops::RegistryEntry*> selected =
      bench::select_backends(registry, o.backends, c.available_only);
  std::stable_sort(selected.begin(), selected.end(), [](const auto* a, const auto* b) {
    auto key = [](const ops::RegistryEntry* e) {
      return 2 * (e->device == "cuda") + (e->name != ops::reference_backend(e->device));
    };
    return key(a) < key(b);
  });
  auto uses = [&](const std::string& device) {
    return std::any_of(selected.begin(), selected.end(),
                       [&](const auto* e) { return e->backend && e->device == device; });
  };
  // Every case that would run against the memory here (core/memory_fit.hpp): when none fits,
  // exit 2; the others' cases are recorded unsupported below. Listing runs nothing.
  auto need_of = [](const ops::Problem& p, const ops::RegistryEntry& e) {
    return ops::memory_need(p, e.device == "cuda");
  };
  const bench::MemoryGate memory = bench::gate_cases(
      c.list_cases, uses("cuda"), problems, selected,
      [](const ops::Problem& p) { return p.str_with_name(); }, need_of);

  bench::Session session;
  bench::start_session(session, c, uses("cuda"), command_prefix);
  bench::ResultSet& set = session.set;
  std::vector<bench::TimingMode> modes = {session.case_options.timing};
  if (c.timing == "both") modes = {bench::TimingMode::real, bench::TimingMode::pure};

  if (c.list_cases) {
    for (const auto& p : problems)
      for (const auto mode : modes)
        for (const auto* e : selected) {
          const bench::CaseOptions options = options_for(session.case_options, mode);
          std::cout << bench::to_json(ops::make_result(e->name, e->device, p, options)).dump()
                    << "\n";
        }
    return 0;
  }
  for (const auto* e : selected)
    if (e->backend) set.system["libraries"][e->name] = e->backend->library_version();

  std::cout << "myops " << bench::project_version() << " (" << bench::git_commit() << ") on "
            << set.system["host"].get<std::string>() << ", "
            << set.system["cpu_model"].get<std::string>() << "\n";
  if (!o.no_peaks) {
    std::vector<bench::DataType> matmul_dtypes;
    for (const auto& p : problems)
      if (p.op == ops::Op::matmul &&
          std::find(matmul_dtypes.begin(), matmul_dtypes.end(), p.dtype) == matmul_dtypes.end())
        matmul_dtypes.push_back(p.dtype);
    measure_limits(set, uses("cpu"), uses("cuda"), matmul_dtypes);
  } else {
    set.system["bandwidth"] = {{"why", "not measured (--no-peaks)"}};
  }
  bench::write_results(session);
  std::cout << problems.size() << " problem(s) x " << selected.size() << " backend(s)"
            << (modes.size() > 1 ? " x 2 timing modes" : "") << "\n";

  for (const auto& p : problems) {
    std::cout << "\n== " << p.str_with_name() << ": " << ops::to_string(p.category()) << ", "
              << p.input_elements() << " input elements, " << p.bytes() / 1e6 << " MB moved at "
              << "least"
              << (p.flops() > 0 ? ", " + bench::format_fixed(p.flops() / 1e6, 1) + " MFLOP" : "")
              << " ==\n";
    // The host data is made where the host side fits; a case that does not fit is recorded.
    const bool host_fits =
        bench::memory_shortfall(ops::memory_need(p, false), memory.available()).empty();
    const ops::HostData data = bench::timed_reference(
        session, [&] { return host_fits ? ops::make_host_data(p, c.seed) : ops::HostData{}; });
    for (const auto mode : modes) {
      const bench::CaseOptions options = options_for(session.case_options, mode);
      for (const auto* e : selected) {
        const bench::MemoryNeed need = need_of(p, *e);
        if (const std::string why = bench::memory_shortfall(need, memory.available());
            e->backend && !why.empty()) {
          bench::finish_case(
              std::cout, session,
              bench::memory_unsupported(ops::make_result(e->name, e->device, p, options), why, need,
                                        memory.available()),
              nullptr);
          continue;
        }
        ops::CaseOutput out =
            ops::run_case(e->backend.get(), e->name, e->device, e->why_missing, p, data, options);
        ops::fill_metrics(out.result, ops::reference_of(set.results, out.result), set.system);
        bench::finish_case(std::cout, session, std::move(out.result), out.trace);
      }
    }
  }

  bench::print_summary_section(std::cout, set.results);
  std::cout << "\n== Scores (bandwidth against the measured copy bandwidth; speed-up = PyTorch "
               "time / backend time on the same device) ==\n";
  print_scores(std::cout, set.results);
  if (!o.markdown_path.empty()) write_markdown(o.markdown_path, set);
  return bench::finish_run(std::cout, session, c.strict, {{o.markdown_path, "results, Markdown"}});
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "myops: which implementation of a tensor op is fastest here, how close it comes to the "
      "machine's measured limits, and whether its answer is right"};
  bench::add_version_flag(app);
  auto& s = o.settings;
  app.add_option("--size", s.sizes,
                 "Size classes: small medium large xlarge batched, or all (every class but "
                 "xlarge); each is an op list in experiments/ops/ (list)")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--category", s.categories,
                 "Only these categories: element activation reduction normalization matmul "
                 "memory (list)")
      ->delimiter(',');
  app.add_option("--op", s.ops, "Only these ops, e.g. add, softmax, transpose (list)")
      ->delimiter(',');
  app.add_option("--dtype", o.dtypes,
                 "Data types: fp32 fp16 bf16, tf32 (matmul only) (list); a descriptor naming one "
                 "keeps it")
      ->capture_default_str()
      ->delimiter(',');
  app.add_option("--problem", s.descriptors,
                 "Op descriptor, e.g. add:4096x4096+1x4096:bf16 (repeatable); replaces --size");
  app.add_option("--ops-file", s.ops_files,
                 "Op list file: one descriptor per line (repeatable); replaces --size");
  app.add_option("--backend", o.backends, "Backend to run (repeatable; default: all built)")
      ->delimiter(',');
  app.add_option("--variant", o.backend_options.variant,
                 "Kernel variant of own_cuda (default: the best for each op; ops/cuda/*.cu list "
                 "them)");
  app.add_flag("--fast", o.fast,
               "Short sampling (1 warm-up, 10 to 100 ms per case) for a quick look");
  app.add_flag("--no-peaks", o.no_peaks,
               "Do not measure the copy bandwidth and matmul ceiling at the start (no "
               "efficiencies)");
  app.add_option("--markdown", o.markdown_path, "Write a Markdown table of the results to FILE");
  app.add_flag("--list-ops", o.list_ops, "List the ops and size classes and exit");
  bench::add_common_options(app, o.common, /*allow_both=*/true);

  return bench::run_main(app, argc, argv, "myops", [&] {
    o.backends = bench::canonical_backend_names(o.backends);  // older names too
    if (app.count("--size") && !(s.descriptors.empty() && s.ops_files.empty()))
      throw UsageError("--problem/--ops-file replace --size; give one or the other");
    s.dtypes.clear();
    for (const auto& d : o.dtypes) s.dtypes.push_back(bench::parse_data_type(d));
    if (o.fast) {  // only what the user did not set
      auto& m = o.common.measure;
      if (!app.count("--warmup")) m.warmup_iters = 1;
      if (!app.count("--max-time-ms")) m.max_time_ms = 100;
      if (!app.count("--min-time-ms")) m.min_time_ms = std::min(10.0, m.max_time_ms);
      if (!app.count("--min-iters")) m.min_iters = 3;
    }
    std::string prefix = "myops";
    if (!o.backend_options.variant.empty()) prefix += " --variant " + o.backend_options.variant;
    if (o.fast) prefix += " --fast";
    prefix += bench::check_common_options(app, o.common);
    return run(o, prefix);
  });
}
