// The lecture's scaling studies: from a base configuration (dim 256, 4 layers, batch 256, 2
// steps), one parameter at a time multiplied by 2..5; time = a x factor^b fitted per parameter
// (least squares on log time against log factor), b printed with R^2 beside the exponent the
// lecture expects (linear in num_steps, num_layers and batch_size; quadratic in dim).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "models/mlp/problem.hpp"

namespace mlp {

// The four parameters in the lecture's order: num_steps, num_layers, batch_size, dim.
const std::vector<std::string>& study_parameters();
double expected_exponent(const std::string& parameter);  // 1, 1, 1, 2
inline const std::vector<int> kStudyFactors = {2, 3, 4, 5};

// "dim=256,num_layers=4,batch_size=256,num_steps=2" (any subset; the rest from the lecture's
// base) as a problem of dtype dt. Throws bench::UsageError naming a bad key or value.
MlpProblem parse_base(const std::string& text, DataType dt);

// Expands --scale (a list of parameters, or "all") into the studies' problems: the base (named
// "base") then each parameter's factors (named "scale_<parameter>_x<factor>"). Throws
// bench::UsageError on an unknown parameter.
std::vector<MlpProblem> study_problems(const MlpProblem& base,
                                       const std::vector<std::string>& parameters);

// Whether p is a study's: named base or scale_*.
bool in_study(const Problem& p);

struct PowerFit {
  double a = 0, b = 0, r2 = 0;
  int points = 0;
};

// Least-squares fit of log(time) = log(a) + b log(factor) over points with factor > 0 and time
// > 0; points < 2 leaves a, b and r2 at 0. R^2 is 1 for an exact power law.
PowerFit fit_power_law(const std::vector<double>& factors, const std::vector<double>& times);

// The studies block of the JSON (results/README.md): per backend and dtype, per parameter, the
// factors, times (primary median, ms), the fitted a, b, R^2 and the expected exponent, from the
// passed results named base and scale_<parameter>_x<factor>. Empty object when there are none.
nlohmann::ordered_json studies_json(const std::vector<bench::Result>& results);

}  // namespace mlp
