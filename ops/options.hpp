// myops's own command-line options, in --help's order, and their checks after parsing: the
// suite's part of the settings room (the settings themselves and their expansion into problems
// are ops/settings.hpp). Inline, for the driver alone: it parses CLI11 already, so these add no
// translation unit that would parse it again (a few seconds per build, twice in CI).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/error.hpp"
#include "core/measure.hpp"
#include "core/suite_options.hpp"
#include "ops/settings.hpp"

namespace ops {

// myops' own command line: the settings, the backends and their options, and what the suite
// writes and lists; the shared options are core/driver.hpp's (bench::DriverOptions).
struct Options {
  Settings settings;
  std::vector<std::string> dtypes = {"fp32"};  // --dtype's names, into settings.dtypes
  std::vector<std::string> backends;
  BackendOptions backend_options;
  std::string markdown_path;
  bool fast = false, list_ops = false, no_peaks = false;
};

// Adds myops' own options to app, in --help's order (before the shared ones).
inline void add_options(CLI::App& app, Options& o) {
  auto& s = o.settings;
  bench::add_list_option(app, "--size", s.sizes,
                         "Size classes: small medium large xlarge batched, or all (every class "
                         "but xlarge); each is an op list in experiments/ops/ (list)");
  app.add_option("--category", s.categories,
                 "Only these categories: element activation reduction normalization matmul "
                 "memory (list)")
      ->delimiter(',');
  app.add_option("--op", s.ops, "Only these ops, e.g. add, softmax, transpose (list)")
      ->delimiter(',');
  bench::add_list_option(app, "--dtype", o.dtypes,
                         "Data types: fp32 fp16 bf16, tf32 (matmul only) (list); a descriptor "
                         "naming one keeps it");
  bench::add_problem_sources(
      app, s.descriptors,
      "Op descriptor, e.g. add:4096x4096+1x4096:bf16 (repeatable); replaces --size", "--ops-file",
      s.ops_files, "Op list file: one descriptor per line (repeatable); replaces --size");
  bench::add_backend_option(app, o.backends);
  app.add_option("--variant", o.backend_options.variant,
                 "Kernel variant of own_cuda: a number (ops/cuda/*.cu list them), or search (time "
                 "the candidates once as compile time and keep the fastest); default: the best "
                 "for each op");
  app.add_flag("--fast", o.fast,
               "Short sampling (1 warm-up, 10 to 100 ms per case) for a quick look");
  app.add_flag("--no-peaks", o.no_peaks,
               "Do not measure the copy bandwidth and matmul ceiling at the start (no "
               "efficiencies)");
  app.add_option("--markdown", o.markdown_path, "Write a Markdown table of the results to FILE");
  app.add_flag("--list-ops", o.list_ops, "List the ops and size classes and exit");
}

// After parsing: --backend's current names, the settings' data types, --fast's sampling in m
// (only what the user did not set); UsageError for --size with --problem/--ops-file. Returns the
// start of each case's reproducing command ("myops --variant 3 --fast").
inline std::string finish_options(const CLI::App& app, Options& o, bench::MeasureConfig& m) {
  auto& s = o.settings;
  bench::finish_backend_names(o.backends);
  if (app.count("--size") && !(s.descriptors.empty() && s.ops_files.empty()))
    throw bench::UsageError("--problem/--ops-file replace --size; give one or the other");
  s.dtypes = bench::parse_data_types(o.dtypes);
  if (o.fast) {  // only what the user did not set
    if (!app.count("--warmup")) m.warmup_iters = 1;
    if (!app.count("--max-time-ms")) m.max_time_ms = 100;
    if (!app.count("--min-time-ms")) m.min_time_ms = std::min(10.0, m.max_time_ms);
    if (!app.count("--min-iters")) m.min_iters = 3;
  }
  std::string head = "myops";
  if (!o.backend_options.variant.empty()) head += " --variant " + o.backend_options.variant;
  if (o.fast) head += " --fast";
  return head;
}

}  // namespace ops
