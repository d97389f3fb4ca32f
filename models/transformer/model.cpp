#include "models/transformer/model.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/version.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "core/error.hpp"
#include "models/transformer/bench.hpp"
#if MYCONV_HAVE_TORCH_CUDA
#include "models/transformer/cuda/decode_cuda.hpp"
#endif

namespace transformer {

using bench::UsageError;

std::int64_t KvCache::bytes() const {
  std::int64_t b = 0;
  for (const auto& t : k) b += static_cast<std::int64_t>(t.numel() * t.element_size());
  for (const auto& t : v) b += static_cast<std::int64_t>(t.numel() * t.element_size());
  return b;
}

namespace {

at::Tensor repeat_kv(const at::Tensor& x, std::int64_t n_rep) {
  if (n_rep == 1) return x;
  const auto s = x.sizes();  // [B, h_kv, L, d]
  return x.unsqueeze(2)
      .expand({s[0], s[1], n_rep, s[2], s[3]})
      .reshape({s[0], s[1] * n_rep, s[2], s[3]});
}

at::Tensor rotate_half(const at::Tensor& x) {
  const std::int64_t half = x.size(-1) / 2;
  return at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

// transformers' NewGELUActivation (gelu_new), written out in its order of operations.
at::Tensor gelu_new(const at::Tensor& x) {
  return 0.5 * x * (1.0 + at::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * at::pow(x, 3.0))));
}

std::string shape_text(at::IntArrayRef s) {
  std::ostringstream o;
  o << "[";
  for (std::size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  return o.str() + "]";
}

at::ScalarType scalar_type_of(const std::string& dtype, const std::string& where) {
  if (dtype == "F32") return at::kFloat;
  if (dtype == "F16") return at::kHalf;
  if (dtype == "BF16") return at::kBFloat16;
  throw UsageError(where + ": weights of dtype " + dtype + " are not supported (F32, F16, BF16)");
}

// Inverse RoPE frequencies as transformers computes them (float32, on the CPU), with the
// llama3 scaling of _compute_llama3_parameters where the config asks for it.
at::Tensor rope_inv_freq(const ModelConfig& c) {
  const std::int64_t dim = c.head_dim;
  const at::Tensor exponent = at::arange(0, dim, 2, at::kLong).to(at::kFloat) / double(dim);
  at::Tensor inv_freq = at::reciprocal(at::pow(c10::Scalar(c.rope_theta), exponent));
  if (c.rope_scaling.type == "llama3") {
    const RopeScaling& s = c.rope_scaling;
    const double old_len = double(s.original_max_position_embeddings);
    const double low_freq_wavelen = old_len / s.low_freq_factor;
    const double high_freq_wavelen = old_len / s.high_freq_factor;
    const at::Tensor wavelen = at::reciprocal(inv_freq) * (2 * M_PI);
    at::Tensor llama = at::where(wavelen > low_freq_wavelen, inv_freq / s.factor, inv_freq);
    const at::Tensor smooth = (at::reciprocal(wavelen) * old_len - s.low_freq_factor) /
                              (s.high_freq_factor - s.low_freq_factor);
    const at::Tensor smoothed = (1 - smooth) * llama / s.factor + smooth * llama;
    const at::Tensor medium = at::logical_not(wavelen < high_freq_wavelen)
                                  .logical_and(at::logical_not(wavelen > low_freq_wavelen));
    llama = at::where(medium, smoothed, llama);
    inv_freq = llama;
  }
  return inv_freq;
}

}  // namespace

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& mask, bool causal) {
  const std::int64_t rep = q.size(1) / k.size(1);
  const at::Tensor kk = repeat_kv(k, rep), vv = repeat_kv(v, rep);
  if (causal)
    BENCH_CHECK(q.size(2) == kk.size(2), "causal attention needs as many queries as keys");
#if TORCH_VERSION_MAJOR >= 2
  c10::optional<at::Tensor> m;
  if (mask.defined()) m = mask;
  return at::scaled_dot_product_attention(q, kk, vv, m, 0.0, causal);
#else
  // transformers' eager attention: scores in the input dtype, softmax in float32, cast back.
  const double scale = 1.0 / std::sqrt(double(q.size(-1)));
  at::Tensor scores = at::matmul(q, kk.transpose(-2, -1)) * scale;
  at::Tensor allowed = mask;
  if (causal) {
    const std::int64_t t = q.size(2);
    allowed = at::ones({t, t}, q.options().dtype(at::kBool)).tril();
  }
  if (allowed.defined())
    scores = scores.masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity());
  const at::Tensor p = at::softmax(scores, -1, at::kFloat).to(q.scalar_type());
  return at::matmul(p, vv);
#endif
}

namespace {
std::string g_sdpa_backend = "auto";
}

void Model::select_sdpa_backend(const std::string& name) {
  if (name == "auto") return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
  at::Context& ctx = at::globalContext();
  if (name != "cudnn" && name != "flash" && name != "efficient" && name != "math")
    throw UsageError("--sdpa-backend: expected auto, cudnn, flash, efficient or math; got '" +
                     name + "'");
  ctx.setSDPUseCuDNN(name == "cudnn");
  ctx.setSDPUseFlash(name == "flash");
  ctx.setSDPUseMemEfficient(name == "efficient");
  ctx.setSDPUseMath(name == "math");
  g_sdpa_backend = name;
#else
  throw UsageError("--sdpa-backend " + name + ": LibTorch " TORCH_VERSION
                   " has no selectable scaled_dot_product_attention backends (2.5 or later)");
#endif
}

std::string Model::attention_kind() {
#if TORCH_VERSION_MAJOR >= 2
  return g_sdpa_backend == "auto"
             ? "scaled_dot_product_attention"
             : "scaled_dot_product_attention, backend " + g_sdpa_backend + " only";
#else
  return "softmax(QK^T/sqrt(d)+mask)V, softmax in float32 (LibTorch " TORCH_VERSION
         " has no scaled_dot_product_attention)";
#endif
}

Model::Model(const ModelConfig& cfg, at::ScalarType dtype, at::Device device)
    : cfg_(cfg), dtype_(dtype), device_(device) {
  if (cfg_.arch != Arch::gpt2) inv_freq_ = rope_inv_freq(cfg_).to(device_);
}

Model Model::from_checkpoint(const ModelConfig& cfg, const Checkpoint& ckpt, at::ScalarType dtype,
                             at::Device device) {
  return read_checkpoint(cfg, ckpt, dtype, device, false);
}

void Model::check_checkpoint(const ModelConfig& cfg, const Checkpoint& ckpt) {
  read_checkpoint(cfg, ckpt, at::kFloat, at::kCPU, true);
}

// check_only: every name, shape and dtype checked, each weight an empty placeholder.
Model Model::read_checkpoint(const ModelConfig& cfg, const Checkpoint& ckpt, at::ScalarType dtype,
                             at::Device device, bool check_only) {
  Model m(cfg, dtype, device);
  const auto opts = at::TensorOptions().dtype(dtype).device(device);
  auto load = [&](const std::string& name, std::vector<std::int64_t> expect) {
    const TensorView& v = ckpt.get(name);
    const std::string where = ckpt.dir() + ": tensor '" + name + "'";
    if (v.shape != expect)
      throw UsageError(where + " has shape " + shape_text(v.shape) + ", the config says " +
                       shape_text(expect));
    const at::ScalarType stored = scalar_type_of(v.dtype, where);
    if (check_only) return at::empty({0}, at::TensorOptions().dtype(stored));
    const at::Tensor t =
        at::from_blob(const_cast<void*>(v.data), v.shape, at::TensorOptions().dtype(stored));
    return t.to(opts, /*non_blocking=*/false, /*copy=*/true);
  };
  const std::int64_t h = cfg.hidden_size, q = cfg.num_heads * cfg.head_dim,
                     kv = cfg.num_kv_heads * cfg.head_dim, inter = cfg.intermediate_size;
  if (cfg.arch == Arch::gpt2) {
    // GPT2LMHeadModel.save_pretrained writes "transformer."; the original checkpoints do not.
    const std::string p = ckpt.find("transformer.wte.weight") ? "transformer." : "";
    m.wte_ = load(p + "wte.weight", {cfg.vocab_size, h});
    m.wpe_ = load(p + "wpe.weight", {cfg.max_position_embeddings, h});
    for (std::int64_t i = 0; i < cfg.num_layers; ++i) {
      const std::string l = p + "h." + std::to_string(i) + ".";
      Layer L;
      L.norm1_w = load(l + "ln_1.weight", {h});
      L.norm1_b = load(l + "ln_1.bias", {h});
      L.norm2_w = load(l + "ln_2.weight", {h});
      L.norm2_b = load(l + "ln_2.bias", {h});
      // Conv1D stores [in, out]; at::linear wants [out, in].
      L.qkv_w = load(l + "attn.c_attn.weight", {h, 3 * h}).t().contiguous();
      L.qkv_b = load(l + "attn.c_attn.bias", {3 * h});
      L.o_w = load(l + "attn.c_proj.weight", {h, h}).t().contiguous();
      L.o_b = load(l + "attn.c_proj.bias", {h});
      L.up_w = load(l + "mlp.c_fc.weight", {h, inter}).t().contiguous();
      L.up_b = load(l + "mlp.c_fc.bias", {inter});
      L.down_w = load(l + "mlp.c_proj.weight", {inter, h}).t().contiguous();
      L.down_b = load(l + "mlp.c_proj.bias", {h});
      m.layers_.push_back(std::move(L));
    }
    m.norm_f_w_ = load(p + "ln_f.weight", {h});
    m.norm_f_b_ = load(p + "ln_f.bias", {h});
  } else {
    m.wte_ = load("model.embed_tokens.weight", {cfg.vocab_size, h});
    for (std::int64_t i = 0; i < cfg.num_layers; ++i) {
      const std::string l = "model.layers." + std::to_string(i) + ".";
      Layer L;
      L.norm1_w = load(l + "input_layernorm.weight", {h});
      L.norm2_w = load(l + "post_attention_layernorm.weight", {h});
      L.qkv_w = at::cat({load(l + "self_attn.q_proj.weight", {q, h}),
                         load(l + "self_attn.k_proj.weight", {kv, h}),
                         load(l + "self_attn.v_proj.weight", {kv, h})});
      if (cfg.attention_bias)
        L.qkv_b = at::cat({load(l + "self_attn.q_proj.bias", {q}),
                           load(l + "self_attn.k_proj.bias", {kv}),
                           load(l + "self_attn.v_proj.bias", {kv})});
      L.o_w = load(l + "self_attn.o_proj.weight", {h, q});
      if (cfg.o_bias) L.o_b = load(l + "self_attn.o_proj.bias", {h});
      L.up_w = at::cat({load(l + "mlp.gate_proj.weight", {inter, h}),
                        load(l + "mlp.up_proj.weight", {inter, h})});
      L.down_w = load(l + "mlp.down_proj.weight", {h, inter});
      if (cfg.mlp_bias) {
        L.up_b = at::cat(
            {load(l + "mlp.gate_proj.bias", {inter}), load(l + "mlp.up_proj.bias", {inter})});
        L.down_b = load(l + "mlp.down_proj.bias", {h});
      }
      m.layers_.push_back(std::move(L));
    }
    m.norm_f_w_ = load("model.norm.weight", {h});
  }
  m.lm_head_ = cfg.tie_word_embeddings ? m.wte_ : load("lm_head.weight", {cfg.vocab_size, h});
  return m;
}

Model Model::random(const ModelConfig& cfg, std::uint64_t seed, at::ScalarType dtype,
                    at::Device device) {
  Model m(cfg, dtype, device);
  // One CPU generator: the same weights on every device.
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const auto opts = at::TensorOptions().dtype(dtype).device(device);
  auto normal = [&](std::vector<std::int64_t> shape) {
    return (at::randn(shape, gen, at::TensorOptions().dtype(at::kFloat)) * 0.02).to(opts);
  };
  auto ones = [&](std::int64_t n) { return at::ones({n}, opts); };
  auto zeros = [&](std::int64_t n) { return at::zeros({n}, opts); };
  const std::int64_t h = cfg.hidden_size, q = cfg.num_heads * cfg.head_dim,
                     kv = cfg.num_kv_heads * cfg.head_dim, inter = cfg.intermediate_size;
  const bool gpt2 = cfg.arch == Arch::gpt2;
  m.wte_ = normal({cfg.vocab_size, h});
  if (gpt2) m.wpe_ = normal({cfg.max_position_embeddings, h});
  for (std::int64_t i = 0; i < cfg.num_layers; ++i) {
    Layer L;
    L.norm1_w = ones(h);
    L.norm2_w = ones(h);
    if (gpt2) {
      L.norm1_b = zeros(h);
      L.norm2_b = zeros(h);
    }
    L.qkv_w = normal({q + 2 * kv, h});
    if (cfg.attention_bias) L.qkv_b = zeros(q + 2 * kv);
    L.o_w = normal({h, q});
    if (cfg.o_bias) L.o_b = zeros(h);
    const std::int64_t up = gpt2 ? inter : 2 * inter;
    L.up_w = normal({up, h});
    L.down_w = normal({h, inter});
    if (cfg.mlp_bias) {
      L.up_b = zeros(up);
      L.down_b = zeros(h);
    }
    m.layers_.push_back(std::move(L));
  }
  m.norm_f_w_ = ones(h);
  if (gpt2) m.norm_f_b_ = zeros(h);
  m.lm_head_ = cfg.tie_word_embeddings ? m.wte_ : normal({cfg.vocab_size, h});
  return m;
}

KvCache Model::make_cache(std::int64_t batch, std::int64_t max_len) const {
  KvCache c;
  c.batch = batch;
  c.max_len = max_len;
  const auto opts = at::TensorOptions().dtype(dtype_).device(device_);
  for (std::int64_t i = 0; i < cfg_.num_layers; ++i) {
    c.k.push_back(at::zeros({batch, cfg_.num_kv_heads, max_len, cfg_.head_dim}, opts));
    c.v.push_back(at::zeros({batch, cfg_.num_kv_heads, max_len, cfg_.head_dim}, opts));
  }
  c.positions = at::arange(max_len, at::TensorOptions().dtype(at::kLong).device(device_));
  return c;
}

at::Tensor Model::norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) const {
  if (cfg_.arch == Arch::gpt2) return at::layer_norm(x, {cfg_.hidden_size}, w, b, cfg_.norm_eps);
  // Qwen2RMSNorm / LlamaRMSNorm: in float32, cast back, then times the weight.
  const at::Tensor xf = x.to(at::kFloat);
  const at::Tensor variance = xf.pow(2).mean(-1, /*keepdim=*/true);
  return w * (xf * at::rsqrt(variance + cfg_.norm_eps)).to(x.scalar_type());
}

at::Tensor Model::mlp(const Layer& l, const at::Tensor& x) const {
  if (cfg_.arch == Arch::gpt2)
    return at::linear(gelu_new(at::linear(x, l.up_w, l.up_b)), l.down_w, l.down_b);
  const at::Tensor gu = at::linear(x, l.up_w, l.up_b);
  const std::int64_t inter = cfg_.intermediate_size;
  return at::linear(at::silu(gu.narrow(-1, 0, inter)) * gu.narrow(-1, inter, inter), l.down_w,
                    l.down_b);
}

void Model::project_qkv(const Layer& l, const at::Tensor& x, const at::Tensor& pos, at::Tensor& q,
                        at::Tensor& k, at::Tensor& v) const {
  const std::int64_t b = x.size(0), t = x.size(1), d = cfg_.head_dim;
  const std::int64_t nq = cfg_.num_heads, nkv = cfg_.num_kv_heads;
  const at::Tensor qkv = at::linear(x, l.qkv_w, l.qkv_b);
  q = qkv.narrow(-1, 0, nq * d).view({b, t, nq, d}).transpose(1, 2);
  k = qkv.narrow(-1, nq * d, nkv * d).view({b, t, nkv, d}).transpose(1, 2);
  v = qkv.narrow(-1, (nq + nkv) * d, nkv * d).view({b, t, nkv, d}).transpose(1, 2);
  if (cfg_.arch == Arch::gpt2) return;
  // transformers' rotary embedding: freqs = positions x inv_freq in float32, cos and sin of
  // cat(freqs, freqs) cast to the activations' dtype, x * cos + rotate_half(x) * sin.
  const at::Tensor freqs = at::outer(pos.to(at::kFloat), inv_freq_);
  const at::Tensor emb = at::cat({freqs, freqs}, -1);
  const at::Tensor cos = emb.cos().to(x.scalar_type()).view({1, 1, t, d});
  const at::Tensor sin = emb.sin().to(x.scalar_type()).view({1, 1, t, d});
  q = q * cos + rotate_half(q) * sin;
  k = k * cos + rotate_half(k) * sin;
}

at::Tensor Model::embed(const at::Tensor& ids, const at::Tensor& pos) const {
  at::Tensor x = at::embedding(wte_, ids);
  if (cfg_.arch == Arch::gpt2) x = x + at::embedding(wpe_, pos).unsqueeze(0);
  return x;
}

at::Tensor Model::head(const at::Tensor& x) const {
  const at::Tensor y = cfg_.arch == Arch::gpt2 ? at::layer_norm(x, {cfg_.hidden_size}, norm_f_w_,
                                                                norm_f_b_, cfg_.norm_eps)
                                               : norm(x, norm_f_w_, {});
  return at::linear(y, lm_head_);
}

at::Tensor Model::forward(const at::Tensor& ids, std::int64_t start, KvCache* cache,
                          bool last_only) const {
  const std::int64_t b = ids.size(0), t = ids.size(1);
  BENCH_CHECK(cache || start == 0, "a forward without a cache starts at position 0");
  if (cache)
    BENCH_CHECK(start + t <= cache->max_len && b == cache->batch,
                "the tokens do not fit the cache");
  const at::Tensor pos =
      at::arange(start, start + t, at::TensorOptions().dtype(at::kLong).device(device_));
  at::Tensor x = embed(ids, pos);
  at::Tensor mask;
  const bool causal = t > 1 && start == 0;
  if (t > 1 && start > 0)  // queries at start..start+t-1 over keys 0..start+t-1
    mask = cache->positions.narrow(0, 0, start + t).unsqueeze(0) <= pos.unsqueeze(1);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    at::Tensor q, k, v;
    project_qkv(l, norm(x, l.norm1_w, l.norm1_b), pos, q, k, v);
    if (cache) {
      cache->k[i].narrow(2, start, t).copy_(k);
      cache->v[i].narrow(2, start, t).copy_(v);
      k = cache->k[i].narrow(2, 0, start + t);
      v = cache->v[i].narrow(2, 0, start + t);
    }
    const at::Tensor a = attention(q, k, v, mask, causal).transpose(1, 2).reshape({b, t, -1});
    x = x + at::linear(a, l.o_w, l.o_b);
    x = x + mlp(l, norm(x, l.norm2_w, l.norm2_b));
  }
  if (last_only) x = x.narrow(1, t - 1, 1);
  return head(x);
}

// The decode step a graph replays, written for few kernels (at batch 1 each layer's kernels are
// tiny and their count sets the step's time): the additive mask made once per step for every
// layer; the grouped-query heads as the rows of one query per KV head ([B, kv_heads, n_rep, d]:
// the single query position makes them independent rows), so the cache is read without
// repeating K/V; the residual added by the output GEMMs (addmm_ into x); RMSNorm as one fused
// at::rms_norm (LibTorch >= 2.4) and GPT-2's gelu_new as at::gelu(tanh), the same function in one
// kernel. On CUDA, our fused kernels (decode_kernels.cu) rotate q and k and write k and v into
// the cache in one launch (RoPE in transformers' order of roundings), and make SwiGLU's
// silu(gate) * up in one; elsewhere ATen does it: RoPE's cos/sin once per step, q and k rotated
// together (x * cos + swap_halves(x) * (-sin, sin) in one addcmul), index_copy_ into the cache.
// The same math as forward() in another order of roundings: the tests hold the two within
// float32 rounding on every step, and the HF agreement covers both paths' tokens on the GPU.
at::Tensor Model::decode_norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) const {
  if (cfg_.arch == Arch::gpt2) return at::layer_norm(x, {cfg_.hidden_size}, w, b, cfg_.norm_eps);
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  return at::rms_norm(x, {cfg_.hidden_size}, w, cfg_.norm_eps);
#else
  return norm(x, w, b);
#endif
}

namespace {

// q [B, kv_heads, n_rep, d] over the whole cache k, v [B, kv_heads, L, d], mask [1, 1, 1, L]
// additive (0 or -inf).
at::Tensor decode_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& mask) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, mask, 0.0, false);
#else
  const double scale = 1.0 / std::sqrt(double(q.size(-1)));
  const at::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * scale + mask;
  return at::matmul(at::softmax(scores, -1, at::kFloat).to(q.scalar_type()), v);
#endif
}

}  // namespace

at::Tensor Model::decode_step_static(const at::Tensor& ids, const at::Tensor& pos,
                                     KvCache& cache) const {
  const std::int64_t b = ids.size(0), d = cfg_.head_dim, half = d / 2;
  const std::int64_t nq = cfg_.num_heads, nkv = cfg_.num_kv_heads, rep = nq / nkv;
  const std::int64_t inter = cfg_.intermediate_size;
  const bool gpt2 = cfg_.arch == Arch::gpt2;
#if MYCONV_HAVE_TORCH_CUDA
  const bool fused = device_.is_cuda();
#else
  const bool fused = false;
#endif
  at::Tensor x = embed(ids, pos).view({b, cfg_.hidden_size});  // a new tensor: updated in place
  const at::Tensor mask =
      at::zeros({1, 1, 1, cache.max_len}, x.options())
          .masked_fill_((cache.positions > pos).view({1, 1, 1, cache.max_len}),
                        -std::numeric_limits<double>::infinity());
  at::Tensor cos, sin_signed;  // [1, d] in the activations' dtype (the ATen path)
  if (!gpt2 && !fused) {
    const at::Tensor freqs = at::outer(pos.to(at::kFloat), inv_freq_);  // [1, d/2]
    const at::Tensor sin = freqs.sin();
    cos = at::cat({freqs, freqs}, -1).cos().to(x.scalar_type());
    sin_signed = at::cat({-sin, sin}, -1).to(x.scalar_type());
  }
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    at::Tensor qkv = at::linear(decode_norm(x, l.norm1_w, l.norm1_b), l.qkv_w, l.qkv_b)
                         .view({b, nq + 2 * nkv, d});
    at::Tensor qk = qkv.narrow(1, 0, nq + nkv);
    if (fused) {
#if MYCONV_HAVE_TORCH_CUDA
      fused_rope_write_kv(qkv, cache.k[i], cache.v[i], gpt2 ? at::Tensor() : inv_freq_, pos, nq,
                          nkv);
#endif
    } else {
      if (!gpt2) {
        const at::Tensor swapped =
            at::cat({qk.narrow(-1, half, half), qk.narrow(-1, 0, half)}, -1);
        qk = at::addcmul(swapped * sin_signed, qk, cos);
      }
      cache.k[i].index_copy_(2, pos, qk.narrow(1, nq, nkv).unsqueeze(2));
      cache.v[i].index_copy_(2, pos, qkv.narrow(1, nq + nkv, nkv).unsqueeze(2));
    }
    const at::Tensor q = qk.narrow(1, 0, nq).view({b, nkv, rep, d});
    const at::Tensor a = decode_attention(q, cache.k[i], cache.v[i], mask).reshape({b, nq * d});
    x.addmm_(a, l.o_w.t());
    if (l.o_b.defined()) x.add_(l.o_b);
    const at::Tensor y = decode_norm(x, l.norm2_w, l.norm2_b);
    at::Tensor act;
    if (gpt2) {
      act = at::gelu(at::linear(y, l.up_w, l.up_b), "tanh");
    } else {
      const at::Tensor gu = at::linear(y, l.up_w, l.up_b);
#if MYCONV_HAVE_TORCH_CUDA
      if (fused) act = fused_silu_mul(gu, inter);
#endif
      if (!fused) act = at::silu(gu.narrow(-1, 0, inter)) * gu.narrow(-1, inter, inter);
    }
    x.addmm_(act, l.down_w.t());
    if (l.down_b.defined()) x.add_(l.down_b);
  }
  return at::linear(gpt2 ? decode_norm(x, norm_f_w_, norm_f_b_) : decode_norm(x, norm_f_w_, {}),
                    lm_head_);
}

std::vector<at::Tensor> Model::parameters() const {
  std::vector<at::Tensor> p;
  auto add = [&](const at::Tensor& t) {
    if (t.defined()) p.push_back(t);
  };
  add(wte_);
  add(wpe_);
  for (const Layer& l : layers_)
    for (const at::Tensor* t : {&l.norm1_w, &l.norm1_b, &l.norm2_w, &l.norm2_b, &l.qkv_w, &l.qkv_b,
                                &l.o_w, &l.o_b, &l.up_w, &l.up_b, &l.down_w, &l.down_b})
      add(*t);
  add(norm_f_w_);
  add(norm_f_b_);
  if (!cfg_.tie_word_embeddings) add(lm_head_);
  return p;
}

std::int64_t Model::weight_bytes() const {
  std::int64_t b = 0;
  for (const auto& t : parameters()) b += static_cast<std::int64_t>(t.numel() * t.element_size());
  return b;
}

nlohmann::ordered_json model_record(const ModelSource& m) {
  return {{"name", m.config.name},
          {"source", m.description},
          {"arch", to_string(m.config.arch)},
          {"parameters", m.config.parameter_count()},
          {"config", to_hf_config(m.config)},
          {"attention", Model::attention_kind()}};
}

Model* ModelCache::get(std::size_t index, bench::DataType dt) {
  const Key key{index, dt};
  if (current_ && key_ == key) return current_.get();
  if (errors_.count(key)) return nullptr;
  if (current_) {
    current_.reset();
    release_cached_memory(device_);
  }
  const ModelSource& source = models_[index];
  try {
    const at::ScalarType st = dt == bench::DataType::fp16   ? at::kHalf
                              : dt == bench::DataType::bf16 ? at::kBFloat16
                                                            : at::kFloat;
    if (dt == bench::DataType::tf32) throw bench::Unsupported("tf32 is not a storage dtype");
    if (source.checkpoint_dir.empty()) {
      current_ = std::make_unique<Model>(Model::random(source.config, seed_, st, device_));
    } else {
      const Checkpoint ckpt(source.checkpoint_dir);
      current_ = std::make_unique<Model>(Model::from_checkpoint(source.config, ckpt, st, device_));
    }
    key_ = key;
    return current_.get();
  } catch (const bench::UsageError&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    errors_[key] = "model not made: " + what.substr(0, what.find('\n'));
    return nullptr;
  }
}

}  // namespace transformer
