// The decoder-only transformers on LibTorch: GPT-2 and Qwen2 / Llama, written to match Hugging Face
// transformers' math (modeling_gpt2.py, modeling_qwen2.py, modeling_llama.py) so that the same
// checkpoint gives the same logits:
//   GPT-2: x = wte[ids] + wpe[pos]; per layer x += attn(LayerNorm(x)), x += mlp(LayerNorm(x))
//     with the fused c_attn (Conv1D, stored [in, out]: transposed at load), gelu_new (tanh form,
//     written out as NewGELUActivation does), final LayerNorm, head tied to wte.
//   Qwen2 / Llama: x = embed[ids]; per layer x += attn(RMSNorm(x)), x += mlp(RMSNorm(x)) with
//     RoPE (rotate_half convention, cos/sin in float32 then cast), grouped-query attention
//     (K/V heads repeated), SwiGLU MLP down(silu(gate(x)) * up(x)); RMSNorm in float32, cast
//     back, times the weight; Qwen2 has q/k/v biases; Llama 3 rope scaling (llama3) supported.
// Attention is at::scaled_dot_product_attention from LibTorch 2.0; on 1.13 the explicit
// softmax(QK^T / sqrt(d) + mask) V, softmax in float32 as transformers' eager path
// (attention_kind() says which ran).
//
// The KV cache is static: preallocated per (batch, max_len), written in place. Two decode forms:
// forward() attends to the filled prefix [0, pos] (the eager path); decode_step_static() keeps
// every shape fixed, writes at a position held in a device tensor and masks the positions past
// it (what a CUDA graph captures: libtorch_graph), with fewer, fused kernels (see model.cpp).
// The cache holds static_cache_len(in + out) positions: a multiple of 16, so that the mask needs
// no padding in the memory-efficient attention kernel.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>  // at::Tensor, ScalarType, Device; the .cpp files include ATen/ATen.h

#include "models/transformer/config.hpp"
#include "models/transformer/safetensors.hpp"
#include "models/transformer/settings.hpp"

namespace transformer {

struct KvCache {
  std::vector<at::Tensor> k, v;  // per layer [batch, kv_heads, max_len, head_dim]
  at::Tensor positions;          // arange(max_len), int64, on the cache's device
  std::int64_t batch = 0, max_len = 0;
  std::int64_t bytes() const;
};

class Model {
 public:
  // Weights read from a checkpoint (any of F32/F16/BF16 there), converted to dtype on device.
  static Model from_checkpoint(const ModelConfig& cfg, const Checkpoint& ckpt, at::ScalarType dtype,
                               at::Device device);
  // The checks of from_checkpoint (every tensor present, of the config's shape, a weight dtype)
  // without reading the weights: a bad checkpoint is found before anything runs. UsageError.
  static void check_checkpoint(const ModelConfig& cfg, const Checkpoint& ckpt);
  // Random weights as transformers initializes them (normal(0, 0.02) matrices and embeddings,
  // zero biases, unit norm weights), from seed, made on device.
  static Model random(const ModelConfig& cfg, std::uint64_t seed, at::ScalarType dtype,
                      at::Device device);

  const ModelConfig& config() const { return cfg_; }
  at::ScalarType dtype() const { return dtype_; }
  at::Device device() const { return device_; }

  KvCache make_cache(std::int64_t batch, std::int64_t max_len) const;

  // Logits [B, T, V] (or [B, 1, V] for the last position with last_only) of ids [B, T] (int64)
  // at positions start .. start+T-1. With a cache: writes their K/V at those positions and
  // attends to positions [0, start+T). Without: start must be 0 (a full recompute, training).
  at::Tensor forward(const at::Tensor& ids, std::int64_t start, KvCache* cache,
                     bool last_only) const;
  // One decode step with fixed shapes and no host synchronization: ids [B, 1], pos a 1-element
  // int64 device tensor; attends to the whole cache with positions past pos masked. Logits
  // [B, V]. What libtorch_graph captures.
  at::Tensor decode_step_static(const at::Tensor& ids, const at::Tensor& pos, KvCache& cache) const;

  // Every weight tensor once (the tied head not twice).
  std::vector<at::Tensor> parameters() const;
  std::int64_t weight_bytes() const;
  // "scaled_dot_product_attention" (LibTorch >= 2.0, with the backend when one was selected) or
  // the explicit form on 1.13.
  static std::string attention_kind();
  // --sdpa-backend: auto (LibTorch's choice) or only cudnn, flash, efficient or math
  // (at::globalContext()'s switches, as torch.backends.cuda.enable_*_sdp); UsageError on 1.13
  // or an unknown name. A kernel the backend lacks makes the case fail with ATen's reason.
  static void select_sdpa_backend(const std::string& name);

  // The weights as our own decode kernels read them (own_decode.cpp): every matrix [out][in]
  // row-major (nn.Linear's layout; GPT-2's Conv1D transposed at load), contiguous; undefined
  // tensors where the architecture has none (biases, GPT-2's wpe).
  struct Layer {
    at::Tensor norm1_w, norm1_b, norm2_w, norm2_b;
    at::Tensor qkv_w, qkv_b, o_w, o_b;      // q, k, v fused: [q + 2 kv, hidden]
    at::Tensor up_w, up_b, down_w, down_b;  // gpt2: c_fc, c_proj; else gate and up fused
  };
  const std::vector<Layer>& layers() const { return layers_; }
  const at::Tensor& token_embedding() const { return wte_; }
  const at::Tensor& position_embedding() const { return wpe_; }
  const at::Tensor& final_norm_weight() const { return norm_f_w_; }
  const at::Tensor& final_norm_bias() const { return norm_f_b_; }
  const at::Tensor& lm_head() const { return lm_head_; }
  const at::Tensor& rope_frequencies() const { return inv_freq_; }  // float32 [d/2]; gpt2: none

 private:
  Model(const ModelConfig& cfg, at::ScalarType dtype, at::Device device);
  static Model read_checkpoint(const ModelConfig& cfg, const Checkpoint& ckpt, at::ScalarType dtype,
                               at::Device device, bool check_only);

  at::Tensor norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) const;
  // The decode step's norm: LayerNorm, or RMSNorm as one fused op where LibTorch has it.
  at::Tensor decode_norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) const;
  at::Tensor mlp(const Layer& l, const at::Tensor& x) const;
  // q, k, v of x [B, T, H] as [B, heads, T, head_dim], RoPE applied at positions pos ([T]).
  void project_qkv(const Layer& l, const at::Tensor& x, const at::Tensor& pos, at::Tensor& q,
                   at::Tensor& k, at::Tensor& v) const;
  at::Tensor embed(const at::Tensor& ids, const at::Tensor& pos) const;
  at::Tensor head(const at::Tensor& x) const;

  ModelConfig cfg_;
  at::ScalarType dtype_;
  at::Device device_;
  at::Tensor wte_, wpe_, norm_f_w_, norm_f_b_, lm_head_;  // lm_head_ aliases wte_ when tied
  at::Tensor inv_freq_;  // RoPE inverse frequencies, float32 (llama3 scaling applied)
  std::vector<Layer> layers_;
};

// Attention of q [B, h, T, d] over k, v [B, h_kv, L, d] (K/V heads repeated to h): with a mask
// [T, L] (or broadcastable; true = attend), or causal with the T queries at the last T of the L
// positions (causal_offset = L - T), or neither (T == 1 over all of L).
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& mask, bool causal);

// The models of a run as the cases ask for them: each (model, dtype) made when first asked, one at
// a time (the previous one is released before the next is made, so that one model's weights are
// in memory).
// A model's record in system.models (and system.model: the first).
nlohmann::ordered_json model_record(const ModelSource& m);

// Training makes the weights require gradients, so a model serves one task.
class ModelCache {
 public:
  ModelCache(const std::vector<ModelSource>& models, at::Device device, std::uint64_t seed)
      : models_(models), device_(device), seed_(seed) {}

  // The model, or nullptr with error() saying why it could not be made. A bad checkpoint is bad
  // input (bench::UsageError).
  Model* get(std::size_t index, bench::DataType dt);
  const std::string& error(std::size_t index, bench::DataType dt) { return errors_[{index, dt}]; }

 private:
  using Key = std::pair<std::size_t, bench::DataType>;
  const std::vector<ModelSource>& models_;
  at::Device device_;
  std::uint64_t seed_;
  std::unique_ptr<Model> current_;
  Key key_{};
  std::map<Key, std::string> errors_;
};

}  // namespace transformer
