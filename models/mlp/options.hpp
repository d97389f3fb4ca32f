// mymlp's own command-line options, in --help's order, and their checks after parsing: the
// suite's part of the settings room (the settings themselves and their expansion into problems
// are models/mlp/settings.hpp). Inline, for the driver alone: it parses CLI11 already, so these add
// no translation unit that would parse it again (a few seconds per build, twice in CI).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/error.hpp"
#include "core/option_checks.hpp"
#include "core/suite_options.hpp"
#include "models/mlp/settings.hpp"

namespace mlp {

// mymlp's own command line: the problems' settings, how the cases run, the backends; the shared
// options are core/driver.hpp's (bench::DriverOptions).
struct Options {
  Settings settings;
  RunSettings run;
  std::vector<std::string> backends;
};

// Adds mymlp's own options to app, in --help's order (before the shared ones).
inline void add_options(CLI::App& app, Options& o) {
  // Sizes: integers from 1; the problem's own check bounds them (models/mlp/problem.hpp).
  const auto size = bench::integer_in(1, std::numeric_limits<std::int64_t>::max());
  auto add_size = [&](const std::string& name, std::int64_t& value, const std::string& what) {
    app.add_option(name, value, what)->capture_default_str()->check(size);
  };
  add_size("--dim", o.settings.dim, "Width of every Linear layer");
  add_size("--num-layers", o.settings.num_layers, "Layers");
  add_size("--batch-size", o.settings.batch_size, "Rows of the input");
  add_size("--num-steps", o.settings.num_steps, "Steps (forward, loss, backward) per call");
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
  bench::add_list_option(app, "--matmul-dims", o.settings.matmul_dims, "Sizes of --matmul (list)")
      ->check(size);
  bench::add_list_option(app, "--dtype", o.settings.dtypes, "Data types: fp32 tf32 bf16 (list)");
  bench::add_backend_option(app, o.backends, "Backends to run (list; default: all built)");
  app.add_option("--num-warmups", o.run.num_warmups,
                 "The lecture's fixed warm-up count (default: the core's --warmup)")
      ->check(bench::integer_in(0, std::numeric_limits<int>::max()));
  app.add_option("--num-trials", o.run.num_trials,
                 "The lecture's fixed trial count: exactly this many samples, no adaptive stop")
      ->check(bench::integer_in(2, 1000000));
  app.add_option("--phase-steps", o.run.phase_steps, "Steps timed for the forward/backward split")
      ->capture_default_str()
      ->check(bench::integer_in(1, 1000000));
  app.add_option("--profile", o.run.profile_dir,
                 "Profile the cases outside scaling studies into DIR: top-ops table, Chrome "
                 "trace, flame-graph stacks (LibTorch profiler; CUPTI for cuBLASLt)");
  app.add_flag("--no-ceiling", o.run.no_ceiling,
               "Do not measure the matmul ceiling (no fraction of ceiling)");
  // The ceiling's matmuls are the suite's square matmuls: n up to 2^17 (mm:n<size>).
  app.add_option("--ceiling-n", o.run.ceiling_n_cuda, "Size of the GPU ceiling matmul")
      ->capture_default_str()
      ->check(bench::integer_in(1, 131072));
  app.add_option("--ceiling-n-cpu", o.run.ceiling_n_cpu, "Size of the CPU ceiling matmul")
      ->capture_default_str()
      ->check(bench::integer_in(1, 131072));
}

// After parsing: --backend's current names and whether any of the example's sizes was given.
inline void finish_options(const CLI::App& app, Options& o) {
  bench::finish_backend_names(o.backends);
  o.settings.dims_given = app.count("--dim") || app.count("--num-layers") ||
                          app.count("--batch-size") || app.count("--num-steps");
}

}  // namespace mlp
