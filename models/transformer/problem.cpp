#include "models/transformer/problem.hpp"

#include <regex>

#include "core/error.hpp"

namespace transformer {

std::string to_string(Task t) {
  return t == Task::train ? "train" : "generate";
}

Task parse_task(const std::string& text) {
  if (text == "generate" || text == "inference") return Task::generate;
  if (text == "train") return Task::train;
  throw bench::UsageError("--task: " + bench::quote_input(text, 40) +
                          " is not a task (generate, train)");
}

std::string Problem::str() const {
  if (task == Task::train) return "train_mb" + std::to_string(mb) + "in" + std::to_string(in);
  return "mb" + std::to_string(mb) + "in" + std::to_string(in) + "out" + std::to_string(out);
}

double Problem::flops(const ModelConfig& cfg) const {
  const double b = double(mb), n = double(in);
  if (task == Task::train) return 3 * cfg.forward_flops(b * n, (n + 1) / 2);
  const double decode_tokens = double(out - 1);
  return cfg.forward_flops(b * n, (n + 1) / 2) +
         cfg.forward_flops(b * decode_tokens, n + double(out) / 2);
}

nlohmann::ordered_json Problem::params(const ModelConfig& cfg) const {
  nlohmann::ordered_json p = {{"task", to_string(task)}, {"batch_size", mb}, {"input_length", in}};
  if (task == Task::generate) p["output_length"] = out;
  p["dtype"] = bench::to_string(dtype);
  p["model"] = cfg.name;
  p["arch"] = to_string(cfg.arch);
  p["parameters"] = cfg.parameter_count();
  return p;
}

namespace {
constexpr std::size_t kMaxDescriptorLength = 512;  // a model name of some 480 characters
}  // namespace

Problem parse_problem(const std::string& text, bench::DataType dtype) {
  static const std::regex gen(R"(mb([0-9]{1,9})in([0-9]{1,9})out([0-9]{1,9}))");
  static const std::regex train(R"(train_mb([0-9]{1,9})in([0-9]{1,9}))");
  std::smatch m;
  Problem p;
  p.dtype = dtype;
  // std::regex recurses per character: a long text could exhaust the stack.
  if (text.size() > kMaxDescriptorLength)
    throw bench::UsageError(bench::quote_input(text, 40) + " is not a transformer case (too long)");
  if (std::regex_match(text, m, gen)) {
    p.mb = std::stoll(m[1]);
    p.in = std::stoll(m[2]);
    p.out = std::stoll(m[3]);
  } else if (std::regex_match(text, m, train)) {
    p.task = Task::train;
    p.mb = std::stoll(m[1]);
    p.in = std::stoll(m[2]);
    p.out = 0;
  } else {
    throw bench::UsageError(bench::quote_input(text, 40) +
                            " is not a transformer case (mb<B>in<L>out<N> or train_mb<B>in<L>)");
  }
  if (p.mb < 1 || p.in < 1 || (p.task == Task::generate && p.out < 1))
    throw bench::UsageError(bench::quote_input(text, 40) + ": batch and lengths must be positive");
  return p;
}

std::string str_with_name(const Problem& p, const std::string& model) {
  return model.empty() ? p.str() : p.str() + ":n\"" + model + "\"";
}

NamedProblem parse_named_problem(const std::string& text, bench::DataType dtype) {
  static const std::regex named(R"re(([^:]*):n"([^"]+)")re");
  if (text.size() > kMaxDescriptorLength)  // as parse_problem: no regex over a long text
    throw bench::UsageError(bench::quote_input(text, 40) + " is not a transformer case (too long)");
  std::smatch m;
  if (std::regex_match(text, m, named)) return {parse_problem(m[1], dtype), m[2]};
  if (text.find(':') != std::string::npos)
    throw bench::UsageError(bench::quote_input(text, 40) +
                            " is not a transformer case (expected e.g. " +
                            "mb1in128out64 or mb1in128out64:n\"gpt2\")");
  return {parse_problem(text, dtype), ""};
}

}  // namespace transformer
