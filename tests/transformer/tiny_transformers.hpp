// What the transformer tests (test_model.cpp, test_decode_cuda.cpp) share: tiny GPT-2,
// Qwen2 and Llama configs, random weights under transformers' names written as a checkpoint in
// the Hugging Face layout, random token ids, and the TinyModels fixture (its tests:
// test_model.cpp).
#pragma once

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "models/transformer/config.hpp"
#include "models/transformer/safetensors.hpp"

namespace transformer::testing {

using Weights = std::map<std::string, at::Tensor>;  // HF names -> float32 tensors

// ---- tiny checkpoints in the Hugging Face layout ---------------------------------------------

inline ModelConfig tiny_gpt2() {
  return parse_hf_config(nlohmann::json::parse(R"({"model_type": "gpt2", "vocab_size": 97,
      "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 64, "layer_norm_epsilon": 1e-5})"),
                         "tiny-gpt2");
}

// Grouped-query attention, q/k/v bias, untied head.
inline ModelConfig tiny_qwen2() {
  return parse_hf_config(nlohmann::json::parse(R"({"model_type": "qwen2", "vocab_size": 101,
      "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64,
      "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": false})"),
                         "tiny-qwen2");
}

// One kv head, explicit head_dim, llama3 rope scaling, tied head.
inline ModelConfig tiny_llama() {
  return parse_hf_config(nlohmann::json::parse(R"({"model_type": "llama", "vocab_size": 89,
      "hidden_size": 32, "head_dim": 8, "intermediate_size": 40, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 1, "max_position_embeddings": 64,
      "rms_norm_eps": 1e-5, "tie_word_embeddings": true, "rope_parameters": {"rope_type": "llama3",
      "rope_theta": 500.0, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 16}})"),
                         "tiny-llama");
}

// Random weights under transformers' names and shapes (GPT-2's Conv1D as [in, out]); norm weights
// near 1 and nonzero biases, so that every tensor matters.
inline Weights random_weights(const ModelConfig& c, std::uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  auto rnd = [&](std::vector<std::int64_t> shape, double scale, double offset = 0) {
    return at::randn(shape, gen, at::TensorOptions().dtype(at::kFloat)) * scale + offset;
  };
  const std::int64_t h = c.hidden_size, q = c.num_heads * c.head_dim,
                     kv = c.num_kv_heads * c.head_dim, in = c.intermediate_size;
  Weights w;
  if (c.arch == Arch::gpt2) {
    const std::string p = "transformer.";
    w[p + "wte.weight"] = rnd({c.vocab_size, h}, 0.3);
    w[p + "wpe.weight"] = rnd({c.max_position_embeddings, h}, 0.1);
    for (std::int64_t i = 0; i < c.num_layers; ++i) {
      const std::string l = p + "h." + std::to_string(i) + ".";
      w[l + "ln_1.weight"] = rnd({h}, 0.1, 1);
      w[l + "ln_1.bias"] = rnd({h}, 0.1);
      w[l + "ln_2.weight"] = rnd({h}, 0.1, 1);
      w[l + "ln_2.bias"] = rnd({h}, 0.1);
      w[l + "attn.c_attn.weight"] = rnd({h, 3 * h}, 0.2);
      w[l + "attn.c_attn.bias"] = rnd({3 * h}, 0.1);
      w[l + "attn.c_proj.weight"] = rnd({h, h}, 0.2);
      w[l + "attn.c_proj.bias"] = rnd({h}, 0.1);
      w[l + "mlp.c_fc.weight"] = rnd({h, in}, 0.2);
      w[l + "mlp.c_fc.bias"] = rnd({in}, 0.1);
      w[l + "mlp.c_proj.weight"] = rnd({in, h}, 0.2);
      w[l + "mlp.c_proj.bias"] = rnd({h}, 0.1);
    }
    w[p + "ln_f.weight"] = rnd({h}, 0.1, 1);
    w[p + "ln_f.bias"] = rnd({h}, 0.1);
    return w;
  }
  w["model.embed_tokens.weight"] = rnd({c.vocab_size, h}, 0.3);
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    const std::string l = "model.layers." + std::to_string(i) + ".";
    w[l + "input_layernorm.weight"] = rnd({h}, 0.1, 1);
    w[l + "post_attention_layernorm.weight"] = rnd({h}, 0.1, 1);
    w[l + "self_attn.q_proj.weight"] = rnd({q, h}, 0.2);
    w[l + "self_attn.k_proj.weight"] = rnd({kv, h}, 0.2);
    w[l + "self_attn.v_proj.weight"] = rnd({kv, h}, 0.2);
    w[l + "self_attn.o_proj.weight"] = rnd({h, q}, 0.2);
    if (c.attention_bias) {
      w[l + "self_attn.q_proj.bias"] = rnd({q}, 0.1);
      w[l + "self_attn.k_proj.bias"] = rnd({kv}, 0.1);
      w[l + "self_attn.v_proj.bias"] = rnd({kv}, 0.1);
    }
    w[l + "mlp.gate_proj.weight"] = rnd({in, h}, 0.2);
    w[l + "mlp.up_proj.weight"] = rnd({in, h}, 0.2);
    w[l + "mlp.down_proj.weight"] = rnd({h, in}, 0.2);
  }
  w["model.norm.weight"] = rnd({h}, 0.1, 1);
  if (!c.tie_word_embeddings) w["lm_head.weight"] = rnd({c.vocab_size, h}, 0.2);
  return w;
}

inline TensorBytes to_bytes(const std::string& name, const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  TensorBytes b{name, "F32", c.sizes().vec(), {}};
  const auto* p = static_cast<const unsigned char*>(c.data_ptr());
  b.bytes.assign(p, p + c.numel() * 4);
  return b;
}

// config.json and model.safetensors (or two shards and the index) in dir.
inline void write_checkpoint(const std::filesystem::path& dir, const ModelConfig& c,
                             const Weights& w, bool sharded = false) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << to_hf_config(c).dump(2);
  std::vector<TensorBytes> all;
  for (const auto& [name, t] : w) all.push_back(to_bytes(name, t));
  if (!sharded) {
    write_safetensors((dir / "model.safetensors").string(), all, {{"format", "pt"}});
    return;
  }
  std::vector<TensorBytes> first(all.begin(), all.begin() + all.size() / 2),
      second(all.begin() + all.size() / 2, all.end());
  write_safetensors((dir / "model-00001-of-00002.safetensors").string(), first);
  write_safetensors((dir / "model-00002-of-00002.safetensors").string(), second);
  nlohmann::json index = {{"metadata", {{"total_size", 0}}},
                          {"weight_map", nlohmann::json::object()}};
  for (const auto& t : first) index["weight_map"][t.name] = "model-00001-of-00002.safetensors";
  for (const auto& t : second) index["weight_map"][t.name] = "model-00002-of-00002.safetensors";
  std::ofstream(dir / "model.safetensors.index.json") << index.dump();
}

inline double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

inline at::Tensor random_ids(const ModelConfig& c, std::int64_t b, std::int64_t t,
                             std::uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randint(c.vocab_size, {b, t}, gen, at::TensorOptions().dtype(at::kLong));
}

// One tiny model a parameter: 0 GPT-2, 1 Qwen2, 2 Llama (instantiated in test_model.cpp).
class TinyModels : public ::testing::TestWithParam<int> {
 protected:
  ModelConfig config() const {
    switch (GetParam()) {
      case 0:
        return tiny_gpt2();
      case 1:
        return tiny_qwen2();
      default:
        return tiny_llama();
    }
  }
};

}  // namespace transformer::testing
