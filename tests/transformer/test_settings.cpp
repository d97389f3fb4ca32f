// The transformer suite's settings (models/transformer/settings.cpp, problem.cpp): the descriptor
// with and without the model's name round-trips, presets and config files, the models of a run
// (--model, or the models --problem names) and the expansion into each model's cases; a run's
// grid (preset, options given) and dtypes.
#include <gtest/gtest.h>

#include <fstream>

#include "core/error.hpp"
#include "models/transformer/problem.hpp"
#include "models/transformer/settings.hpp"
#include "tests/common/temp_dir.hpp"

namespace transformer {
namespace {

using bench::DataType;
using bench::testing::TempDir;

TEST(TransformerSettings, PresetsAndConfigFiles) {
  const std::vector<Grid> presets = load_presets(presets_path());
  const Grid q = find_preset(presets, "quick_test");
  EXPECT_EQ(q.batch_sizes, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(q.input_lengths, (std::vector<std::int64_t>{32, 64}));
  EXPECT_EQ(q.output_length, 20);  // the seed's quick_test
  EXPECT_EQ(q.num_runs, 1);
  for (const char* n : {"default", "small_scale", "medium_scale", "large_scale", "batch_size_study",
                        "input_length_study"})
    EXPECT_NO_THROW(find_preset(presets, n)) << n;
  EXPECT_THROW(find_preset(presets, "huge"), bench::UsageError);
  TempDir dir;
  const std::string file = (dir.path() / "c.json").string();
  std::ofstream(file) << R"({"batch_sizes": [3], "output_length": 7, "model_name": "x"})";
  std::vector<std::string> ignored;
  const Grid g = read_grid_file(file, q, &ignored);
  EXPECT_EQ(g.batch_sizes, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(g.input_lengths, q.input_lengths);
  EXPECT_EQ(g.output_length, 7);
  EXPECT_EQ(ignored, (std::vector<std::string>{"model_name"}));
  std::ofstream(file) << R"({"batch_sizes": "many"})";
  EXPECT_THROW(read_grid_file(file, q, nullptr), bench::UsageError);
  EXPECT_EQ(expand(g, Task::generate, {bench::DataType::fp32, bench::DataType::bf16}).size(), 4u);
  // The created file reads back as the preset.
  std::ofstream(file) << to_json(q).dump();
  const Grid back = read_grid_file(file, Grid{}, nullptr);
  EXPECT_EQ(back.batch_sizes, q.batch_sizes);
  EXPECT_EQ(back.num_runs, q.num_runs);
}

TEST(TransformerSettings, GridAndDtypesOfARun) {
  RunSettings s;
  s.preset = "quick_test";
  s.batch_sizes = {3};
  s.num_runs = 2;
  s.temperature = 0;  // given: replaces the preset's
  Grid g = resolve_grid(s, presets_path(), nullptr);
  EXPECT_EQ(g.batch_sizes, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(g.input_lengths, (std::vector<std::int64_t>{32, 64}));
  EXPECT_EQ(g.output_length, 20);  // not given: the preset's
  EXPECT_EQ(g.num_runs, 2);
  s.problems = {"mb1in4out2"};  // the cases themselves, with a grid option
  EXPECT_THROW(resolve_grid(s, presets_path(), nullptr), bench::UsageError);
  s.batch_sizes.clear();
  EXPECT_NO_THROW(resolve_grid(s, presets_path(), nullptr));
  s.top_p = 1.5;  // checked as a grid
  EXPECT_THROW(resolve_grid(s, presets_path(), nullptr), bench::UsageError);
  EXPECT_EQ(resolve_dtypes({}, false), (std::vector<DataType>{DataType::fp32}));
  EXPECT_EQ(resolve_dtypes({}, true), (std::vector<DataType>{DataType::fp16}));
  EXPECT_EQ(resolve_dtypes({"bf16", "fp32"}, true),
            (std::vector<DataType>{DataType::bf16, DataType::fp32}));
  EXPECT_THROW(resolve_dtypes({"tf32"}, false), bench::UsageError);
}

TEST(TransformerProblem, DescriptorRoundTrips) {
  for (const char* s : {"mb1in32out16", "mb64in4096out256", "train_mb4in512"})
    EXPECT_EQ(parse_problem(s).str(), s);
  for (const char* s : {"mb0in3out2", "mb1in2", "x", "train_mb1in2out3"})
    EXPECT_THROW(parse_problem(s), bench::UsageError) << s;
}

TEST(TransformerProblem, NamedDescriptorRoundTrips) {
  for (const char* s : {"mb1in32out16:n\"gpt2\"", "train_mb4in512:n\"qwen2-0.5b\"",
                        "mb2in8out4:n\"tiny model.v2\""}) {
    const NamedProblem n = parse_named_problem(s);
    EXPECT_EQ(str_with_name(n.problem, n.model), s);
  }
  const NamedProblem plain = parse_named_problem("mb1in32out16", DataType::bf16);
  EXPECT_EQ(plain.model, "");
  EXPECT_EQ(plain.problem.dtype, DataType::bf16);
  EXPECT_EQ(str_with_name(plain.problem, ""), "mb1in32out16");
  for (const char* s :
       {"mb1in32out16:n\"\"", "mb1in32out16:gpt2", "mb1in32out16:n\"a\":x", "x:n\"gpt2\""})
    EXPECT_THROW(parse_named_problem(s), bench::UsageError) << s;
}

TEST(TransformerSettings, ModelsOfARun) {
  TempDir dir;
  const std::string file = (dir.path() / "tiny-gpt2.json").string();
  std::ofstream(file) << R"({"model_type": "gpt2", "vocab_size": 97, "n_embd": 32, "n_layer": 2,
                             "n_head": 4, "n_positions": 64})";
  // --model given: its specs, named as results name them.
  auto models = resolve_models({"gpt2", file}, true, {"mb1in4out2:n\"qwen2-0.5b\""}, 1);
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models[0].config.name, "gpt2");
  EXPECT_EQ(models[1].config.name, "tiny-gpt2");
  EXPECT_EQ(models[1].spec, file);
  EXPECT_EQ(models[1].checkpoint_dir, "");
  // Not given: the models the descriptors name, else the default.
  models = resolve_models({"gpt2"}, false, {"mb1in4out2:n\"qwen2-0.5b\"", "mb1in4out2"}, 1);
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].config.name, "qwen2-0.5b");
  EXPECT_EQ(resolve_models({"gpt2"}, false, {"mb1in4out2"}, 1).at(0).config.name, "gpt2");
  EXPECT_THROW(resolve_models({file, file}, true, {}, 1), bench::UsageError);
  EXPECT_THROW(resolve_models({"gpt9"}, true, {}, 1), bench::UsageError);
  EXPECT_THROW(resolve_models({"gpt2"}, false, {"mb1in4out2:n\"gpt9\""}, 1), bench::UsageError);
}

TEST(TransformerSettings, CasesOfEachModel) {
  const auto models = resolve_models({"gpt2", "qwen2-0.5b"}, true, {}, 1);
  Grid g;
  g.batch_sizes = {1, 2};
  g.input_lengths = {8};
  g.output_length = 4;
  // The grid, on every model, in every dtype.
  CaseList list = expand_cases(models, {}, g, "", {DataType::fp16, DataType::bf16});
  EXPECT_EQ(list.task, Task::generate);
  ASSERT_EQ(list.by_model.size(), 2u);
  EXPECT_EQ(list.by_model[1].model, 1u);
  EXPECT_EQ(list.by_model[1].problems.size(), 4u);
  EXPECT_EQ(expand_cases(models, {}, g, "train", {DataType::fp32}).by_model[0].problems[0].str(),
            "train_mb1in8");
  // Descriptors: a named one on its model only, an unnamed one on every model, repeats once.
  list = expand_cases(models,
                      {"mb4in16out2:n\"qwen2-0.5b\"", "mb1in8out4", "mb4in16out2:n\"qwen2-0.5b\""},
                      g, "", {DataType::fp32});
  ASSERT_EQ(list.by_model.size(), 2u);
  ASSERT_EQ(list.by_model[0].problems.size(), 1u);
  EXPECT_EQ(list.by_model[0].problems[0].str(), "mb1in8out4");
  ASSERT_EQ(list.by_model[1].problems.size(), 2u);
  EXPECT_EQ(list.by_model[1].problems[0].str(), "mb4in16out2");
  // Only the model a descriptor names has cases.
  list = expand_cases(models, {"train_mb2in8:n\"gpt2\""}, g, "train", {DataType::fp32});
  EXPECT_EQ(list.task, Task::train);
  ASSERT_EQ(list.by_model.size(), 1u);
  EXPECT_EQ(list.by_model[0].model, 0u);
  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"mb1in8out4:n\"llama-3.2-1b\""}, {"mb1in8out4", "train_mb1in8"}, {"mb1in8"}})
    EXPECT_THROW(expand_cases(models, bad, g, "", {DataType::fp32}), bench::UsageError);
  EXPECT_THROW(expand_cases(models, {"mb1in8out4"}, g, "train", {DataType::fp32}),
               bench::UsageError);
}

}  // namespace
}  // namespace transformer
