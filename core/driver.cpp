#include "core/driver.hpp"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include <unistd.h>

#include "core/cpu_threads.hpp"
#include "core/crash_report.hpp"
#include "core/driver_loop.hpp"
#include "core/error.hpp"
#include "core/grammar.hpp"
#include "core/option_checks.hpp"
#include "core/paths.hpp"
#include "core/printers.hpp"
#include "core/system_info.hpp"
#include "core/trace_report.hpp"
#if MYCONV_HAVE_CUDA
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_services.hpp"
#endif
#if MYCONV_HAVE_CUPTI
#include "core/cuda/cupti_tracer.hpp"
#endif

namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// Milliseconds from this process's start (/proc/self/stat starttime, in clock ticks since boot)
// to now (CLOCK_BOOTTIME); 0 where that cannot be read. Resolution: one clock tick (10 ms).
double process_age_ms() {
  std::ifstream f("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  const long ticks = sysconf(_SC_CLK_TCK);
  timespec now{};
  if (paren == std::string::npos || ticks <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) != 0)
    return 0;
  std::istringstream rest(stat.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i != 22) continue;  // starttime is field 22 (proc(5))
    const double started_ms = std::stod(field) * 1000.0 / static_cast<double>(ticks);
    const double now_ms = static_cast<double>(now.tv_sec) * 1e3 + now.tv_nsec / 1e6;
    return std::max(0.0, now_ms - started_ms);
  }
  return 0;
}

// Taken during static initialization, before main.
const Clock::time_point g_program_start = Clock::now();
const double g_process_age_at_start_ms = process_age_ms();
double g_device_context_ms = 0;  // CUDA initialization and context, wherever it happened first
// --format other than table: stdout's own buffer while std::cout writes to stderr.
std::streambuf* g_stdout = nullptr;
std::string g_format = "table";

// The shared options' part of a case's reproducing command, with --timing TIMING.
std::string command_text(const CLI::App& app, const DriverOptions& o, const std::string& timing) {
  std::string s;
  if (app.count("--seed")) s += " --seed " + std::to_string(o.seed);
  if (timing != "real") s += " --timing " + timing;
  if (o.no_graph) s += " --no-graph";
  if (o.threads > 0) s += " --threads " + std::to_string(o.threads);
  if (o.device >= 0) s += " --device " + std::to_string(o.device);
  if (o.pure_runs > 0) s += " --pure-runs " + std::to_string(o.pure_runs);
  if (o.cold_cache) s += " --cold-cache";
  return s;
}

}  // namespace

std::chrono::steady_clock::time_point program_start() {
  return g_program_start;
}

void add_version_flag(CLI::App& app) {
  app.set_version_flag("--version", project_version() + " (git " + git_commit() + ")");
}

void add_common_options(CLI::App& app, DriverOptions& o, bool device_index) {
  app.add_option("--timing", o.timing,
                 "real: every call synchronized, overheads included; pure: calls back to back "
                 "between one timer pair, or a replayed CUDA graph where the backend allows "
                 "capture; both: every case in each mode (real, then pure), every backend alike")
      ->capture_default_str()
      ->check(CLI::IsMember({"real", "pure", "both"}));
  app.add_flag("--no-graph", o.no_graph, "--timing pure: loop calls instead of replaying a graph");
  const std::int64_t int_max = std::numeric_limits<int>::max();
  app.add_option("--pure-runs", o.pure_runs,
                 "--timing pure: calls per sample (default: enough for about 2 ms)")
      ->check(integer_in(1, int_max));
  app.add_flag("--cold-cache", o.cold_cache,
               "Flush the GPU's L2 (twice its size written) or the CPU caches before every sample");
  app.add_option("--warmup", o.measure.warmup_iters, "Warm-up runs before sampling")
      ->capture_default_str()
      ->check(integer_in(0, int_max));
  app.add_option("--min-iters", o.measure.min_iters, "Samples needed before stopping early")
      ->capture_default_str()
      ->check(integer_in(1, int_max));
  app.add_option("--max-iters", o.measure.max_iters, "Most samples per case")
      ->capture_default_str()
      ->check(integer_in(1, int_max));
  // Times up to a year: a bound that keeps every deadline computed from them finite.
  const double year_ms = 365.0 * 24 * 3600 * 1000;
  app.add_option("--min-time-ms", o.measure.min_time_ms, "Least sampling time per case")
      ->capture_default_str()
      ->check(finite_number(0, year_ms));
  app.add_option("--max-time-ms", o.measure.max_time_ms, "Most sampling time per case")
      ->capture_default_str()
      ->check(finite_number(0, year_ms, /*min_exclusive=*/true));
  app.add_option("--target-cv", o.measure.target_cv,
                 "Stop once the coefficient of variation is below this")
      ->capture_default_str()
      ->check(non_negative_number());
  app.add_option("--seed", o.seed, "Seed of the random inputs")
      ->capture_default_str()
      ->check(unsigned_integer());
  app.add_option("--json", o.json_path, "Write results as JSON (results/README.md has the schema)");
  app.add_option("--csv", o.csv_path, "Write results as CSV");
  app.add_flag("--list-backends", o.list_backends, "List the backends and exit");
  app.add_flag("--source-info", o.source_info,
               "Print the source this program was built from (commit, difference, origin) as "
               "JSON and exit");
  app.add_option("--write-source-diff", o.write_source_diff,
                 "Write the built tree's difference from its commit to FILE (empty when none) "
                 "and exit");
  app.add_flag("--no-source-diff", o.no_source_diff,
               "--json: do not write the source difference beside the JSON (a runner writes it "
               "once per run folder)");
  app.add_flag("--list-cases", o.list_cases,
               "Print the (problem, backend) cases that would run, one JSON record per line, "
               "and exit");
  app.add_flag("--strict", o.strict, "Exit 1 when any case is incorrect or failed");
  app.add_flag("--debug", o.debug,
               "After each case's result block, a [DEBUG] block from traced calls made after the "
               "timed sampling: events, top GPU kernels (CUPTI), copies, kernels per call, launch "
               "latency, host phases");
  app.add_option("--trace-dir", o.trace_dir,
                 "Write one Chrome trace JSON per backend and problem into DIR (Perfetto, "
                 "chrome://tracing): host phases, GPU kernels and copies, launch flows");
  app.add_option("--trace-calls", o.trace_calls,
                 "Traced calls per case for --debug and --trace-dir, after the timed sampling")
      ->capture_default_str()
      ->check(integer_in(1, 1000000));
  // Set at parse time, so that every backend made after it (the registries) sees it.
  app.add_option("--threads", o.threads,
                 "Threads of the CPU backends (default: each library's own): LibTorch "
                 "(at::set_num_threads), oneDNN (its OpenMP runtime), Halide (HL_NUM_THREADS); "
                 "recorded in each CPU result (extra.threads_asked)")
      ->check(integer_in(1, 4096))
      ->each([](const std::string& v) { set_cpu_threads(std::stoi(v)); });
  app.add_option("--format", o.format,
                 "What stdout carries: table (the console report), md, csv, json or jsonl (the "
                 "results; the console report then goes to stderr)")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "md", "csv", "json", "jsonl"}))
      ->each([](const std::string& v) { g_format = v; });
  if (device_index)
    app.add_option("--device", o.device, "The CUDA device index (default 0)")
        ->check(integer_in(0, 1023));
  app.add_flag("--available-only", o.available_only,
               "Leave out the backends that cannot run here (not built, no device) instead of "
               "recording them skipped");
}

void select_cuda_device(int index) {
#if MYCONV_HAVE_CUDA
  const CudaAvailability a = cuda_device_available();
  if (!a.ok) throw UsageError("--device " + std::to_string(index) + ": " + a.reason);
  const int count = cuda_device_count();
  if (index >= count)
    throw UsageError("--device " + std::to_string(index) + ": no such CUDA device (" +
                     std::to_string(count) + " here, 0 to " + std::to_string(count - 1) + ")");
  cuda_set_device(index);
#else
  throw UsageError("--device " + std::to_string(index) +
                   ": this build has no CUDA (a CPU-only build runs no GPU backend)");
#endif
}

int run_main(CLI::App& app, int argc, char** argv, const std::string& program,
             const std::function<int()>& body, const OptionAliases& aliases) {
  install_crash_report(program.c_str());
  // One line of at most ~300 characters, whatever the input echoed in it.
  auto say = [&](const std::string& kind, const std::string& what, const std::string& tail) {
    const std::string head = program + ": " + kind + ": ";
    std::cerr << head << one_line(what, kMaxErrorLine - head.size() - tail.size()) << tail << "\n";
  };
  // The shared grammar (core/grammar.hpp): '_' for '-', plural for singular, as documented names.
  const std::vector<std::string> args = canonical_arguments(app, argc, argv, aliases);
  std::vector<const char*> arg_ptrs;
  for (const auto& a : args) arg_ptrs.push_back(a.c_str());
  const int n = static_cast<int>(arg_ptrs.size());
  try {
    check_list_items(app, n, arg_ptrs.data());
    app.parse(n, arg_ptrs.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    say("error", e.what(), " (see --help)");
    return 2;
  }
  try {
    return body();
  } catch (const UsageError& e) {
    say("error", e.what(), "");
    return 2;
  } catch (const std::exception& e) {
    say("internal error", e.what(), "");
    return 1;
  }
}

std::string check_common_options(const CLI::App& app, const DriverOptions& o) {
  if (o.measure.min_time_ms > o.measure.max_time_ms)
    throw UsageError("--min-time-ms must not exceed --max-time-ms");
  check_common_paths(o);
  if (o.device >= 0) select_cuda_device(o.device);
  return command_text(app, o, o.timing);
}

std::string common_command_text(const CLI::App& app, const DriverOptions& o, TimingMode mode) {
  return command_text(app, o, mode == TimingMode::pure ? "pure" : "real");
}

bool handle_source_options(const DriverOptions& o) {
  if (o.source_info) {
    std::cout << source_info().dump(2) << "\n";
    return true;
  }
  if (!o.write_source_diff.empty()) {
    check_output_file("--write-source-diff", o.write_source_diff);
    write_source_diff(o.write_source_diff);
    return true;
  }
  return false;
}

void check_common_paths(const DriverOptions& o) {
  check_output_file("--json", o.json_path);
  check_output_file("--csv", o.csv_path);
  if (!o.json_path.empty() && !o.no_source_diff)  // where the source difference may go
    check_output_file("--json", source_diff_path(o.json_path));
  if (!o.list_cases) check_output_dir("--trace-dir", o.trace_dir);
}

std::string source_diff_path(const std::string& json_path) {
  std::filesystem::path diff = json_path;
  diff.replace_extension(".source.diff");
  return diff.string();
}

MemoryAvailable memory_available(bool uses_gpu) {
  MemoryAvailable a = host_memory_available();
#if MYCONV_HAVE_CUDA
  if (uses_gpu) {
    const Clock::time_point start = Clock::now();
    a.device_bytes = static_cast<double>(cuda_free_memory_bytes());
    g_device_context_ms += ms_since(start);
    apply_memory_limit_to_device(a);
  }
#else
  (void)uses_gpu;
#endif
  return a;
}

void start_session(Session& s, const DriverOptions& o, bool uses_gpu,
                   const std::string& command_prefix) {
  s.options = &o;
  check_common_paths(o);
  if (!o.list_cases) make_output_dir("--trace-dir", o.trace_dir);

  s.case_options.measure = o.measure;
  s.case_options.command_prefix = command_prefix;
  s.case_options.timing = o.timing == "pure" ? TimingMode::pure : TimingMode::real;
  s.case_options.use_graph = !o.no_graph;
  s.case_options.pure_runs = o.pure_runs;
  s.case_options.cold_cache = o.cold_cache;
  if (o.list_cases) return;  // listing runs nothing and needs no system facts
  // --format: from here on the console report goes to stderr, the results to stdout at the end.
  if (o.format != "table" && !g_stdout) g_stdout = std::cout.rdbuf(std::cerr.rdbuf());

  s.set.system = collect_system_info();
  s.set.system["cpu_threads"] = o.threads > 0 ? nlohmann::ordered_json(o.threads) : nullptr;
#if MYCONV_HAVE_CUDA
  const Clock::time_point device_start = Clock::now();
  s.set.system["cuda"] = cuda_system_info();
  if (s.set.system["cuda"].contains("devices"))
    s.set.system["gpus"] = s.set.system["cuda"]["devices"];
  if (uses_gpu && cuda_device_available().ok) {
    s.device_services = make_cuda_services();
    s.case_options.device_services = s.device_services.get();
  }
  g_device_context_ms += ms_since(device_start);
#else
  (void)uses_gpu;
#endif
  // A build from a tree that differed from its commit: the difference goes beside the JSON
  // (out.json -> out.source.diff), and the JSON names it.
  if (!o.json_path.empty() && !o.no_source_diff && !source_diff().empty()) {
    const std::filesystem::path diff = source_diff_path(o.json_path);
    write_source_diff(diff.string());
    s.set.system["source"]["diff_file"] = diff.filename().string();
  }

  // Tracing (--debug, --trace-dir) is off unless asked; GPU cases then record CUPTI activity.
  if (o.debug || !o.trace_dir.empty()) {
    s.trace_config.calls = o.trace_calls;
#if MYCONV_HAVE_CUPTI
    if (const CudaAvailability a = cuda_device_available(); a.ok) {
      s.device_activity = make_cupti_activity_source();
      s.trace_config.device_activity = s.device_activity.get();
    } else {
      s.trace_config.why_no_device_activity = a.reason;
    }
#else
    s.trace_config.why_no_device_activity = "built without CUPTI: " MYCONV_WHY_NO_CUPTI;
#endif
    s.case_options.trace = &s.trace_config;
  }
  s.process_start_ms = g_process_age_at_start_ms;
  s.device_context_ms = g_device_context_ms;
  s.session_ms = std::max(0.0, ms_since(g_program_start) - g_device_context_ms);
}

namespace {

// Completes a case's slot_ms from what the case runner recorded and the session's clock.
void close_slot(Session& s, Result& result) {
  const nlohmann::ordered_json parts =
      result.slot_ms.is_object() ? result.slot_ms : nlohmann::ordered_json::object();
  double total = ms_since(s.slot_start);
  nlohmann::ordered_json slot = nlohmann::ordered_json::object();
  slot["total"] = 0.0;  // filled below, first for the reader
  slot["process_start"] = s.first_case ? s.process_start_ms : 0.0;
  slot["session"] = s.first_case ? s.session_ms : 0.0;
  slot["device_context"] = s.first_case ? s.device_context_ms : 0.0;
  if (s.first_case) total += s.process_start_ms;
  slot["reference"] = s.reference_ms;
  double known = slot["process_start"].get<double>() + slot["session"].get<double>() +
                 slot["device_context"].get<double>() + s.reference_ms;
  for (const char* key :
       {"prepare", "compile", "first_run", "check", "sampling", "after_sampling"}) {
    const double v = parts.value(key, 0.0);
    slot[key] = v;
    known += v;
  }
  slot["writing"] = nullptr;
  slot["other"] = std::max(0.0, total - known);
  slot["total"] = std::max(total, known);
  result.slot_ms = std::move(slot);
  s.first_case = false;
  s.reference_ms = 0;
}

}  // namespace

void finish_case(std::ostream& os, Session& s, Result result, const std::shared_ptr<Trace>& trace) {
  const DriverOptions& o = *s.options;
  close_slot(s, result);
  // --threads on every CPU case (null: not given, each library's own default).
  if (result.device == "cpu")
    result.extra["threads_asked"] = o.threads > 0 ? nlohmann::ordered_json(o.threads) : nullptr;
  const Clock::time_point writing_start = Clock::now();
  print_result_block(os, result);
  if (trace) {
    std::string trace_path;
    if (!o.trace_dir.empty()) {
      trace_path = (std::filesystem::path(o.trace_dir) / trace_file_name(result)).string();
      write_chrome_trace(trace_path, *trace, result);
      result.extra["trace_file"] = trace_path;
    }
    if (o.debug) print_debug_block(os, *trace, result, trace_path);
  }
  s.set.results.push_back(std::move(result));
  write_results(s);
  nlohmann::ordered_json& slot = s.set.results.back().slot_ms;
  const double writing = ms_since(writing_start);
  slot["writing"] = writing;
  slot["total"] = slot["total"].get<double>() + writing;
  s.slot_start = Clock::now();
}

void write_results(const Session& s) {
  if (!s.options->json_path.empty()) write_json(s.options->json_path, s.set);
  if (!s.options->csv_path.empty()) write_csv(s.options->csv_path, s.set.results);
}

void print_written(std::ostream& os, const Session& s,
                   const std::vector<std::pair<std::string, std::string>>& extra) {
  const DriverOptions& o = *s.options;
  std::vector<std::pair<std::string, std::string>> files = {{o.json_path, "results, JSON"},
                                                            {o.csv_path, "results, CSV"}};
  if (!o.json_path.empty() && !o.no_source_diff && s.set.system.contains("source") &&
      s.set.system["source"].value("diff_file", nlohmann::ordered_json()).is_string())
    files.push_back({source_diff_path(o.json_path), "the built tree's difference from its commit"});
  if (!o.trace_dir.empty()) files.push_back({o.trace_dir, "Chrome traces"});
  files.insert(files.end(), extra.begin(), extra.end());
  bool any = false;
  for (const auto& [path, what] : files)
    if (!path.empty()) {
      if (!any) os << "\n";
      os << "wrote " << path << " (" << what << ")\n";
      any = true;
    }
  if (!any) os << "\nwrote no files (--json FILE, --csv FILE keep the results)\n";
}

int count_bad(const ResultSet& set) {
  int bad = 0;
  for (const auto& r : set.results)
    bad += r.status == Status::incorrect || r.status == Status::failed;
  return bad;
}

int finish_run(std::ostream& os, const Session& s, bool strict,
               const std::vector<std::pair<std::string, std::string>>& extra) {
  write_results(s);
  print_written(os, s, extra);
  return closing_status(os, s.set, strict);
}

int closing_status(std::ostream& os, const ResultSet& set, bool strict) {
  const int bad = count_bad(set);
  if (bad) os << "\n" << bad << " case(s) incorrect or failed\n";
  if (g_stdout) {
    os.flush();
    std::cout.rdbuf(g_stdout);
    g_stdout = nullptr;
    if (g_format == "json") {
      std::cout << to_json(set).dump(1) << "\n";
    } else if (g_format == "jsonl") {
      for (const auto& r : set.results) std::cout << to_json(r).dump() << "\n";
    } else if (g_format == "csv") {
      std::cout << results_to_csv(set.results);
    } else if (g_format == "md") {
      print_summary(std::cout, set.results, /*markdown=*/true);
    }
    std::cout.flush();
  }
  return strict && bad ? 1 : 0;
}

std::vector<CaseOptions> timing_mode_options(const CaseOptions& base, const CLI::App& app,
                                             const DriverOptions& o,
                                             const std::string& command_head) {
  std::vector<TimingMode> modes = {o.timing == "pure" ? TimingMode::pure : TimingMode::real};
  if (o.timing == "both") modes = {TimingMode::real, TimingMode::pure};
  std::vector<CaseOptions> out;
  for (const TimingMode mode : modes) {
    CaseOptions options = base;
    options.timing = mode;
    options.command_prefix = command_head + common_command_text(app, o, mode);
    out.push_back(std::move(options));
  }
  return out;
}

void print_banner(std::ostream& os, const std::string& program, const ResultSet& set,
                  const std::string& tail) {
  os << program << " " << project_version() << " (" << git_commit() << ") on "
     << set.system["host"].get<std::string>()
     << (tail.empty() ? ", " + set.system["cpu_model"].get<std::string>() : tail) << "\n";
}

void print_case_count(std::ostream& os, std::size_t problems, std::size_t backends,
                      std::size_t modes) {
  os << problems << " problem(s) x " << backends << " backend(s)"
     << (modes > 1 ? " x " + std::to_string(modes) + " timing modes" : "") << "\n";
}

}  // namespace bench
