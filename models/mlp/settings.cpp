#include "models/mlp/settings.hpp"

#include <limits>
#include <set>

#include <CLI/CLI.hpp>

#include "core/error.hpp"
#include "core/option_checks.hpp"
#include "core/suite_options.hpp"
#include "models/mlp/scaling.hpp"

namespace mlp {

std::vector<Problem> expand(const Settings& o) {
  std::vector<bench::DataType> dtypes;
  for (const auto& d : o.dtypes) {
    const bench::DataType dt = bench::parse_data_type(d);
    if (!is_mlp_dtype(dt))
      throw bench::UsageError("--dtype: " + d + " is not one of the MLP suite's: fp32, tf32, bf16");
    dtypes.push_back(dt);
  }
  std::vector<Problem> out;
  std::set<std::string> seen;
  auto add = [&](const Problem& p) {
    if (seen.insert(str_with_name(p)).second) out.push_back(p);
  };
  const bool dims_given = o.dims_given;
  const bool run_example =
      o.example || dims_given || (o.problems.empty() && o.scale.empty() && !o.matmul);
  for (const auto dt : dtypes) {
    for (const auto& d : o.problems) {
      try {
        add(parse_problem(d, dt));
      } catch (const bench::UsageError& e) {
        throw bench::UsageError(std::string("--problem: ") + e.what());
      }
    }
    if (run_example) {
      MlpProblem p;
      p.dim = o.dim;
      p.num_layers = o.num_layers;
      p.batch_size = o.batch_size;
      p.num_steps = o.num_steps;
      p.dtype = dt;
      if (const std::string why = p.validate(); !why.empty()) throw bench::UsageError(why);
      if (!dims_given) p.name = "example";  // the lecture's example
      add(p);
    }
    if (!o.scale.empty())
      for (const auto& p : study_problems(parse_base(o.base, dt), o.scale)) add(p);
    if (o.matmul)
      for (const auto n : o.matmul_dims) {
        MatmulProblem p;
        p.n = n;
        p.dtype = dt;
        if (const std::string why = p.validate(); !why.empty())
          throw bench::UsageError("--matmul-dims: " + why);
        add(p);
      }
  }
  return out;
}

std::string apply_fixed_counts(const RunSettings& s, bench::MeasureConfig& m) {
  std::string text;
  if (s.num_warmups >= 0) {
    text += " --num-warmups " + std::to_string(s.num_warmups);
    m.warmup_iters = s.num_warmups;
  }
  if (s.num_trials >= 0) {  // no adaptive stop
    text += " --num-trials " + std::to_string(s.num_trials);
    m.min_iters = m.max_iters = s.num_trials;
    m.min_time_ms = 0;
    m.max_time_ms = 1e12;
    m.target_cv = 0;
  }
  return text;
}

void add_options(CLI::App& app, Options& o) {
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

void finish_options(const CLI::App& app, Options& o) {
  bench::finish_backend_names(o.backends);
  o.settings.dims_given = app.count("--dim") || app.count("--num-layers") ||
                          app.count("--batch-size") || app.count("--num-steps");
}

}  // namespace mlp
