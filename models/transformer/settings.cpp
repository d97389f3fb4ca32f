#include "models/transformer/settings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "core/error.hpp"
#include "core/paths.hpp"
#include "core/printers.hpp"
#include "core/system_info.hpp"

namespace transformer {

using bench::UsageError;
using nlohmann::json;

namespace {

json read_json_file(const std::string& path, const std::string& option) {
  bench::check_input_file(option, path);  // a FIFO or a folder is refused, never opened
  std::ifstream in(path);
  if (!in) throw UsageError(option + ": cannot open '" + path + "'");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    const std::string what = e.what();
    throw UsageError(option + ": '" + path +
                     "' is not valid JSON: " + what.substr(0, what.find('\n')));
  }
}

std::vector<std::int64_t> int_list(const json& v, const std::string& where, const char* key) {
  if (v.is_number_integer()) return {v.get<std::int64_t>()};
  if (!v.is_array() || v.empty())
    throw UsageError(where + ": '" + key + "' must be a non-empty list of integers");
  std::vector<std::int64_t> out;
  for (const auto& x : v) {
    if (!x.is_number_integer())
      throw UsageError(where + ": '" + key + "' must be a non-empty list of integers");
    out.push_back(x.get<std::int64_t>());
  }
  return out;
}

}  // namespace

std::string presets_path() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("MYCONV_TRANSFORMER_PRESETS")) candidates.emplace_back(env);
  candidates.push_back(bench::executable_dir() +
                       "/../share/myconv/experiments/transformer/presets.json");
#ifdef MYCONV_SOURCE_DIR
  candidates.emplace_back(MYCONV_SOURCE_DIR "/experiments/transformer/presets.json");
#endif
  for (const auto& c : candidates)
    if (std::filesystem::is_regular_file(c)) return c;
  return "";
}

void apply_grid_json(const json& j, Grid& g, const std::string& where,
                     std::vector<std::string>* ignored) {
  if (!j.is_object()) throw UsageError(where + ": expected a JSON object of settings");
  for (const auto& [key, v] : j.items()) {
    const auto need_integer = [&, &key = key](const json& x) {
      if (!x.is_number_integer()) throw UsageError(where + ": '" + key + "' must be an integer");
    };
    try {
      if (key == "batch_sizes") {
        g.batch_sizes = int_list(v, where, "batch_sizes");
      } else if (key == "input_lengths") {
        g.input_lengths = int_list(v, where, "input_lengths");
      } else if (key == "output_length") {
        need_integer(v);
        g.output_length = v.get<std::int64_t>();
      } else if (key == "num_runs") {
        need_integer(v);
        g.num_runs = v.get<int>();
      } else if (key == "temperature") {
        g.temperature = v.get<double>();
      } else if (key == "top_p") {
        g.top_p = v.get<double>();
      } else if (key == "max_batch_input_product") {
        need_integer(v);
        g.max_batch_input_product = v.get<std::int64_t>();
      } else if (key == "description") {
        g.description = v.get<std::string>();
      } else if (ignored) {
        ignored->push_back(key);
      }
    } catch (const json::exception&) {
      throw UsageError(where + ": '" + key + "' has a value of the wrong type");
    }
  }
}

std::vector<Grid> load_presets(const std::string& path) {
  if (path.empty())
    throw UsageError(
        "--preset: experiments/transformer/presets.json was not found beside the "
        "program or in the source tree; set MYCONV_TRANSFORMER_PRESETS");
  const json j = read_json_file(path, "--preset");
  if (!j.is_object()) throw UsageError(path + ": expected an object of presets");
  std::vector<Grid> presets;
  for (const auto& [name, entry] : j.items()) {
    if (!name.empty() && name[0] == '_') continue;  // comments
    Grid g;
    g.name = name;
    apply_grid_json(entry, g, path + ": preset '" + name + "'", nullptr);
    check_grid(g);
    presets.push_back(std::move(g));
  }
  return presets;
}

Grid find_preset(const std::vector<Grid>& presets, const std::string& name) {
  std::string known;
  for (const auto& p : presets) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw UsageError("--preset: unknown preset '" + name + "' (known: " + known + ")");
}

Grid read_grid_file(const std::string& path, const Grid& base, std::vector<std::string>* ignored) {
  Grid g = base;
  g.name = path;
  apply_grid_json(read_json_file(path, "--config-file"), g, "--config-file " + path, ignored);
  return g;
}

nlohmann::ordered_json to_json(const Grid& g) {
  return {{"batch_sizes", g.batch_sizes},
          {"input_lengths", g.input_lengths},
          {"output_length", g.output_length},
          {"num_runs", g.num_runs},
          {"temperature", g.temperature},
          {"top_p", g.top_p},
          {"max_batch_input_product", g.max_batch_input_product}};
}

void check_grid(const Grid& g) {
  const std::string where =
      "settings (" + (g.name.empty() ? std::string("overrides") : g.name) + ")";
  if (g.batch_sizes.empty() || g.input_lengths.empty())
    throw UsageError(where + ": batch_sizes and input_lengths must not be empty");
  // Sizes of at most 9 digits, as the descriptors write them (problem.hpp): their products stay
  // far inside int64.
  constexpr std::int64_t kMaxSize = 999999999;
  for (auto b : g.batch_sizes)
    if (b < 1 || b > kMaxSize) throw UsageError(where + ": batch sizes must be in 1..999999999");
  for (auto l : g.input_lengths)
    if (l < 1 || l > kMaxSize) throw UsageError(where + ": input lengths must be in 1..999999999");
  if (g.output_length < 1 || g.output_length > kMaxSize)
    throw UsageError(where + ": output_length must be in 1..999999999");
  if (g.num_runs < 1) throw UsageError(where + ": num_runs must be positive");
  if (!(g.temperature >= 0) || !std::isfinite(g.temperature))
    throw UsageError(where + ": temperature must be a finite number >= 0");
  if (!(g.top_p > 0 && g.top_p <= 1)) throw UsageError(where + ": top_p must be in (0, 1]");
  if (g.max_batch_input_product < 1)
    throw UsageError(where + ": max_batch_input_product must be positive");
}

std::vector<Problem> expand(const Grid& g, Task task, const std::vector<bench::DataType>& dtypes) {
  std::vector<Problem> out;
  for (const auto dt : dtypes)
    for (const auto b : g.batch_sizes)
      for (const auto l : g.input_lengths) {
        Problem p;
        p.task = task;
        p.mb = b;
        p.in = l;
        p.out = task == Task::train ? 0 : g.output_length;
        p.dtype = dt;
        out.push_back(p);
      }
  return out;
}

ModelSource resolve_model(const std::string& spec, std::uint64_t seed) {
  namespace fs = std::filesystem;
  ModelSource s;
  s.spec = spec;
  const std::string random = "random init (seed " + std::to_string(seed) + ")";
  if (fs::is_directory(spec)) {
    const fs::path cfg = fs::path(spec) / "config.json";
    if (!fs::is_regular_file(cfg)) throw UsageError("--model: '" + spec + "' has no config.json");
    s.config = load_config_file(cfg.string());
    s.config.name = fs::path(spec).filename().string();
    if (s.config.name.empty()) s.config.name = spec;
    if (fs::exists(fs::path(spec) / "model.safetensors") ||
        fs::exists(fs::path(spec) / "model.safetensors.index.json")) {
      s.checkpoint_dir = spec;
      s.description = "checkpoint " + spec;
    } else {
      s.description = random + " from " + cfg.string() + " (the folder has no safetensors)";
    }
  } else if (fs::is_regular_file(spec)) {
    s.config = load_config_file(spec);
    s.config.name = fs::path(spec).stem().string();
    s.description = random + " from " + spec;
  } else {
    if (fs::exists(spec)) bench::check_input_file("--model", spec);  // a FIFO, a device: refused
    s.config = builtin_config(spec);
    s.description = random + " from the built-in config " + spec;
  }
  return s;
}

std::vector<ModelSource> resolve_models(const std::vector<std::string>& specs, bool model_given,
                                        const std::vector<std::string>& descriptors,
                                        std::uint64_t seed) {
  std::vector<std::string> chosen = specs;
  if (!model_given) {
    std::vector<std::string> named;
    for (const auto& d : descriptors) {
      std::string n;
      try {
        n = parse_named_problem(d).model;
      } catch (const UsageError& e) {
        throw UsageError(std::string("--problem: ") + e.what());
      }
      if (!n.empty() && std::find(named.begin(), named.end(), n) == named.end()) named.push_back(n);
    }
    if (!named.empty()) chosen = named;
  }
  if (chosen.empty()) throw UsageError("--model: no model given");
  std::vector<ModelSource> out;
  for (const auto& spec : chosen) {
    ModelSource m = resolve_model(spec, seed);
    for (const auto& other : out)
      if (other.config.name == m.config.name)
        throw UsageError("--model: '" + other.spec + "' and '" + spec + "' are both named '" +
                         m.config.name + "' (a result names its model by that name)");
    out.push_back(std::move(m));
  }
  return out;
}

CaseList expand_cases(const std::vector<ModelSource>& models,
                      const std::vector<std::string>& descriptors, const Grid& g,
                      const std::string& task_option, const std::vector<bench::DataType>& dtypes) {
  CaseList list;
  if (descriptors.empty()) {
    list.task = parse_task(task_option.empty() ? "generate" : task_option);
    for (std::size_t i = 0; i < models.size(); ++i)
      list.by_model.push_back({i, expand(g, list.task, dtypes)});
    return list;
  }
  std::vector<NamedProblem> named;
  std::set<std::string> seen;
  for (const auto& d : descriptors) {
    NamedProblem n;
    try {
      n = parse_named_problem(d);
    } catch (const UsageError& e) {
      throw UsageError(std::string("--problem: ") + e.what());
    }
    if (!seen.insert(str_with_name(n.problem, n.model)).second) continue;
    if (named.empty()) list.task = n.problem.task;
    if (n.problem.task != list.task)
      throw UsageError("--problem: generations and training steps in one run ('" +
                       descriptors.front() + "', '" + d + "'); run them separately");
    if (!n.model.empty() && std::none_of(models.begin(), models.end(), [&](const ModelSource& m) {
          return m.config.name == n.model;
        })) {
      std::string known;
      for (const auto& m : models) known += (known.empty() ? "" : ", ") + m.config.name;
      throw UsageError("--problem '" + d + "' names model '" + n.model +
                       "', which is not among --model's (" + known + ")");
    }
    named.push_back(n);
  }
  if (!task_option.empty() && parse_task(task_option) != list.task)
    throw UsageError("--task " + task_option + ": the --problem cases are " +
                     (list.task == Task::train ? "training steps" : "generations"));
  for (std::size_t i = 0; i < models.size(); ++i) {
    ModelCases mc{i, {}};
    for (const auto dt : dtypes)
      for (const auto& n : named)
        if (n.model.empty() || n.model == models[i].config.name) {
          Problem p = n.problem;
          p.dtype = dt;
          mc.problems.push_back(p);
        }
    if (!mc.problems.empty()) list.by_model.push_back(std::move(mc));
  }
  return list;
}

std::string command_text(const Grid& g, Task task) {
  std::string s;
  if (task == Task::train) s += " --task train";
  if (g.temperature > 0)
    s += " --temperature " + bench::format_fixed(g.temperature, 3) + " --top-p " +
         bench::format_fixed(g.top_p, 3);
  s += " --num-runs " + std::to_string(g.num_runs);
  if (g.max_batch_input_product != kDefaultMaxBatchInputProduct)
    s += " --max-batch-input-product " + std::to_string(g.max_batch_input_product);
  return s;
}

void print_presets(std::ostream& os, const std::vector<Grid>& presets, const std::string& path) {
  bench::Table t({"preset", "batch sizes", "input lengths", "output", "runs", "description"});
  auto list = [](const std::vector<std::int64_t>& v) {
    std::string s;
    for (auto x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return s;
  };
  for (const auto& g : presets)
    t.add_row({g.name, list(g.batch_sizes), list(g.input_lengths), std::to_string(g.output_length),
               std::to_string(g.num_runs), g.description});
  t.print(os);
  os << "from " << path << " (our values, to be replaced by the seed's exact ones when known)\n";
}

Grid resolve_grid(const RunSettings& s, const std::string& presets_path,
                  std::vector<std::string>* ignored) {
  if (!s.problems.empty() &&
      (!s.batch_sizes.empty() || !s.input_lengths.empty() || s.output_length > 0))
    throw UsageError(
        "--problem gives the cases themselves: give it or --batch-size, --input-length, "
        "--output-length, not both");
  Grid grid = find_preset(load_presets(presets_path), s.preset.empty() ? "default" : s.preset);
  if (!s.config_file.empty()) grid = read_grid_file(s.config_file, grid, ignored);
  if (!s.batch_sizes.empty()) grid.batch_sizes = s.batch_sizes;
  if (!s.input_lengths.empty()) grid.input_lengths = s.input_lengths;
  if (s.output_length > 0) grid.output_length = s.output_length;
  if (s.num_runs > 0) grid.num_runs = s.num_runs;
  if (s.temperature >= 0) grid.temperature = s.temperature;
  if (s.top_p >= 0) grid.top_p = s.top_p;
  if (s.max_batch_input_product > 0) grid.max_batch_input_product = s.max_batch_input_product;
  check_grid(grid);
  return grid;
}

std::vector<bench::DataType> resolve_dtypes(const std::vector<std::string>& names, bool cuda) {
  std::vector<bench::DataType> dtypes;
  for (const auto& d : names.empty() ? std::vector<std::string>{cuda ? "fp16" : "fp32"} : names) {
    dtypes.push_back(bench::parse_data_type(d));
    if (dtypes.back() == bench::DataType::tf32)
      throw UsageError(
          "--dtype: tf32 is a math mode of fp32 matmuls, not a storage type; "
          "mytransformer runs fp32, fp16, bf16");
  }
  return dtypes;
}

}  // namespace transformer
