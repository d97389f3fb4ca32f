// What the user asks of mytransformer, before it becomes cases: the models (--model: built-in
// names, checkpoint folders, config.json files), a grid (the seed's keys: batch_sizes,
// input_lengths, output_length, num_runs, temperature, top_p, max_batch_input_product) from a
// preset (experiments/transformer/presets.json), a --config-file or overrides, or the cases
// themselves (--problem descriptors, as the runner sends them); and the expansion into each
// model's problems. RunSettings: the options as given; resolve_grid and resolve_dtypes read them
// (the device: backend.hpp resolve_device).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/transformer/problem.hpp"

namespace transformer {

inline constexpr std::int64_t kDefaultMaxBatchInputProduct = 131072;

struct Grid {
  std::string name;  // preset name, or the config file
  std::string description;
  std::vector<std::int64_t> batch_sizes, input_lengths;
  std::int64_t output_length = 16;
  int num_runs = 3;
  double temperature = 0, top_p = 1;
  std::int64_t max_batch_input_product = kDefaultMaxBatchInputProduct;
};

// The presets file: $MYCONV_TRANSFORMER_PRESETS, else experiments/transformer/presets.json in
// the source tree or the install's share folder; "" when none is found.
std::string presets_path();
// Every preset of the file, in its order. UsageError on a bad file.
std::vector<Grid> load_presets(const std::string& path);
// The preset called name; UsageError naming the known ones.
Grid find_preset(const std::vector<Grid>& presets, const std::string& name);

// A config file in the seed's keys over base: the keys present replace base's. Unknown keys are
// returned in *ignored. UsageError (one line naming the file) on bad JSON or bad values.
Grid read_grid_file(const std::string& path, const Grid& base, std::vector<std::string>* ignored);
// Applies one JSON object of the seed's keys (a preset entry or a config file) to g.
void apply_grid_json(const nlohmann::json& j, Grid& g, const std::string& where,
                     std::vector<std::string>* ignored);
// The grid in the seed's keys (--create writes it).
nlohmann::ordered_json to_json(const Grid& g);
// Values in range: positive sizes and runs, temperature >= 0, 0 < top_p <= 1. UsageError.
void check_grid(const Grid& g);

// The settings' part of every case's reproducing command that is not the case's own: the task
// (train), the sampling, the runs, a max_batch_input_product other than the default.
std::string command_text(const Grid& g, Task task);

// One problem per dtype x batch size x input length (in that nesting order).
std::vector<Problem> expand(const Grid& g, Task task, const std::vector<bench::DataType>& dtypes);

// Where a model comes from: a checkpoint folder (config.json, and weights if present), a
// config.json alone, or a built-in name; the last two are random-initialized (seed).
struct ModelSource {
  std::string spec;    // as given to --model
  ModelConfig config;  // config.name: the built-in name, the folder's name or the file's stem
  std::string checkpoint_dir;  // "" = random weights
  std::string description;
};
// UsageError for a folder without config.json, a bad config or an unknown built-in name.
ModelSource resolve_model(const std::string& spec, std::uint64_t seed);

// The cases of a run. Each model's problems, in the models' order (models without one left out).
struct ModelCases {
  std::size_t model = 0;  // index into the models
  std::vector<Problem> problems;
};
struct CaseList {
  Task task = Task::generate;
  std::vector<ModelCases> by_model;
};
// The models of a run: the --model specs when given (model_given), else the models the
// descriptors name (each name read as a spec), else `specs` (the default). UsageError on two
// models of one name.
std::vector<ModelSource> resolve_models(const std::vector<std::string>& specs, bool model_given,
                                        const std::vector<std::string>& descriptors,
                                        std::uint64_t seed);
// Without descriptors: the grid in every dtype for every model, task from task_option ("" =
// generate). With descriptors (--problem, deduplicated): each in every dtype, on the model its
// name names (UsageError when no model has that name) or, without a name, on every model; the
// task is theirs (UsageError when they mix tasks or task_option says another).
CaseList expand_cases(const std::vector<ModelSource>& models,
                      const std::vector<std::string>& descriptors, const Grid& g,
                      const std::string& task_option, const std::vector<bench::DataType>& dtypes);

// The presets of `path`, one row each.
void print_presets(std::ostream& os, const std::vector<Grid>& presets, const std::string& path);

// mytransformer's own options as given. A number left at its value here was not given (the
// options' checks keep a given one in range).
struct RunSettings {
  std::vector<std::string> models = {"gpt2"}, problems;  // --model, --problem
  bool model_given = false, task_given = false;
  std::string device = "auto", preset, config_file, task = "generate";
  std::string sdpa_backend = "auto";
  std::vector<std::int64_t> batch_sizes, input_lengths;
  std::int64_t output_length = 0, max_batch_input_product = 0;
  int num_runs = 0;
  double temperature = -1, top_p = -1;
  std::vector<std::string> dtypes, impls;
  std::string create, create_output, dump_logits;  // --create, --output, --dump-logits
  bool show_presets = false, show_config = false;
};

// The run's grid: the preset (default "default"), a --config-file over it (its keys not used in
// *ignored), the options given over both; checked (check_grid). UsageError where --problem comes
// with --batch-size, --input-length or --output-length.
Grid resolve_grid(const RunSettings& s, const std::string& presets_path,
                  std::vector<std::string>* ignored);

// --dtype (default fp16 on CUDA, fp32 on the CPU); UsageError for tf32 or an unknown name.
std::vector<bench::DataType> resolve_dtypes(const std::vector<std::string>& names, bool cuda);

}  // namespace transformer
