#include "models/transformer/memory.hpp"

#include <algorithm>
#include <cmath>

#include "core/dtype.hpp"

// How the activations are counted. A tensor is alive from its allocation until its last owner
// goes: C++ temporaries at the end of their full expression (so every temporary of gelu_new's
// one-line formula is alive at its last multiply), locals at the end of their scope (forward()'s
// q, k, v and a live through the whole layer, MLP included), a view keeps its base alive (GPT-2's
// q, k, v keep qkv). Per point, the sum of what is alive; the case's peak is the largest point.
//
// Counted:
//   - the residual stream x, the norm outputs (RMSNorm: float32 x and x * rsqrt, the cast back,
//     the product with the weight; the float32 copies are x itself in fp32), the fused qkv
//     projection, RoPE's q and k (four [tokens, q] temporaries at its add), the K/V heads repeated
//     for grouped-query attention (repeat_kv copies), the attention output, the MLP (gpt2: the
//     c_fc output and gelu_new's 8 temporaries; qwen2 / llama: gate and up fused [tokens, 2 x
//     intermediate], silu, the product, the down projection), the residual adds, the head's
//     logits ([B, V] with last_only, [B, T, V] for training);
//   - the explicit attention of LibTorch 1.13 (fused_attention false): the T x L scores in the
//     dtype, their scaled and masked copies, the float32 softmax and its cast, matmul's copies of
//     q and of k, v where they are not contiguous;
//   - generation: the prompt, the generated ids, the cache's positions, the last logits of the
//     previous run, the check's full recompute without the cache (in + out - 1 tokens: the
//     largest forward of a generation) and its float64 copy of the logits, sampling's float32
//     copies (scores, softmax; with top_p the sort, its indices and the cumulative sum); with a
//     CUDA graph its static ids, position and logits;
//   - training: what autograd saves per layer (norm inputs and outputs, qkv, q and k after RoPE
//     or the repeated K/V, the attention output and its logsumexp, the MLP's saved tensors), the
//     full logits, the float32 log-softmax cross-entropy and its backward (3 float32 [B x (T - 1),
//     V] at once), the head's weight gradient, the gradients of every weight at the end of
//     backward and during the check's forward, a tied embedding's two partial gradients.
// Left out:
//   - cuBLAS / cuBLASLt workspaces beyond the per-(handle, stream) ones (blas_workspace_bytes),
//     SDPA's kernel scratch (flash's logsumexp in inference, cuDNN or memory-efficient workspaces),
//     the CPU's kernel scratch (OpenBLAS, oneDNN, at::parallel buffers), CUDA's own context;
//   - the caching allocator's rounding: every block is rounded to 512 bytes, and a cached block
//     up to 1 MiB larger than asked is handed out whole (a case of many tensors above 1 MiB can
//     read a few MiB above this count); reserved bytes (2 MiB / 20 MiB segments) are not predicted;
//   - tensors of at most a few rows: in inference RoPE's cos / sin tables (T x head_dim), norm
//     statistics, masks, argmax ids, the decode step's float32 norm copies (training counts the
//     tables and statistics autograd saves);
//   - anything an earlier case left allocated (bench.cpp clears the cuBLAS workspaces before
//     each case so that none is left).
// The decode step (T = 1) is counted simply, as a forward over B tokens attending to the whole
// cache: it stays far below the check's recompute of in + out - 1 tokens, so changes to the decode
// step (cos / sin once per step, grouped-query attention inside SDPA, a fused rms_norm) move a
// point that does not win. Changes that would move the count: repeat_kv gone from the prefill /
// training attention (drop the repeated K/V), a fused rms_norm (drop its float32 copies and, in
// training, what it saves), another MLP or norm formula.

namespace transformer {

namespace {

constexpr std::int64_t kF32 = 4, kI64 = 8;

// The config's sizes and the case's element size.
struct Dims {
  std::int64_t e = 4;  // bytes per element of the case's dtype
  std::int64_t h = 0, q = 0, kv = 0, inter = 0, vocab = 0, heads = 0, kv_heads = 0, head_dim = 0,
               layers = 0;
  bool gpt2 = false, tied = false, fused = true, mean_saves_input = false;
  bool gqa() const { return heads != kv_heads; }
  // Bytes per element of a float32 copy that is x itself when the dtype is float32 (x.to(kFloat))
  // and of a cast back to the dtype that is the float32 tensor itself then.
  std::int64_t f32_copy() const { return e == kF32 ? 0 : kF32; }
  std::int64_t cast_back() const { return e == kF32 ? 0 : e; }
};

Dims dims_of(const ModelConfig& c, const Problem& p, const MemoryContext& ctx) {
  Dims d;
  d.e = bench::storage_bytes(p.dtype);
  d.h = c.hidden_size;
  d.q = c.num_heads * c.head_dim;
  d.kv = c.num_kv_heads * c.head_dim;
  d.inter = c.intermediate_size;
  d.vocab = c.vocab_size;
  d.heads = c.num_heads;
  d.kv_heads = c.num_kv_heads;
  d.head_dim = c.head_dim;
  d.layers = c.num_layers;
  d.gpt2 = c.arch == Arch::gpt2;
  d.tied = c.tie_word_embeddings;
  d.fused = ctx.fused_attention;
  d.mean_saves_input = ctx.mean_saves_input;
  return d;
}

// One forward: b rows of t new tokens attending to l positions; with the cache (K/V written to
// it, then read back as views of it) or without (training, the check's recompute); the head on
// the last position only (generation) or on every position.
struct Pass {
  std::int64_t b = 1, t = 1, l = 1;
  bool cache = true, last_only = true;
};

// The largest point of one forward without autograd: its own tensors only (not the weights, the
// cache or what the caller holds); `logits` is what it returns.
struct ForwardPeak {
  std::int64_t bytes = 0, logits = 0;
  std::string where;
  void at(const char* point, std::int64_t b) {
    if (b > bytes) {
      bytes = b;
      where = point;
    }
  }
};

// Bytes of RMSNorm's temporaries over n rows, the input excluded (Model::norm): x.to(float32);
// at its return x * rsqrt(variance + eps) in float32, the cast back and the product with the
// weight, all alive (pow(2) before it is smaller). LayerNorm: its output and two float32 rows.
std::int64_t norm_temporaries(const Dims& d, std::int64_t n) {
  if (d.gpt2) return n * d.h * d.e + 2 * n * kF32;
  return n * d.h * (d.f32_copy() + kF32 + d.cast_back() + d.e);
}

ForwardPeak forward_peak(const Dims& d, const Pass& f) {
  const std::int64_t n = f.b * f.t, e = d.e;
  const std::int64_t x = n * d.h * e;                 // the residual stream
  const std::int64_t qkv = n * (d.q + 2 * d.kv) * e;  // the fused projection
  const std::int64_t qn = n * d.q * e, kn = n * d.kv * e;
  const std::int64_t norm_out = n * d.h * e;
  // K/V as attention reads them: the l positions (the cache's prefix, or this pass's own).
  const std::int64_t kl = f.b * d.kv_heads * f.l * d.head_dim * e;
  const std::int64_t repeated = d.gqa() ? 2 * f.b * d.heads * f.l * d.head_dim * e : 0;

  // forward()'s locals from project_qkv on. GPT-2: q, k, v views keep qkv. RoPE: q is a new
  // tensor; k too, until the cache copy replaces k and v by views of the cache (qkv then free);
  // without the cache v stays a view of qkv. The attention output `a` joins them after it.
  const std::int64_t before_attention = d.gpt2 ? qkv : qn + (f.cache ? 0 : kn + qkv);
  const std::int64_t held = before_attention + qn;  // + a

  ForwardPeak p;
  if (!d.gpt2) {
    // RoPE: x, the first norm's output (project_qkv's argument), qkv, and at q's rotation
    // q * cos, rotate_half(q), its product with sin and the sum; then k's beside the new q.
    p.at("rope", x + norm_out + qkv + std::max(4 * qn, qn + 4 * kn));
  }
  std::int64_t attention = 0;
  if (d.fused) {
    attention = qn;  // SDPA's output ([B, T, heads, d] in memory: the reshape to `a` is a view)
  } else {
    // softmax(QK^T)V (model.cpp attention() on LibTorch 1.13), step by step: matmul's copies
    // of q (never contiguous as [B * heads, T, d]) and of k, v where they are not the cache's
    // or repeat_kv's contiguous tensors, beside its output; the scores and their scaled copy;
    // the masked copy beside the causal mask (T x T bool, its negation too at the
    // masked_fill; alive to the end); softmax(scores, -1, float32), which converts 16-bit
    // scores to float32 first, and its cast back; the output beside the scores and the
    // probabilities; `a`, the output's reshaped copy.
    const std::int64_t s = f.b * d.heads * f.t * f.l;
    const std::int64_t kv_copy = !d.gqa() && !f.cache ? kl : 0;
    const std::int64_t probabilities = e == kF32 ? s * kF32 : s * e;
    const std::int64_t mask = f.t > 1 && f.t == f.l ? f.t * f.t : 0;
    attention = std::max({s * e + qn + kv_copy, 2 * s * e, 2 * s * e + 2 * mask,
                          s * e + s * kF32 + std::max(s * d.f32_copy(), s * d.cast_back()) + mask,
                          s * e + probabilities + kv_copy + qn + mask, 2 * qn});
  }
  p.at("attention", x + before_attention + repeated + attention);
  // The second norm (the locals alive); the MLP's residual add (x, the norm output still an
  // argument, the MLP's output and the sum; the attention's add holds less).
  p.at("norm", x + held + norm_temporaries(d, n));
  p.at("residual add", 3 * x + held + norm_out);
  // The MLP beside x, the locals and the second norm's output.
  const std::int64_t ni = n * d.inter * e;
  const std::int64_t mlp = d.gpt2 ? 9 * ni              // c_fc output + gelu_new's 8
                                  : 4 * ni + norm_out;  // [gate | up], silu, product, down
  p.at("MLP", x + held + norm_out + mlp);
  // The head: x (narrowed to the last position: still all of x), the final norm, the logits.
  const std::int64_t rows = f.last_only ? f.b : n;
  p.logits = rows * d.vocab * e;
  p.at("head", x + std::max(norm_temporaries(d, rows), rows * d.h * e + p.logits));
  p.bytes += kI64 * f.t;  // the positions (int64), alive through the forward
  return p;
}

// Bytes autograd keeps for one RMSNorm over n rows: float32 x (x itself in fp32; pow's and the
// product's input), rsqrt's output, x * rsqrt cast back (the float32 product in fp32: the
// weight's product's input), the output (the next linear's input); on LibTorch 1.x also
// x^2 (mean's input).
std::int64_t rms_norm_saved(const Dims& d, std::int64_t n) {
  return n * d.h * (kF32 + 2 * d.e) + n * kF32 + (d.mean_saves_input ? n * d.h * kF32 : 0);
}

// Bytes autograd keeps per layer for backward (the norms', the projections' and the attention's
// saved inputs and outputs, the MLP's) over n = b x t tokens.
std::int64_t saved_per_layer(const Dims& d, std::int64_t b, std::int64_t t) {
  const std::int64_t n = b * t, e = d.e;
  const std::int64_t qkv = n * (d.q + 2 * d.kv) * e, qn = n * d.q * e, kn = n * d.kv * e;
  const std::int64_t lse = b * d.heads * t * kF32;
  std::int64_t norms = 0, attention = 0, mlp = 0;
  if (d.gpt2) {
    // LayerNorm saves its input and its mean / rstd; its output is the next linear's input.
    norms = 2 * (2 * n * d.h * e + 2 * n * kF32);
    // gelu_new saves c_fc's output (pow), tanh's, 0.5 * x and 1 + tanh (their product); c_proj
    // its input: 5 x [tokens, intermediate].
    mlp = 5 * n * d.inter * e;
  } else {
    // The two RMSNorms; RoPE's cos and sin tables in the dtype (the products with q and k keep
    // them), made per layer.
    norms = 2 * rms_norm_saved(d, n) + 2 * t * d.head_dim * e;
    // gate and up fused (silu's and the product's input), silu's output, the product (down's
    // input).
    mlp = 4 * n * d.inter * e;
  }
  if (d.fused) {
    // SDPA saves q, k, v and its output and logsumexp. GPT-2's are views of qkv; RoPE's q and k
    // are new tensors, v a view of qkv; with grouped-query attention the repeated K/V replace
    // k and v (qkv and the rotated k are then free).
    const std::int64_t inputs = d.gpt2 ? qkv : (d.gqa() ? 3 * qn : qn + kn + qkv);
    attention = inputs + qn + lse;
  } else {
    // The explicit form saves matmul's copies of q, k and v (or the repeated K/V), the float32
    // softmax, its cast, the causal mask, and `a` (the reshaped output) for the projection.
    const std::int64_t s = b * d.heads * t * t;
    const std::int64_t kv_side = d.gqa() ? 2 * qn : 2 * kn;
    attention = qn + kv_side + s * (kF32 + d.cast_back()) + t * t + qn;
  }
  return norms + attention + mlp;
}

std::int64_t weight_bytes_of(const ModelConfig& c, const Problem& p) {
  return c.parameter_count() * bench::storage_bytes(p.dtype);
}

// Bytes of next_tokens' temporaries for b rows of logits (generate.cpp): greedy: argmax only;
// sampling: float32 scores and softmax (multinomial's draw as much again); top_p: the sorted
// scores and their int64 indices, softmax, cumsum and the bool masks instead.
std::int64_t sampling_bytes(const Dims& d, std::int64_t b, const MemoryContext& ctx) {
  if (!ctx.sampling) return 0;
  const std::int64_t bv = b * d.vocab;
  return ctx.top_p ? bv * (kF32 + kF32 + kI64 + kF32 + kF32 + 1) : bv * 4 * kF32;
}

std::vector<MemoryPoint> generation_points(const ModelConfig& c, const Problem& p,
                                           const MemoryContext& ctx) {
  const Dims d = dims_of(c, p, ctx);
  const std::int64_t b = p.mb, len = p.cache_len();
  const std::int64_t logits = b * d.vocab * d.e;
  // The generator's state: prompt, generated ids, the cache's positions, the position; with a
  // graph its static ids, position and logits; the previous run's last logits (every run after
  // the first holds them until its last step).
  std::int64_t state = kI64 * (b * p.in + b * p.out + len + 1) + logits;
  if (ctx.cuda_graph) state += kI64 * (b + 1) + logits;
  std::vector<MemoryPoint> points;
  auto add = [&](const std::string& name, const ForwardPeak& f, std::int64_t extra) {
    points.push_back({name + ": " + f.where, state + f.bytes + extra, 0});
  };
  // Prefill: the prompt's forward into the cache, logits of the last position.
  add("prefill", forward_peak(d, {b, p.in, p.in, true, true}), 0);
  if (p.out > 1) {
    // A decode step (eager: the filled prefix; static and graph: the whole cache, masked),
    // beside the previous step's logits.
    add("decode step", forward_peak(d, {b, 1, len, true, true}), logits);
  }
  if (ctx.sampling) points.push_back({"sampling", state + logits + sampling_bytes(d, b, ctx), 0});
  // The check: a full recompute without the cache of prompt + out - 1 generated tokens (their
  // int64 ids concatenated), then its logits in float64 beside it.
  const std::int64_t tc = p.in + p.out - 1;
  ForwardPeak check = forward_peak(d, {b, tc, tc, false, true});
  // Beside it the ids and, on the CPU, the check's float32 copy of the last logits (bench.cpp;
  // on CUDA that copy goes to the host first).
  const std::int64_t beside = kI64 * b * tc + (ctx.cpu ? b * d.vocab * d.f32_copy() : 0);
  if (check.logits + b * d.vocab * 8 > check.bytes) {
    check.bytes = check.logits + b * d.vocab * 8;
    check.where = "logits in float64";
  }
  add("check recompute", check, beside);
  return points;
}

std::vector<MemoryPoint> train_points(const ModelConfig& c, const Problem& p,
                                      const MemoryContext& ctx) {
  const Dims d = dims_of(c, p, ctx);
  const std::int64_t b = p.mb, t = p.in, n = b * t, m = b * (t - 1), e = d.e;
  const std::int64_t ids = kI64 * n;
  const std::int64_t logits = n * d.vocab * e;  // forward's full logits, alive to the end
  const std::int64_t ce = m * d.vocab * kF32;   // one float32 [B x (T - 1), V]
  // causal_lm_loss's float32 logits: .to(float32) copies 16-bit ones; float32 ones stay a view
  // of the logits, copied by the reshape only when B > 1 (narrow(1, ...) is then not contiguous).
  const std::int64_t f32_logits = e == kF32 && b == 1 ? 0 : ce;
  const std::int64_t head_grad = d.vocab * d.h * e;  // the head's weight gradient
  const std::int64_t grads = weight_bytes_of(c, p);  // every weight's gradient
  // What autograd holds when backward starts: every layer's saved tensors and the final norm's.
  const std::int64_t final_norm = d.gpt2 ? 2 * n * d.h * e + 2 * n * kF32 : rms_norm_saved(d, n);
  const std::int64_t saved = d.layers * saved_per_layer(d, b, t) + final_norm;
  std::vector<MemoryPoint> points;
  // The loss: the float32 logits and log_softmax's output (saved for backward).
  points.push_back({"loss", ids + saved + logits + f32_logits + ce, 0});
  // Backward's first nodes: nll_loss's gradient, log_softmax's saved output and its gradient
  // (3 float32 [B x (T - 1), V]); then the head: the logits' gradient [B, T, V], the hidden
  // state's and the head weight's.
  points.push_back({"backward: log-softmax", ids + saved + logits + 3 * ce, 0});
  points.push_back(
      {"backward: lm head", ids + saved + logits + logits + n * d.h * e + head_grad, 0});
  // Backward's end: the saved tensors gone, every gradient there. A tied embedding's gradient
  // comes from the head (first) and from the embedding (last): the engine holds the head's until
  // the embedding's arrives and adds them into a third tensor, the gradient (3 x [V, H] at once).
  points.push_back({"backward: end", ids + logits + (d.tied ? 2 * head_grad : 0), grads});
  // The check: the same forward without autograd (full logits) and its loss, beside the
  // gradients of the step.
  const ForwardPeak check = forward_peak(d, {b, t, t, false, false});
  points.push_back({"check forward: " + check.where,
                    ids + std::max(check.bytes, check.logits + f32_logits + ce), grads});
  return points;
}

}  // namespace

int blas_workspace_count(const Problem& p, const MemoryContext& ctx) {
  return p.task == Task::train || ctx.cuda_graph ? 2 : 1;
}

std::vector<MemoryPoint> memory_points(const ModelConfig& cfg, const Problem& p,
                                       const MemoryContext& ctx) {
  return p.task == Task::train ? train_points(cfg, p, ctx) : generation_points(cfg, p, ctx);
}

MemoryPrediction predict_peak_memory(const ModelConfig& cfg, const Problem& p,
                                     const MemoryContext& ctx) {
  MemoryPrediction r;
  r.weight_bytes = weight_bytes_of(cfg, p);
  if (p.task == Task::generate)
    r.kv_cache_bytes = cfg.kv_cache_bytes(p.mb, p.cache_len(), bench::storage_bytes(p.dtype));
  r.workspace_bytes = blas_workspace_count(p, ctx) * ctx.blas_workspace_bytes;
  std::int64_t best = -1;
  for (const MemoryPoint& pt : memory_points(cfg, p, ctx))
    if (pt.activation_bytes + pt.gradient_bytes > best) {
      best = pt.activation_bytes + pt.gradient_bytes;
      r.activation_bytes = pt.activation_bytes;
      r.gradient_bytes = pt.gradient_bytes;
      r.peak_at = pt.name;
    }
  return r;
}

bench::MemoryNeed memory_need(const ModelConfig& cfg, const Problem& p, const MemoryContext& ctx) {
  // In double first, the prediction's largest products (weights, gradients, KV cache, the check's
  // logits and float64 copy, the MLP, the explicit attention's scores, what training saves per
  // layer): a case past any memory is told without the int64 sums, which it could overflow.
  const double e = bench::storage_bytes(p.dtype), b = double(p.mb),
               t = double(p.task == Task::train ? p.in : p.in + p.out), h = double(cfg.hidden_size),
               v = double(cfg.vocab_size), inter = double(cfg.intermediate_size),
               layers = double(cfg.num_layers), heads = double(cfg.num_heads);
  const double weights = double(cfg.parameter_count()) * e;
  double rough = weights + b * t * (v * 12 + inter * e * 4 + heads * t * 8);
  if (p.task == Task::train)
    rough += weights + layers * b * t * (h * 8 + inter * 4) * e;
  else
    rough += 2 * layers * b * double(p.cache_len()) * double(cfg.num_kv_heads * cfg.head_dim) * e;
  // Far below 2^63 (every term of the prediction is within a small factor of one above).
  const double exact_below = std::ldexp(1.0, 52);
  const double peak =
      rough < exact_below ? double(predict_peak_memory(cfg, p, ctx).total()) : rough;
  bench::MemoryNeed need;
  if (ctx.cpu) {
    need.host_bytes = peak;
  } else {
    need.device_bytes = peak;
    need.host_bytes = v * h * kF32;  // random weights are drawn in float32 on the host first
  }
  return need;
}

}  // namespace transformer
