#include "models/transformer/config.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "core/error.hpp"
#include "core/paths.hpp"

namespace transformer {

using bench::UsageError;
using nlohmann::json;

std::string to_string(Arch a) {
  switch (a) {
    case Arch::gpt2:
      return "gpt2";
    case Arch::qwen2:
      return "qwen2";
    case Arch::llama:
      return "llama";
  }
  return "?";
}

namespace {

// The parameter count in T: double for the check of a config (check_positive), int64 once the
// config passed it.
template <typename T>
T count_parameters(const ModelConfig& c) {
  const T h = T(c.hidden_size), kv = T(c.num_kv_heads) * T(c.head_dim),
          q = T(c.num_heads) * T(c.head_dim), inter = T(c.intermediate_size);
  T attn = h * (q + 2 * kv) + q * h;
  if (c.attention_bias) attn += q + 2 * kv;
  if (c.o_bias) attn += h;
  T mlp = 0, norms = 0;
  if (c.arch == Arch::gpt2) {
    mlp = 2 * h * inter + inter + h;
    norms = 2 * 2 * h;
  } else {
    mlp = 3 * h * inter + (c.mlp_bias ? 2 * inter + h : 0);
    norms = 2 * h;
  }
  T total = T(c.num_layers) * (attn + mlp + norms);
  total += T(c.vocab_size) * h;                                         // token embedding
  if (c.arch == Arch::gpt2) total += T(c.max_position_embeddings) * h;  // learned positions
  total += c.arch == Arch::gpt2 ? 2 * h : h;                            // final norm
  if (!c.tie_word_embeddings) total += T(c.vocab_size) * h;
  return total;
}

}  // namespace

std::int64_t ModelConfig::parameter_count() const {
  return count_parameters<std::int64_t>(*this);
}

std::int64_t ModelConfig::kv_cache_bytes(std::int64_t batch, std::int64_t max_len,
                                         int elem_bytes) const {
  return 2 * num_layers * batch * num_kv_heads * max_len * head_dim * elem_bytes;
}

double ModelConfig::forward_flops(double tokens, double context) const {
  const double h = double(hidden_size), q = double(num_heads * head_dim),
               kv = double(num_kv_heads * head_dim), inter = double(intermediate_size);
  const double mlp_mats = arch == Arch::gpt2 ? 2 : 3;
  const double per_token_layer =
      2 * (h * (q + 2 * kv) + q * h + mlp_mats * h * inter) + 2 * 2 * context * q;  // QK^T and PV
  return tokens * (double(num_layers) * per_token_layer + 2 * h * double(vocab_size));
}

namespace {

// A required integer key, or UsageError naming it.
// An integer of the file as int64: one past int64 (an unsigned 2^63 or more) is refused rather
// than wrapped to a negative size.
std::int64_t checked_int(const json& v, const char* key, const std::string& where) {
  if (v.is_number_unsigned() &&
      v.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
    throw UsageError(where + ": config.json '" + key + "' is past 64-bit integers");
  return v.get<std::int64_t>();
}

std::int64_t need_int(const json& j, const char* key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer())
    throw UsageError(where + ": config.json lacks the integer '" + key + "'");
  return checked_int(*it, key, where);
}

std::int64_t int_or(const json& j, const char* key, std::int64_t fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<std::int64_t>() : fallback;
}

double num_or(const json& j, const char* key, double fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

bool bool_or(const json& j, const char* key, bool fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

// RoPE theta and scaling: transformers 4.x writes rope_theta and rope_scaling at the top;
// 5.x writes rope_parameters {rope_type, rope_theta, and the scaling keys}.
void read_rope(const json& j, ModelConfig& c, const std::string& where) {
  c.rope_theta = num_or(j, "rope_theta", 10000);
  json scaling = nullptr;
  if (const auto rp = j.find("rope_parameters"); rp != j.end() && rp->is_object()) {
    c.rope_theta = num_or(*rp, "rope_theta", c.rope_theta);
    scaling = *rp;
  }
  if (const auto rs = j.find("rope_scaling"); rs != j.end() && rs->is_object()) scaling = *rs;
  if (!scaling.is_object()) return;
  std::string type = scaling.value("rope_type", scaling.value("type", std::string("default")));
  if (type == "default") return;
  if (type != "llama3")
    throw UsageError(where + ": rope scaling '" + type +
                     "' is not implemented (default and llama3 are)");
  RopeScaling& s = c.rope_scaling;
  s.type = type;
  s.factor = num_or(scaling, "factor", 1);
  s.low_freq_factor = num_or(scaling, "low_freq_factor", 1);
  s.high_freq_factor = num_or(scaling, "high_freq_factor", 4);
  s.original_max_position_embeddings = int_or(scaling, "original_max_position_embeddings", 8192);
  if (!(s.factor > 0) || !(s.high_freq_factor > s.low_freq_factor))
    throw UsageError(where +
                     ": llama3 rope scaling needs factor > 0 and high_freq_factor > "
                     "low_freq_factor");
}

void check_positive(const ModelConfig& c, const std::string& where) {
  const std::pair<const char*, std::int64_t> dims[] = {
      {"vocab size", c.vocab_size},
      {"hidden size", c.hidden_size},
      {"layer count", c.num_layers},
      {"head count", c.num_heads},
      {"kv head count", c.num_kv_heads},
      {"head dim", c.head_dim},
      {"intermediate size", c.intermediate_size},
      {"max positions", c.max_position_embeddings}};
  // Each size at most 2^40 and the parameter count at most 2^50 (a petabyte in float32, beyond
  // any machine): every count and byte sum of the suite then stays far inside int64. A config
  // within these bounds that no machine here holds is the memory check's (memory.hpp).
  constexpr std::int64_t kMaxSize = std::int64_t(1) << 40;
  for (const auto& [what, v] : dims) {
    if (v <= 0) throw UsageError(where + ": config.json " + what + " must be positive");
    if (v > kMaxSize)
      throw UsageError(where + ": config.json " + what + " must be at most " +
                       std::to_string(kMaxSize) + ", got " + std::to_string(v));
  }
  if (const double n = count_parameters<double>(c); n > std::ldexp(1.0, 50)) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", n);
    throw UsageError(where + ": config.json describes about " + std::string(text) +
                     " parameters, more than 2^50 (a petabyte of weights)");
  }
  if (c.num_heads % c.num_kv_heads != 0)
    throw UsageError(where + ": attention heads (" + std::to_string(c.num_heads) +
                     ") must be a multiple of the kv heads (" + std::to_string(c.num_kv_heads) +
                     ")");
  if (c.head_dim % 2 != 0 && c.arch != Arch::gpt2)
    throw UsageError(where + ": RoPE needs an even head dim");
}

}  // namespace

ModelConfig parse_hf_config(const json& j, const std::string& where) {
  if (!j.is_object()) throw UsageError(where + ": config.json is not a JSON object");
  const std::string type = j.value("model_type", std::string());
  ModelConfig c;
  c.name = where;
  c.checkpoint_dtype = j.value("dtype", j.value("torch_dtype", std::string()));
  if (type == "gpt2") {
    c.arch = Arch::gpt2;
    c.vocab_size = need_int(j, "vocab_size", where);
    c.hidden_size = need_int(j, "n_embd", where);
    c.num_layers = need_int(j, "n_layer", where);
    c.num_heads = need_int(j, "n_head", where);
    c.num_kv_heads = c.num_heads;
    c.max_position_embeddings = need_int(j, "n_positions", where);
    // 4 x n_embd by default (a size past the checks below gets 0 here, never an overflow).
    c.intermediate_size =
        int_or(j, "n_inner", c.hidden_size < (std::int64_t(1) << 40) ? 4 * c.hidden_size : 0);
    c.norm_eps = num_or(j, "layer_norm_epsilon", 1e-5);
    c.activation = j.value("activation_function", std::string("gelu_new"));
    if (c.activation != "gelu_new" && c.activation != "gelu_pytorch_tanh")
      throw UsageError(where + ": GPT-2 activation '" + c.activation +
                       "' is not implemented (gelu_new is)");
    c.activation = "gelu_new";
    c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", true);
    c.attention_bias = c.o_bias = c.mlp_bias = true;
    if (bool_or(j, "scale_attn_by_inverse_layer_idx", false) ||
        bool_or(j, "reorder_and_upcast_attn", false) || !bool_or(j, "scale_attn_weights", true))
      throw UsageError(where +
                       ": GPT-2 attention variants (scale_attn_by_inverse_layer_idx, "
                       "reorder_and_upcast_attn, unscaled) are not implemented");
  } else if (type == "qwen2" || type == "llama") {
    c.arch = type == "qwen2" ? Arch::qwen2 : Arch::llama;
    c.vocab_size = need_int(j, "vocab_size", where);
    c.hidden_size = need_int(j, "hidden_size", where);
    c.num_layers = need_int(j, "num_hidden_layers", where);
    c.num_heads = need_int(j, "num_attention_heads", where);
    c.num_kv_heads = int_or(j, "num_key_value_heads", c.num_heads);
    c.intermediate_size = need_int(j, "intermediate_size", where);
    c.max_position_embeddings = int_or(j, "max_position_embeddings", 2048);
    c.norm_eps = num_or(j, "rms_norm_eps", 1e-6);
    c.activation = j.value("hidden_act", std::string("silu"));
    if (c.activation != "silu")
      throw UsageError(where + ": activation '" + c.activation + "' is not implemented (silu is)");
    // Qwen2Config and LlamaConfig default to an untied head (GPT2Config to a tied one).
    c.tie_word_embeddings = bool_or(j, "tie_word_embeddings", false);
    if (c.arch == Arch::qwen2) {
      c.attention_bias = true;  // Qwen2Attention: q, k, v with bias, o without
      c.o_bias = false;
      if (bool_or(j, "use_sliding_window", false))
        throw UsageError(where + ": Qwen2 sliding-window attention is not implemented");
    } else {
      c.attention_bias = c.o_bias = bool_or(j, "attention_bias", false);
      c.mlp_bias = bool_or(j, "mlp_bias", false);
    }
    read_rope(j, c, where);
  } else {
    throw UsageError(where + ": model_type '" + type + "' is not supported (gpt2, qwen2, llama)");
  }
  if (c.num_heads > 0) c.head_dim = int_or(j, "head_dim", c.hidden_size / c.num_heads);
  if (c.arch == Arch::gpt2 && c.num_heads > 0 && c.hidden_size % c.num_heads != 0)
    throw UsageError(where + ": n_embd must be a multiple of n_head");
  check_positive(c, where);
  return c;
}

ModelConfig load_config_file(const std::string& path) {
  bench::check_input_file("--model", path);  // a FIFO or a folder is refused, never opened
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    std::string what = e.what();
    throw UsageError(path + ": not valid JSON: " + what.substr(0, what.find('\n')));
  }
  return parse_hf_config(j, path);
}

namespace {

// The published config.json of each built-in model (the keys that matter here), from the model
// cards' config.json: openai-community/gpt2, gpt2-medium, gpt2-large, distilbert/distilgpt2,
// Qwen/Qwen2-0.5B, Qwen/Qwen2.5-0.5B, Qwen/Qwen2-1.5B, meta-llama/Llama-3.2-1B.
const std::map<std::string, std::string>& builtin_table() {
  static const std::map<std::string, std::string> table = {
      {"gpt2",
       R"({"model_type": "gpt2", "activation_function": "gelu_new", "n_embd": 768, "n_layer": 12,
           "n_head": 12, "n_positions": 1024, "n_ctx": 1024, "layer_norm_epsilon": 1e-05,
           "vocab_size": 50257, "tie_word_embeddings": true})"},
      {"gpt2-medium",
       R"({"model_type": "gpt2", "activation_function": "gelu_new", "n_embd": 1024, "n_layer": 24,
           "n_head": 16, "n_positions": 1024, "n_ctx": 1024, "layer_norm_epsilon": 1e-05,
           "vocab_size": 50257, "tie_word_embeddings": true})"},
      {"gpt2-large",
       R"({"model_type": "gpt2", "activation_function": "gelu_new", "n_embd": 1280, "n_layer": 36,
           "n_head": 20, "n_positions": 1024, "n_ctx": 1024, "layer_norm_epsilon": 1e-05,
           "vocab_size": 50257, "tie_word_embeddings": true})"},
      {"distilgpt2",
       R"({"model_type": "gpt2", "activation_function": "gelu_new", "n_embd": 768, "n_layer": 6,
           "n_head": 12, "n_positions": 1024, "n_ctx": 1024, "layer_norm_epsilon": 1e-05,
           "vocab_size": 50257, "tie_word_embeddings": true})"},
      {"qwen2-0.5b",
       R"({"model_type": "qwen2", "hidden_act": "silu", "hidden_size": 896,
           "intermediate_size": 4864, "max_position_embeddings": 131072,
           "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
           "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "tie_word_embeddings": true,
           "use_sliding_window": false, "vocab_size": 151936, "torch_dtype": "bfloat16"})"},
      {"qwen2.5-0.5b",
       R"({"model_type": "qwen2", "hidden_act": "silu", "hidden_size": 896,
           "intermediate_size": 4864, "max_position_embeddings": 32768,
           "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
           "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "tie_word_embeddings": true,
           "use_sliding_window": false, "vocab_size": 151936, "torch_dtype": "bfloat16"})"},
      {"qwen2-1.5b",
       R"({"model_type": "qwen2", "hidden_act": "silu", "hidden_size": 1536,
           "intermediate_size": 8960, "max_position_embeddings": 131072,
           "num_attention_heads": 12, "num_hidden_layers": 28, "num_key_value_heads": 2,
           "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "tie_word_embeddings": true,
           "use_sliding_window": false, "vocab_size": 151936, "torch_dtype": "bfloat16"})"},
      {"llama-3.2-1b",
       R"({"model_type": "llama", "hidden_act": "silu", "hidden_size": 2048, "head_dim": 64,
           "intermediate_size": 8192, "max_position_embeddings": 131072,
           "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
           "rms_norm_eps": 1e-05, "attention_bias": false, "mlp_bias": false,
           "rope_theta": 500000.0, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0,
           "low_freq_factor": 1.0, "original_max_position_embeddings": 8192,
           "rope_type": "llama3"}, "tie_word_embeddings": true, "vocab_size": 128256,
           "torch_dtype": "bfloat16"})"}};
  return table;
}

}  // namespace

const std::vector<std::string>& builtin_names() {
  static const std::vector<std::string> names = {"gpt2",       "gpt2-medium", "gpt2-large",
                                                 "distilgpt2", "qwen2-0.5b",  "qwen2.5-0.5b",
                                                 "qwen2-1.5b", "llama-3.2-1b"};
  return names;
}

std::string builtin_config_json(const std::string& name) {
  const auto& t = builtin_table();
  const auto it = t.find(name);
  if (it == t.end()) {
    std::string known;
    for (const auto& n : builtin_names()) known += (known.empty() ? "" : ", ") + n;
    throw UsageError("--model: '" + name + "' is neither a built-in model (" + known +
                     ") nor a checkpoint folder or config.json");
  }
  return it->second;
}

ModelConfig builtin_config(const std::string& name) {
  ModelConfig c = parse_hf_config(json::parse(builtin_config_json(name)), name);
  c.name = name;
  return c;
}

nlohmann::ordered_json to_hf_config(const ModelConfig& c) {
  nlohmann::ordered_json j;
  if (c.arch == Arch::gpt2) {
    j = {{"architectures", {"GPT2LMHeadModel"}},
         {"model_type", "gpt2"},
         {"activation_function", "gelu_new"},
         {"n_embd", c.hidden_size},
         {"n_layer", c.num_layers},
         {"n_head", c.num_heads},
         {"n_positions", c.max_position_embeddings},
         {"n_ctx", c.max_position_embeddings},
         {"n_inner", c.intermediate_size},
         {"layer_norm_epsilon", c.norm_eps},
         {"vocab_size", c.vocab_size},
         {"tie_word_embeddings", c.tie_word_embeddings}};
  } else {
    const bool qwen = c.arch == Arch::qwen2;
    j = {{"architectures", {qwen ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
         {"model_type", qwen ? "qwen2" : "llama"},
         {"hidden_act", "silu"},
         {"hidden_size", c.hidden_size},
         {"intermediate_size", c.intermediate_size},
         {"max_position_embeddings", c.max_position_embeddings},
         {"num_attention_heads", c.num_heads},
         {"num_hidden_layers", c.num_layers},
         {"num_key_value_heads", c.num_kv_heads},
         {"head_dim", c.head_dim},
         {"rms_norm_eps", c.norm_eps},
         {"rope_theta", c.rope_theta},
         {"tie_word_embeddings", c.tie_word_embeddings},
         {"vocab_size", c.vocab_size}};
    if (!qwen) {
      j["attention_bias"] = c.attention_bias;
      j["mlp_bias"] = c.mlp_bias;
    }
    if (c.rope_scaling.type == "llama3")
      j["rope_scaling"] = {
          {"rope_type", "llama3"},
          {"factor", c.rope_scaling.factor},
          {"low_freq_factor", c.rope_scaling.low_freq_factor},
          {"high_freq_factor", c.rope_scaling.high_freq_factor},
          {"original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings}};
  }
  if (!c.checkpoint_dtype.empty()) j["torch_dtype"] = c.checkpoint_dtype;
  return j;
}

}  // namespace transformer
