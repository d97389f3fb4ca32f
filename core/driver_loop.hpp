// The loop every suite's driver runs (benchdnn's bench()): the source options, --list-backends,
// --backend's names, the selection (--available-only), the memory gate, the session, the
// libraries' versions, --list-cases, the banner, then problem x timing mode x backend with each
// case recorded (a case that does not fit in memory as unsupported), the summary and the result
// files. A driver describes its suite (a Suite: its registry, its problems, how one case runs,
// its own tables) and keeps only its options. The non-template parts are in core/driver.cpp.
#pragma once

#include <algorithm>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/driver.hpp"
#include "core/memory_fit.hpp"
#include "core/printers.hpp"
#include "core/registry.hpp"
#include "core/result.hpp"
#include "core/runner.hpp"

namespace bench {

// The case options of each timing mode --timing asks for (real, pure, or both: real then pure):
// base with that mode and the command that reproduces a case of it (command_head, then the
// shared options' part naming the mode, common_command_text).
std::vector<CaseOptions> timing_mode_options(const CaseOptions& base, const CLI::App& app,
                                             const DriverOptions& o,
                                             const std::string& command_head);

// The first line of a run: "PROGRAM VERSION (COMMIT) on HOST" and `tail` (by default ", CPU").
void print_banner(std::ostream& os, const std::string& program, const ResultSet& set,
                  const std::string& tail = "");

// "N problem(s) x M backend(s)", " x 2 timing modes" with --timing both.
void print_case_count(std::ostream& os, std::size_t problems, std::size_t backends,
                      std::size_t modes);

// What a suite's driver gives the loop. Problem: the suite's problem type; Entry: its registry's
// entry (name, device, backend with available() and library_version(), why_missing).
template <class Problem, class Entry>
struct Suite {
  std::string program;       // "myconv": the banner's and the notes' first word
  std::string command_head;  // each case's command before the shared options ("myops --fast")
  std::vector<std::string> backends;        // --backend, current names
  std::vector<std::string> known_backends;  // every name --backend takes
  std::function<std::vector<Entry>()> make_registry;
  // The suite's checks of its own options (UsageError) and its problems, in order; notes (tokens
  // not run as written) go to stderr, one line each.
  std::function<std::vector<Problem>(std::vector<std::string>* notes)> problems;
  std::function<std::string(const Problem&)> name_of;  // the gate's names
  // Its need on the host (gpu false) or the GPU (core/memory_fit.hpp); where case_need is given,
  // only begin_problem's host_fits.
  std::function<MemoryNeed(const Problem&, bool gpu)> memory_need;
  // A case's identity record (--list-cases, a case that does not fit).
  std::function<Result(const Entry&, const Problem&, const CaseOptions&)> identity;
  // One case; nullopt where the hook recorded it itself.
  std::function<std::optional<CaseRun>(Session&, const Entry&, const Problem&, const CaseOptions&)>
      run;

  // Optional hooks and overrides, in the order they run.
  std::function<bool()> own_listing;  // after the source options: true, it listed; exit 0
  // The selection of --backend and --available-only (default select_backends), and its order.
  std::function<std::vector<const Entry*>(const std::vector<Entry>&)> select;
  std::function<void(std::vector<const Entry*>&)> order;
  // A case's memory need (default memory_need(problem, on the GPU)), and whether the memory gate
  // judges a problem at all (default yes; a problem the suite skips before it allocates: no).
  std::function<MemoryNeed(const Problem&, const Entry&)> case_need;
  std::function<bool(const Problem&)> gated;
  // After the memory gate, before the session: the suite's last checks and its output folders;
  // true where it did what its options asked instead of the cases (exit 0).
  std::function<bool(const std::vector<const Entry*>&, const MemoryGate&)> before_session;
  std::function<void(Session&)> session_started;  // after start_session, before any listing
  std::function<std::string(const Problem&)> command_head_of;  // where it depends on the problem
  std::function<std::string()> banner_tail;  // after the banner's host (default ", CPU model")
  // After the banner, before the count line: measured limits (copy bandwidth, matmul ceiling).
  std::function<void(Session&, const std::vector<const Entry*>&, const std::vector<Problem>&)>
      before_cases;
  std::function<void(std::size_t problems, std::size_t backends)> print_count;  // its own line
  // Before a problem's cases: its header line and its inputs (host_fits: the host side fits).
  std::function<void(Session&, const Problem&, bool host_fits)> begin_problem;
  std::function<void(Session&, const Entry&, const Problem&)> before_case;  // a progress line
  std::function<void(Session&, const Result&)> after_case;  // lines after a case's block
  std::function<void(Session&)> report;  // after the summary: the suite's tables and files
  std::vector<std::pair<std::string, std::string>> written;  // the suite's files: path, what
};

// Runs the suite as its command line asks; returns the program's exit status (UsageError thrown
// for bad input, before anything runs).
template <class Problem, class Entry>
int run_suite(const CLI::App& app, const DriverOptions& o, const Suite<Problem, Entry>& s,
              std::ostream& os = std::cout) {
  if (handle_source_options(o)) return 0;
  if (s.own_listing && s.own_listing()) return 0;
  const std::vector<Entry> registry = s.make_registry();
  if (o.list_backends) {
    print_backend_list(os, registry);
    return 0;
  }
  // Everything is validated before the first case runs, so bad input leaves no partial output.
  check_backend_names(s.backends, s.known_backends);
  std::vector<std::string> notes;
  const std::vector<Problem> problems = s.problems(&notes);
  // On stderr, so that --list-cases output stays JSON.
  for (const auto& n : notes) std::cerr << s.program << ": note: " << n << "\n";
  std::vector<const Entry*> selected =
      s.select ? s.select(registry) : select_backends(registry, s.backends, o.available_only);
  if (s.order) s.order(selected);
  const bool uses_gpu = std::any_of(selected.begin(), selected.end(), [](const Entry* e) {
    return e->backend && e->device == "cuda";
  });
  auto need_of = [&](const Problem& p, const Entry& e) {
    return s.case_need ? s.case_need(p, e) : s.memory_need(p, e.device == "cuda");
  };
  auto gated = [&](const Problem& p) { return !s.gated || s.gated(p); };
  // Every case that would run against the memory here (core/memory_fit.hpp): when none fits,
  // exit 2; the others' cases are recorded unsupported below. Listing runs nothing: a runner's
  // invocation of the case checks it.
  MemoryGate memory(o.list_cases ? MemoryAvailable{} : memory_available(uses_gpu));
  for (const auto& p : problems)
    for (const Entry* e : selected)
      if (e->backend && gated(p)) memory.check(s.name_of(p) + " " + e->name, need_of(p, *e));
  memory.refuse_if_nothing_fits();
  if (s.before_session && s.before_session(selected, memory)) return 0;

  Session session;
  auto head_of = [&](const Problem& p) {
    return s.command_head_of ? s.command_head_of(p) : s.command_head;
  };
  const std::string first_head = problems.empty() ? s.command_head : head_of(problems.front());
  start_session(session, o, uses_gpu,
                timing_mode_options(CaseOptions{}, app, o, first_head).front().command_prefix);
  if (s.session_started) s.session_started(session);
  // The case options of each timing mode, for a problem.
  auto modes_of = [&](const Problem& p) {
    return timing_mode_options(session.case_options, app, o, head_of(p));
  };
  // --list-cases: one line per case this command would run, the identity of its result record
  // (status skipped until run), for runners that track cases.
  if (o.list_cases) {
    for (const auto& p : problems)
      for (const auto& options : modes_of(p))
        for (const Entry* e : selected) os << to_json(s.identity(*e, p, options)).dump() << "\n";
    return 0;
  }
  ResultSet& set = session.set;
  for (const Entry* e : selected)
    if (e->backend) set.system["libraries"][e->name] = e->backend->library_version();
  print_banner(os, s.program, set, s.banner_tail ? s.banner_tail() : "");
  if (s.before_cases) s.before_cases(session, selected, problems);
  write_results(session);
  if (s.print_count)
    s.print_count(problems.size(), selected.size());
  else
    print_case_count(os, problems.size(), selected.size(), o.timing == "both" ? 2 : 1);

  for (const auto& p : problems) {
    // The inputs are made where the host side fits; a case that does not fit is recorded.
    if (s.begin_problem)
      s.begin_problem(session, p,
                      memory_shortfall(s.memory_need(p, false), memory.available()).empty());
    for (const auto& options : modes_of(p))
      for (const Entry* e : selected) {
        if (s.before_case) s.before_case(session, *e, p);
        const MemoryNeed need = e->backend ? need_of(p, *e) : MemoryNeed{};
        if (const std::string why = memory_shortfall(need, memory.available());
            e->backend && gated(p) && !why.empty()) {
          finish_case(os, session,
                      memory_unsupported(s.identity(*e, p, options), why, need, memory.available()),
                      nullptr);
          continue;
        }
        std::optional<CaseRun> out = s.run(session, *e, p, options);
        if (!out) continue;
        finish_case(os, session, std::move(out->result), out->trace);
        if (s.after_case) s.after_case(session, set.results.back());
      }
  }

  print_summary_section(os, set.results);
  if (s.report) s.report(session);
  return finish_run(os, session, o.strict, s.written);
}

}  // namespace bench
