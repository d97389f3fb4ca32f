#include "models/mlp/scaling.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "core/error.hpp"

namespace mlp {

const std::vector<std::string>& study_parameters() {
  static const std::vector<std::string> k = {"num_steps", "num_layers", "batch_size", "dim"};
  return k;
}

double expected_exponent(const std::string& parameter) {
  return parameter == "dim" ? 2.0 : 1.0;
}

namespace {

std::int64_t& field(MlpProblem& p, const std::string& name) {
  if (name == "dim") return p.dim;
  if (name == "num_layers") return p.num_layers;
  if (name == "batch_size") return p.batch_size;
  if (name == "num_steps") return p.num_steps;
  throw bench::UsageError("unknown scaling parameter '" + name +
                          "' (allowed: num_steps, num_layers, batch_size, dim, all)");
}

}  // namespace

MlpProblem parse_base(const std::string& text, DataType dt) {
  MlpProblem p;
  p.dim = 256;
  p.num_layers = 4;
  p.batch_size = 256;
  p.num_steps = 2;
  p.dtype = dt;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos)
      throw bench::UsageError("--base: expected key=value, got '" + item + "'");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    std::int64_t& f = field(p, key);
    if (value.empty() || value.size() > 9 ||
        !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
      throw bench::UsageError("--base: " + key + " needs a positive integer, got '" + value + "'");
    f = std::stoll(value);
  }
  if (const std::string why = p.validate(); !why.empty()) throw bench::UsageError("--base: " + why);
  return p;
}

std::vector<MlpProblem> study_problems(const MlpProblem& base,
                                       const std::vector<std::string>& parameters) {
  std::vector<std::string> params;
  for (const auto& s : parameters) {
    if (s == "all") {
      for (const auto& q : study_parameters())
        if (std::find(params.begin(), params.end(), q) == params.end()) params.push_back(q);
      continue;
    }
    MlpProblem probe;
    (void)field(probe, s);  // throws on an unknown name
    if (std::find(params.begin(), params.end(), s) == params.end()) params.push_back(s);
  }
  std::vector<MlpProblem> out;
  MlpProblem b = base;
  b.name = "base";
  out.push_back(b);
  for (const auto& param : params)
    for (const int f : kStudyFactors) {
      MlpProblem p = base;
      field(p, param) *= f;
      p.name = "scale_" + param + "_x" + std::to_string(f);
      if (const std::string why = p.validate(); !why.empty())
        throw bench::UsageError("--scale " + param + " x" + std::to_string(f) + ": " + why);
      out.push_back(p);
    }
  return out;
}

bool in_study(const Problem& p) {
  const std::string n = std::visit([](const auto& x) { return x.name; }, p);
  return n == "base" || n.rfind("scale_", 0) == 0;
}

PowerFit fit_power_law(const std::vector<double>& factors, const std::vector<double>& times) {
  std::vector<double> xs, ys;
  for (std::size_t i = 0; i < factors.size() && i < times.size(); ++i)
    if (factors[i] > 0 && times[i] > 0) {
      xs.push_back(std::log(factors[i]));
      ys.push_back(std::log(times[i]));
    }
  PowerFit fit;
  fit.points = static_cast<int>(xs.size());
  if (xs.size() < 2) return fit;
  const double n = double(xs.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    mx += xs[i] / n;
    my += ys[i] / n;
  }
  double sxx = 0, sxy = 0, syy = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    sxx += (xs[i] - mx) * (xs[i] - mx);
    sxy += (xs[i] - mx) * (ys[i] - my);
    syy += (ys[i] - my) * (ys[i] - my);
  }
  if (sxx <= 0) return fit;
  fit.b = sxy / sxx;
  fit.a = std::exp(my - fit.b * mx);
  double ss_res = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double r = ys[i] - (my + fit.b * (xs[i] - mx));
    ss_res += r * r;
  }
  fit.r2 = syy > 0 ? 1.0 - ss_res / syy : 1.0;
  return fit;
}

nlohmann::ordered_json studies_json(const std::vector<bench::Result>& results) {
  // (backend, dtype, timing mode) -> parameter -> factor -> time; the base is factor 1 of every
  // parameter. The mode (real or pure, however it sampled) keeps --timing both's runs apart.
  using Key = std::tuple<std::string, std::string, std::string>;
  std::map<Key, std::map<std::string, std::map<int, double>>> t;
  std::map<Key, double> base;
  for (const auto& r : results) {
    const auto ms = r.primary_time_ms();
    if (r.status != bench::Status::passed || !ms) continue;
    const Key key{r.backend, r.dtype, r.timing_mode.substr(0, r.timing_mode.find(':'))};
    if (r.name == "base") {
      base[key] = *ms;
      continue;
    }
    if (r.name.rfind("scale_", 0) != 0) continue;
    const auto x = r.name.rfind("_x");
    if (x == std::string::npos) continue;
    const std::string param = r.name.substr(6, x - 6);
    t[key][param][std::atoi(r.name.c_str() + x + 2)] = *ms;
  }
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& [key, per_param] : t) {
    for (const auto& param : study_parameters()) {
      const auto it = per_param.find(param);
      if (it == per_param.end()) continue;
      std::vector<double> f, ms;
      if (const auto b = base.find(key); b != base.end()) {
        f.push_back(1);
        ms.push_back(b->second);
      }
      for (const auto& [factor, time] : it->second) {
        f.push_back(factor);
        ms.push_back(time);
      }
      const PowerFit fit = fit_power_law(f, ms);
      out.push_back({{"backend", std::get<0>(key)},
                     {"dtype", std::get<1>(key)},
                     {"timing", std::get<2>(key)},
                     {"parameter", param},
                     {"factors", f},
                     {"time_ms", ms},
                     {"fit_a_ms", fit.a},
                     {"fit_exponent", fit.b},
                     {"fit_r2", fit.r2},
                     {"expected_exponent", expected_exponent(param)},
                     {"points", fit.points}});
    }
  }
  return out;
}

}  // namespace mlp
