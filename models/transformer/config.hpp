// The architecture of a decoder-only transformer: what a Hugging Face config.json says, read into
// one type for both families the suite runs (GPT-2; Qwen2 and Llama, which differ by flags), and
// the built-in configs of the published models, kept as config.json text (config.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace transformer {

// gpt2: learned positions, LayerNorm, GELU (tanh) MLP, fused QKV with bias, Conv1D weights.
// qwen2 / llama: RoPE, RMSNorm, SwiGLU MLP, grouped-query attention; Qwen2 has a QKV bias.
enum class Arch { gpt2, qwen2, llama };

std::string to_string(Arch a);

// RoPE frequency scaling: "default" (none) or "llama3" (Llama 3.1/3.2: low frequencies divided
// by factor, a smooth ramp between; transformers' _compute_llama3_parameters). Others are refused.
struct RopeScaling {
  std::string type = "default";
  double factor = 1, low_freq_factor = 1, high_freq_factor = 4;
  std::int64_t original_max_position_embeddings = 8192;
};

// Positions of the static KV cache that holds `tokens` tokens: rounded up to a multiple of 16,
// the alignment the memory-efficient attention kernel wants of the decode step's mask (see
// model.hpp); the positions past the tokens are never written and always masked.
inline std::int64_t static_cache_len(std::int64_t tokens) { return (tokens + 15) / 16 * 16; }

struct ModelConfig {
  std::string name;  // built-in name, or the checkpoint folder / config file it came from
  Arch arch = Arch::gpt2;
  std::int64_t vocab_size = 0, hidden_size = 0, num_layers = 0, num_heads = 0, num_kv_heads = 0;
  std::int64_t head_dim = 0, intermediate_size = 0, max_position_embeddings = 0;
  double norm_eps = 1e-5;
  double rope_theta = 10000;  // qwen2 / llama only
  RopeScaling rope_scaling;
  bool tie_word_embeddings = true;
  bool attention_bias = false;   // bias on q, k, v (gpt2 and qwen2: yes; llama: attention_bias)
  bool o_bias = false;           // bias on the output projection (gpt2: yes; llama: attention_bias)
  bool mlp_bias = false;         // gpt2: yes; llama: mlp_bias
  std::string activation;        // "gelu_new" (gpt2) or "silu"
  std::string checkpoint_dtype;  // torch_dtype / dtype of config.json, "" when absent

  // Parameters of the model (the tied head counted once).
  std::int64_t parameter_count() const;
  // Bytes of the K and V caches for batch rows of max_len positions at elem_bytes per value.
  std::int64_t kv_cache_bytes(std::int64_t batch, std::int64_t max_len, int elem_bytes) const;
  // Forward FLOPs for `tokens` new tokens attending to `context` positions each on average
  // (2 per multiply-add; matmuls only).
  double forward_flops(double tokens, double context) const;
};

// Reads a Hugging Face config.json (model_type gpt2, qwen2 or llama; transformers 4.x keys or
// 5.x's rope_parameters). Throws bench::UsageError with one line naming `where` on a bad file.
ModelConfig parse_hf_config(const nlohmann::json& j, const std::string& where);
ModelConfig load_config_file(const std::string& path);

// The built-in configs by name (gpt2, gpt2-medium, gpt2-large, distilgpt2, qwen2-0.5b,
// qwen2.5-0.5b, qwen2-1.5b, llama-3.2-1b): the published config.json of each. UsageError naming
// the known ones for another name.
ModelConfig builtin_config(const std::string& name);
const std::vector<std::string>& builtin_names();
// The published config.json text of a built-in model (what builtin_config parses).
std::string builtin_config_json(const std::string& name);

// A config.json as transformers writes it for cfg (what the tests' checkpoints carry).
nlohmann::ordered_json to_hf_config(const ModelConfig& cfg);

}  // namespace transformer
