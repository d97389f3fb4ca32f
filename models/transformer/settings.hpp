// What the user asks of mytransformer, before it becomes cases: a grid (the seed's keys:
// batch_sizes, input_lengths, output_length, num_runs, temperature, top_p,
// max_batch_input_product) from a preset (experiments/transformer/presets.json), a --config-file
// or overrides; and the expansion into problems (one per dtype x batch x input length).
#pragma once

#include <cstdint>
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

// One problem per dtype x batch size x input length (in that nesting order).
std::vector<Problem> expand(const Grid& g, Task task, const std::vector<bench::DataType>& dtypes);

}  // namespace transformer
