// What every driver (myconv, myops, and the model suites') shares around the case runner: the
// common command-line options (measurement, timing, seed, outputs, listing, source record,
// tracing), the session they set up (system info, device services, tracing, case options), the
// per-case trace and debug output, and the result files. A driver adds its own options (problems,
// backends) and loops over its cases; none copies this.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/device.hpp"
#include "core/grammar.hpp"
#include "core/measure.hpp"
#include "core/memory_fit.hpp"
#include "core/result.hpp"
#include "core/runner.hpp"
#include "core/trace.hpp"

namespace bench {

struct DriverOptions {
  MeasureConfig measure;
  std::string timing = "real";  // real | pure | both (each case in each mode)
  bool no_graph = false, cold_cache = false;
  int pure_runs = 0;
  std::uint64_t seed = 1;
  std::string json_path, csv_path;
  bool list_backends = false, strict = false;
  bool source_info = false;       // print the source record (system.source) and exit
  std::string write_source_diff;  // write the built tree's difference from its commit and exit
  bool no_source_diff = false;    // --json without the difference beside it (the runner's own)
  bool list_cases = false;        // print the cases as JSON lines instead of running them
  bool debug = false;             // a [DEBUG] block after each case's result block
  std::string trace_dir;          // one Chrome trace JSON per case
  int trace_calls = 3;            // traced calls per case, after the timed sampling
  int threads = 0;                // --threads: the CPU backends' threads (0: each library's own)
  std::string format = "table";   // --format: what stdout carries (table, md, csv, json, jsonl)
  int device = -1;                // --device: the CUDA device index (-1: not given, device 0)
  bool available_only = false;    // --available-only: leave out backends that cannot run here
};

// --version: "<project version> (git <commit>)". Every driver adds it first, before its own
// options.
void add_version_flag(CLI::App& app);

// Adds the shared options to app. --timing takes real, pure or both (every case measured in real
// and then in pure mode; core/driver_loop.hpp runs the modes). device_index: --device N (the CUDA
// device index); false where the driver has a --device of its own (mytransformer: auto, cpu, cuda
// or N).
void add_common_options(CLI::App& app, DriverOptions& o, bool device_index = true);

// --device N: makes CUDA device N current for everything after (the memory gate, the system
// facts, the device services, every GPU backend); UsageError (exit 2) where there is no device N
// (or no CUDA build, or no usable device at all, with the reason).
void select_cuda_device(int index);

// A driver's main() after its options are added: installs the fatal-signal report
// (core/crash_report.hpp: a crash prints its backtrace before the program dies of the signal),
// rewrites the command line to the documented option names (core/grammar.hpp: '_' for '-', a
// plural for a singular), checks the lists' items (core/option_checks.hpp) and parses it (help and
// version exit 0; a parse error is one line "PROGRAM: error: ... (see --help)" and exit 2), then
// runs body: bench::UsageError -> one line "PROGRAM: error: ..." and exit 2; any other exception ->
// "PROGRAM: internal error: ..." and exit 1; else body's exit status. Every such line is at most
// kMaxErrorLine characters (core/error.hpp one_line).
// aliases: the program's other option names (core/grammar.hpp).
int run_main(CLI::App& app, int argc, char** argv, const std::string& program,
             const std::function<int()>& body, const OptionAliases& aliases = {});

// Checks the shared options after parsing (throws UsageError; their paths too), and returns the
// part of each case's reproducing command they give (e.g. " --seed 7 --timing pure"), options left
// at their defaults omitted.
std::string check_common_options(const CLI::App& app, const DriverOptions& o);

// The shared options' part of the reproducing command of a case measured in `mode` (as
// check_common_options returns it, with --timing naming that mode).
std::string common_command_text(const CLI::App& app, const DriverOptions& o, TimingMode mode);

// --source-info and --write-source-diff: does what they ask and returns true (the driver exits 0).
bool handle_source_options(const DriverOptions& o);

// The paths of the shared options (--json, --csv, the source difference beside the JSON,
// --trace-dir), checked as core/paths.hpp checks them; check_common_options and start_session
// call it, before anything is written.
void check_common_paths(const DriverOptions& o);

// Where --json's source difference goes: out.json -> out.source.diff.
std::string source_diff_path(const std::string& json_path);

// The memory there for the memory gate (core/memory_fit.hpp): the host's, and with uses_gpu the
// current CUDA device's free memory where one is usable.
MemoryAvailable memory_available(bool uses_gpu);

// The longest error line a driver prints (the program's name and "error: " included).
inline constexpr std::size_t kMaxErrorLine = 300;

// When this program's static initialization ran: after the process started and its libraries
// were loaded, before main.
std::chrono::steady_clock::time_point program_start();

// The state of one driver run: the result set (with the system facts), the case options, and what
// they point to (device services, trace configuration and device activity source), and the clock
// of the cases' slots (Result::slot_ms).
struct Session {
  ResultSet set;
  CaseOptions case_options;
  std::unique_ptr<DeviceServices> device_services;
  TraceConfig trace_config;
  std::unique_ptr<ActivitySource> device_activity;
  const DriverOptions* options = nullptr;

  // The invocation's time before its first case, which that case's slot holds: process start to
  // static initialization (library load; Linux, else 0), the set-up to the end of start_session
  // less the device context (CUDA's initialization and context, in the memory gate and the
  // session's device facts and services).
  double process_start_ms = 0, session_ms = 0, device_context_ms = 0;
  double reference_ms = 0;  // inputs and reference made for the next case (timed_reference)
  bool first_case = true;
  std::chrono::steady_clock::time_point slot_start = program_start();
};

// Runs make() (a problem's inputs and float64 reference) and counts its time as the `reference`
// of the next case's slot; returns what make() returns.
template <class Make>
auto timed_reference(Session& s, Make&& make) {
  const auto start = std::chrono::steady_clock::now();
  auto out = make();
  s.reference_ms +=
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

// Sets the session up: checks the output paths and the trace folder (UsageError), collects the
// system info (with the CUDA devices where built with CUDA), makes the device services when
// uses_gpu and a GPU is there, the tracing when asked, and writes the source difference beside
// the JSON when the built tree differed from its commit. command_prefix starts every case's
// reproducing command. Session::set.system["libraries"] is for the driver to fill.
void start_session(Session& s, const DriverOptions& o, bool uses_gpu,
                   const std::string& command_prefix);

// After one case ran: completes its slot_ms (the invocation's start on its first case, the
// reference made for it, `other`, `total`), prints its result block and, when traced, writes its
// Chrome trace and prints its debug block; appends the result and rewrites the result files
// (atomically, so that a crash or a kill keeps the finished cases). The time of that printing
// and writing is the slot's `writing`, in the files from the next rewrite on (null until then).
void finish_case(std::ostream& os, Session& s, Result result, const std::shared_ptr<Trace>& trace);

// Rewrites --json and --csv from the session's results.
void write_results(const Session& s);

// Where the run's files went, one line each: "wrote PATH (WHAT)" for --json, --csv, the source
// difference beside the JSON, --trace-dir and the driver's own (extra: path, what; empty paths
// left out); "wrote no files (--json FILE, --csv FILE keep the results)" when none.
void print_written(std::ostream& os, const Session& s,
                   const std::vector<std::pair<std::string, std::string>>& extra = {});

// Cases incorrect or failed, for the closing line and --strict.
int count_bad(const ResultSet& set);

// A driver's last lines: how many cases were incorrect or failed (printed when any), and its exit
// status: 1 with --strict when any were, else 0. With --format other than table, the console
// report went to stderr (from start_session on) and stdout gets the results in that format here:
// md (the summary table in Markdown), csv (as --csv), json (as --json), jsonl (a record a line).
int closing_status(std::ostream& os, const ResultSet& set, bool strict);

// A driver's end after its report: write_results, print_written (with extra) and closing_status
// on the session's results.
int finish_run(std::ostream& os, const Session& s, bool strict,
               const std::vector<std::pair<std::string, std::string>>& extra = {});

}  // namespace bench
