// One case of the transformer suite: a generation of batch rows, input_len prompt tokens and
// output_len new tokens (or, with --task train, one training step over batch x seq_len), in one
// dtype. Canonical string, benchdnn-style: "mb4in512out128", "train_mb4in512"; it round-trips.
// With the model's name, as a result's (problem, name) and the runner's --problem carry it:
// "mb4in512out128:n\"gpt2\"" (str_with_name, parse_named_problem).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "models/transformer/config.hpp"

namespace transformer {

enum class Task { generate, train };

std::string to_string(Task t);
Task parse_task(const std::string& text);  // "generate" | "train"; UsageError otherwise

struct Problem {
  Task task = Task::generate;
  std::int64_t mb = 1;    // batch rows
  std::int64_t in = 32;   // prompt length (train: sequence length)
  std::int64_t out = 16;  // tokens generated per row, the first from prefill (generate only)
  bench::DataType dtype = bench::DataType::fp32;

  std::string str() const;
  // Positions the KV cache holds: in + out (generate), rounded up as static_cache_len does.
  std::int64_t cache_len() const { return static_cache_len(in + out); }
  // Work of one generation (prefill + out - 1 decode steps) or one training step (forward and
  // a backward of twice its work), matmuls only, 2 FLOPs per multiply-add.
  double flops(const ModelConfig& cfg) const;
  nlohmann::ordered_json params(const ModelConfig& cfg) const;
};

// Parses str()'s form; UsageError naming the text otherwise.
Problem parse_problem(const std::string& text, bench::DataType dtype = bench::DataType::fp32);

// A descriptor with the model it runs on; model "" when the text names none.
struct NamedProblem {
  Problem problem;
  std::string model;
};
// str() + :n"model" ("" model: str() alone).
std::string str_with_name(const Problem& p, const std::string& model);
// Parses str_with_name()'s form (the name part optional; a name holds no '"'); UsageError naming
// the text otherwise.
NamedProblem parse_named_problem(const std::string& text,
                                 bench::DataType dtype = bench::DataType::fp32);

}  // namespace transformer
