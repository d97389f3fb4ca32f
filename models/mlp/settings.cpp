#include "models/mlp/settings.hpp"

#include <set>

#include "core/error.hpp"
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

}  // namespace mlp
