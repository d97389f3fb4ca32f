// The peak-memory prediction (models/transformer/memory.cpp): on a tiny config whose weights and
// KV cache are counted here by hand; its parts and points; its activations against an
// independent count: every byte LibTorch's CPU allocator hands out during a whole case through
// the runner (generation with its check, sampling, training), counted by c10's memory-reporting
// hook (the one the profiler uses), compared with the prediction less the weights; and on a GPU
// (skipped without one) the CUDA caching allocator's peak within 10% of it (issue 13).
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/version.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <vector>

#include "baselines/transformer/backends.hpp"
#include "models/transformer/bench.hpp"
#include "models/transformer/config.hpp"
#include "models/transformer/memory.hpp"
#include "models/transformer/model.hpp"
#include "models/transformer/problem.hpp"

namespace transformer {
namespace {

// ---- the count: c10's allocation hook -------------------------------------------------------

// The count runs where the attention is the explicit softmax(QK^T)V (LibTorch 1.x: what CI
// builds). LibTorch 2.x runs SDPA on the CPU, whose kernels keep per-thread scratch and choose
// their path by dtype and mask: not what the prediction describes (the CUDA allocator's peak),
// so the count is not compared there (the GPU's own peak is, in peak_vs_prediction).
#if TORCH_VERSION_MAJOR < 2
#define MYCONV_COUNT_ALLOCATIONS 1

// While installed as the thread's PROFILER_STATE, LibTorch's default CPU allocator reports every
// allocation and every free of what it allocated meanwhile (the profiler's memory hook): the
// current and the peak sum of the tensors made since it started (what existed before, the
// weights, does not count).
class AllocationCounter final : public c10::MemoryReportingInfoBase {
 public:
  void reportMemoryUsage(void*, int64_t alloc_size, int64_t, int64_t, c10::Device device) override {
    if (device.type() != c10::DeviceType::CPU) return;
    current_ += alloc_size;
    peak_ = std::max(peak_, current_);
  }
  bool memoryProfilingEnabled() const override { return true; }
  std::int64_t peak() const { return peak_; }

 private:
  std::int64_t current_ = 0, peak_ = 0;
};

template <typename F>
std::int64_t counted_peak(F&& f) {
  auto counter = std::make_shared<AllocationCounter>();
  {
    const c10::DebugInfoGuard guard(c10::DebugInfoKind::PROFILER_STATE, counter);
    f();
  }
  return counter->peak();
}
#endif

// ---- tiny configs -----------------------------------------------------------------------------

ModelConfig config(const char* json, const char* name) {
  return parse_hf_config(nlohmann::json::parse(json), name);
}

// V 10, H 4, 1 layer, 2 heads of 2, intermediate 8, 16 positions: small enough to count by hand.
ModelConfig hand_gpt2() {
  return config(R"({"model_type": "gpt2", "vocab_size": 10, "n_embd": 4, "n_layer": 1,
      "n_head": 2, "n_positions": 16, "n_inner": 8})",
                "hand-gpt2");
}

// V 10, H 4, 2 layers, 2 heads of 2 over 1 kv head, intermediate 6, untied head.
ModelConfig hand_qwen2() {
  return config(R"({"model_type": "qwen2", "vocab_size": 10, "hidden_size": 4,
      "intermediate_size": 6, "num_hidden_layers": 2, "num_attention_heads": 2,
      "num_key_value_heads": 1, "max_position_embeddings": 16, "tie_word_embeddings": false})",
                "hand-qwen2");
}

Problem generation(std::int64_t mb, std::int64_t in, std::int64_t out,
                   bench::DataType dt = bench::DataType::fp32) {
  Problem p;
  p.mb = mb;
  p.in = in;
  p.out = out;
  p.dtype = dt;
  return p;
}

Problem training(std::int64_t mb, std::int64_t in, bench::DataType dt = bench::DataType::fp32) {
  Problem p = generation(mb, in, 0, dt);
  p.task = Task::train;
  return p;
}

// ---- by hand ------------------------------------------------------------------------------------

TEST(TransformerMemory, WeightsAndCacheByHand) {
  // GPT-2: wte 10x4 + wpe 16x4 = 104; per layer ln_1, ln_2 (2 x (4 + 4)) = 16, c_attn 4x12 + 12 =
  // 60, attn c_proj 4x4 + 4 = 20, c_fc 4x8 + 8 = 40, mlp c_proj 8x4 + 4 = 36 (172); ln_f 8: 284.
  const MemoryContext ctx;
  const MemoryPrediction g = predict_peak_memory(hand_gpt2(), generation(3, 5, 2), ctx);
  EXPECT_EQ(g.weight_bytes, 284 * 4);
  // K and V: 2 x 1 layer x 3 rows x 2 kv heads x 16 positions (5 + 2, rounded up to 16 as
  // static_cache_len does) x 2 dims x 4 bytes.
  EXPECT_EQ(g.kv_cache_bytes, 2 * 1 * 3 * 2 * 16 * 2 * 4);
  EXPECT_EQ(g.gradient_bytes, 0);
  EXPECT_EQ(g.workspace_bytes, 0);  // the CPU's context: no cuBLAS
  EXPECT_EQ(g.total(), g.weight_bytes + g.kv_cache_bytes + g.activation_bytes);

  // Qwen2 in bf16: embed 40; per layer q 4x4 + 4, k and v 2 x (4x2 + 2), o 4x4, gate and up
  // 2 x 4x6, down 6x4, two norms 4 = 20 + 20 + 16 + 48 + 24 + 8 = 136 (x 2 layers); norm 4;
  // untied head 40: 356 parameters of 2 bytes.
  const MemoryPrediction q =
      predict_peak_memory(hand_qwen2(), generation(2, 3, 4, bench::DataType::bf16), ctx);
  EXPECT_EQ(q.weight_bytes, 356 * 2);
  // 2 x 2 layers x 2 rows x 1 kv head x 16 positions (3 + 4 rounded up) x 2 dims x 2 bytes.
  EXPECT_EQ(q.kv_cache_bytes, 2 * 2 * 2 * 1 * 16 * 2 * 2);

  // Training: no cache; every weight's gradient (as large as the weights) at the end of
  // backward and in the check's forward, none at backward's start.
  const Problem tp = training(2, 3);
  const MemoryPrediction t = predict_peak_memory(hand_qwen2(), tp, ctx);
  EXPECT_EQ(t.kv_cache_bytes, 0);
  EXPECT_EQ(t.total(), t.weight_bytes + t.gradient_bytes + t.activation_bytes);
  for (const MemoryPoint& pt : memory_points(hand_qwen2(), tp, ctx))
    EXPECT_EQ(pt.gradient_bytes,
              pt.name.rfind("backward: end", 0) == 0 || pt.name.rfind("check forward", 0) == 0
                  ? 356 * 4
                  : 0)
        << pt.name;
}

TEST(TransformerMemory, ActivationsOfOnePointByHand) {
  // The check's recompute of GPT-2 above in fp32 with fused attention: b 3 x tc (5 + 2 - 1) = 18
  // tokens, each with H 4 and intermediate 8. At its MLP: x (4), qkv (12), the attention output
  // a (4), the second LayerNorm's output (4) and c_fc's output with gelu_new's 8 temporaries
  // (9 x 8): 96 floats per token, 1728 floats; the forward's 6 int64 positions. Beside it: the
  // generator's int64 state (prompt 15, generated 6, cache positions 16, position 1), the last
  // logits (3 x 10 floats) and the recompute's ids (18 int64).
  MemoryContext ctx;
  ctx.fused_attention = true;
  const Problem p = generation(3, 5, 2);
  std::int64_t mlp = -1;
  for (const MemoryPoint& pt : memory_points(hand_gpt2(), p, ctx))
    if (pt.name == "check recompute: MLP") mlp = pt.activation_bytes;
  EXPECT_EQ(mlp, 18 * 96 * 4 + 6 * 8 + (15 + 6 + 16 + 1) * 8 + 3 * 10 * 4 + 18 * 8);
  // Its prefill (15 tokens) and decode step (3 tokens) hold less: the check is the peak.
  const MemoryPrediction m = predict_peak_memory(hand_gpt2(), p, ctx);
  EXPECT_EQ(m.peak_at, "check recompute: MLP");
  EXPECT_EQ(m.activation_bytes, mlp);
}

TEST(TransformerMemory, PartsFollowTheCase) {
  const ModelConfig c = builtin_config("qwen2-0.5b");
  MemoryContext ctx;
  ctx.blas_workspace_bytes = 33 << 20;
  const Problem p = generation(4, 512, 64, bench::DataType::fp16);
  const MemoryPrediction eager = predict_peak_memory(c, p, ctx);
  EXPECT_EQ(eager.weight_bytes, c.parameter_count() * 2);
  EXPECT_EQ(eager.kv_cache_bytes, c.kv_cache_bytes(4, 576, 2));
  EXPECT_EQ(eager.workspace_bytes, std::int64_t(33) << 20);
  EXPECT_EQ(eager.peak_at.rfind("check recompute", 0), 0u) << eager.peak_at;
  // A graph: a second workspace (the capture's stream) and its static buffers.
  ctx.cuda_graph = true;
  const MemoryPrediction graph = predict_peak_memory(c, p, ctx);
  EXPECT_EQ(graph.workspace_bytes, 2 * eager.workspace_bytes);
  EXPECT_GT(graph.activation_bytes, eager.activation_bytes);
  ctx.cuda_graph = false;
  // More tokens, more activations; a longer output, a longer check and a larger cache.
  EXPECT_GT(
      predict_peak_memory(c, generation(8, 512, 64, bench::DataType::fp16), ctx).activation_bytes,
      eager.activation_bytes);
  const MemoryPrediction longer =
      predict_peak_memory(c, generation(4, 512, 128, bench::DataType::fp16), ctx);
  EXPECT_GT(longer.activation_bytes, eager.activation_bytes);
  EXPECT_GT(longer.kv_cache_bytes, eager.kv_cache_bytes);
  // The explicit attention of LibTorch 1.13 holds the 512 x 575 scores per head.
  ctx.fused_attention = false;
  EXPECT_GT(predict_peak_memory(c, p, ctx).activation_bytes,
            eager.activation_bytes + 4 * 14 * 512 * 575 * 2);
  ctx.fused_attention = true;
  // Sampling adds float32 copies of the logits only: never more than the check's forward here.
  ctx.sampling = ctx.top_p = true;
  EXPECT_EQ(predict_peak_memory(c, p, ctx).total(), eager.total());
  // Training: two workspaces (the autograd thread's handle); at 4 x 512 tokens the log-softmax
  // backward (three float32 [B x (T - 1), V]) is the peak, before any gradient exists.
  const MemoryPrediction train =
      predict_peak_memory(c, training(4, 512, bench::DataType::bf16), MemoryContext{});
  EXPECT_EQ(train.peak_at, "backward: log-softmax");
  EXPECT_EQ(train.gradient_bytes, 0);
  EXPECT_GT(train.activation_bytes, 3 * 4 * 511 * c.vocab_size * 4);
  EXPECT_EQ(blas_workspace_count(training(1, 8), MemoryContext{}), 2);
}

// ---- against the count ----------------------------------------------------------------------

#ifdef MYCONV_COUNT_ALLOCATIONS
ModelConfig count_gpt2() {
  return config(R"({"model_type": "gpt2", "vocab_size": 211, "n_embd": 48, "n_layer": 2,
      "n_head": 4, "n_positions": 64})",
                "count-gpt2");
}

ModelConfig count_qwen2() {  // grouped-query attention, q/k/v bias, untied head
  return config(R"({"model_type": "qwen2", "vocab_size": 223, "hidden_size": 48,
      "intermediate_size": 112, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "max_position_embeddings": 64, "tie_word_embeddings": false})",
                "count-qwen2");
}

ModelConfig count_llama() {  // one kv head per 4, explicit head_dim, tied head
  return config(R"({"model_type": "llama", "vocab_size": 199, "hidden_size": 48, "head_dim": 16,
      "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 1, "max_position_embeddings": 64, "tie_word_embeddings": true})",
                "count-llama");
}

#endif

#ifdef MYCONV_COUNT_ALLOCATIONS
// V 5000 on H 64, 2 layers (the keys of both families; each reads its own).
ModelConfig big_vocab(const std::string& arch, bool tied) {
  const nlohmann::json j = {{"model_type", arch},
                            {"vocab_size", 5000},
                            {"hidden_size", 64},
                            {"n_embd", 64},
                            {"intermediate_size", 112},
                            {"num_hidden_layers", 2},
                            {"n_layer", 2},
                            {"num_attention_heads", 4},
                            {"n_head", 4},
                            {"num_key_value_heads", 2},
                            {"n_positions", 64},
                            {"max_position_embeddings", 64},
                            {"tie_word_embeddings", tied}};
  return parse_hf_config(j, "big-vocab-" + arch + (tied ? "-tied" : "-untied"));
}

struct Counted {
  std::int64_t counted = 0, predicted = 0;
  std::string peak_at;
};

// Runs p on cfg through the runner on the CPU (a checked run, a warm-up, 2 timed runs, a checked
// run) and counts the bytes of every tensor made during the case; predicted: the recorded
// prediction less the weights (made before the case).
Counted count_case(const ModelConfig& cfg, const Problem& p, const Sampling& sampling = {}) {
  // ATen's own CPU kernels: where the processor has AVX-512, LibTorch runs bf16 matmuls through
  // oneDNN, whose reorders allocate buffers through the same allocator (the count then depends
  // on the processor, and the prediction describes the tensors the model makes).
  struct NoMkldnn {
    bool was = at::globalContext().userEnabledMkldnn();
    NoMkldnn() { at::globalContext().setUserEnabledMkldnn(false); }
    ~NoMkldnn() { at::globalContext().setUserEnabledMkldnn(was); }
  } const no_mkldnn;
  const at::ScalarType st = p.dtype == bench::DataType::bf16 ? at::kBFloat16 : at::kFloat;
  Model m = Model::random(cfg, 1, st, at::kCPU);
  const Backend impl("libtorch_eager", "cpu", DecodeMode::eager);
  CaseSettings s;
  s.num_runs = 2;
  s.sampling = sampling;
  bench::CaseOptions o;
  o.measure.warmup_iters = 1;
  Counted c;
  bench::Result r;
  c.counted =
      counted_peak([&] { r = run_case(&m, &impl, impl.name(), "cpu", "", p, cfg, s, o).result; });
  EXPECT_EQ(r.status, bench::Status::passed) << r.reason;
  c.predicted = r.metrics.value("predicted_peak_bytes", std::int64_t(0)) -
                r.metrics.value("predicted_weight_bytes", std::int64_t(0));
  c.peak_at = r.extra.value("predicted_peak_at", std::string());
  return c;
}

// Within 1.5%: what the prediction leaves out (RoPE's cos / sin tables, norm statistics, masks
// of a few rows) weighs most in models this small.
void expect_count(const ModelConfig& cfg, const Problem& p, const char* expected_peak,
                  const Sampling& sampling = {}) {
  const Counted c = count_case(cfg, p, sampling);
  const std::string what = cfg.name + " " + p.str() + " " + bench::to_string(p.dtype);
  EXPECT_GT(c.counted, 0) << what;
  EXPECT_NEAR(double(c.predicted) / double(c.counted), 1.0, 0.015)
      << what << ": predicted " << c.predicted << " bytes, counted " << c.counted << " (peak at "
      << c.peak_at << ")";
  EXPECT_EQ(c.peak_at, expected_peak) << what;
}
#endif

TEST(TransformerMemory, GenerationAgainstTheCount) {
#ifdef MYCONV_COUNT_ALLOCATIONS
  // The check's recompute (no cache, in + out - 1 tokens) is each case's largest forward.
  expect_count(count_gpt2(), generation(3, 24, 6), "check recompute: MLP");
  expect_count(count_qwen2(), generation(3, 24, 6), "check recompute: MLP");
  expect_count(count_llama(), generation(2, 30, 4), "check recompute: MLP");
  expect_count(count_gpt2(), generation(3, 24, 6, bench::DataType::bf16), "check recompute: MLP");
  // In bf16 the float32 softmax over 29 x 29 scores per head outweighs the MLP.
  expect_count(count_qwen2(), generation(3, 24, 6, bench::DataType::bf16),
               "check recompute: attention");
  Sampling top_p;
  top_p.temperature = 0.8;
  top_p.top_p = 0.9;
  expect_count(count_qwen2(), generation(4, 4, 3), "check recompute: MLP", top_p);
#else
  GTEST_SKIP() << "LibTorch " TORCH_VERSION
                  " runs SDPA's CPU kernels (per-thread scratch, paths by dtype): the count is "
                  "compared where the attention is the explicit form (LibTorch 1.x)";
#endif
}

TEST(TransformerMemory, TrainingAgainstTheCount) {
#ifdef MYCONV_COUNT_ALLOCATIONS
  // Backward's first node: nll_loss's gradient, log_softmax's output and its gradient, beside
  // every saved tensor and the full logits.
  expect_count(count_gpt2(), training(3, 24), "backward: log-softmax");
  expect_count(count_qwen2(), training(3, 24), "backward: log-softmax");
  expect_count(count_llama(), training(2, 30), "backward: log-softmax");
  expect_count(count_qwen2(), training(3, 24, bench::DataType::bf16), "backward: log-softmax");
  // A large vocabulary on few tokens: the gradients outweigh the activations. Tied: the end of
  // backward, where the head's and the embedding's gradients of the embedding meet; untied: the
  // check's forward beside the gradients.
  expect_count(big_vocab("gpt2", true), training(1, 8), "backward: end");
  expect_count(big_vocab("qwen2", true), training(1, 8), "backward: end");
  expect_count(big_vocab("qwen2", false), training(2, 8), "check forward: head");
#else
  GTEST_SKIP() << "LibTorch " TORCH_VERSION
                  " runs SDPA's CPU kernels: the count is compared with LibTorch 1.x";
#endif
}

// ---- on a GPU: issue 13's target ---------------------------------------------------------------

// GPT-2 (random weights) on CUDA, each implementation, a generation in fp16 and a training step in
// bf16 (one model in memory at a time, as mytransformer does): the caching allocator's peak within
// 10% of the prediction, and every case starting from the weights alone (nothing left by the one
// before: no cuBLAS workspace, no gradient).
TEST(TransformerMemory, CudaPeakWithinTenPercent) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device (or a CPU-only LibTorch)";
  const ModelConfig cfg = builtin_config("gpt2");
  const at::Device dev(at::kCUDA, 0);
  CaseSettings s;
  s.num_runs = 2;
  bench::CaseOptions o;
  o.measure.warmup_iters = 1;
  const Backend eager("libtorch_eager", "cuda", DecodeMode::eager);
#if MYCONV_HAVE_TORCH_CUDA
  const Backend graph("libtorch_graph", "cuda", DecodeMode::graph, &capture_libtorch_decode_graph);
#else
  const Backend graph("libtorch_graph", "cuda", DecodeMode::graph);
#endif
  auto check = [&](Model& model, const Backend& impl, const Problem& p) {
    const bench::Result r = run_case(&model, &impl, impl.name(), "cuda", "", p, cfg, s, o).result;
    const std::string what = impl.name() + " " + p.str();
    ASSERT_EQ(r.status, bench::Status::passed) << what << ": " << r.reason;
    const auto& m = r.metrics;
    ASSERT_TRUE(m.contains("peak_vs_prediction")) << what;
    std::cout << what << ": " << memory_text(r) << "\n";
    EXPECT_NEAR(m["peak_vs_prediction"].get<double>(), 1.0, 0.10) << what << ": " << memory_text(r);
    // The case starts from the weights and little else: on the H200 (LibTorch 2.11) 6.13 MiB
    // more were allocated at the start of the first case, outside the weights, which
    // clearCublasWorkspaces did not free (not identified; the peak stayed within 3% of the
    // prediction). A leak of a case into the next (33 MiB a graph case before the workspaces
    // were cleared) still fails this.
    EXPECT_NEAR(m["allocated_at_start_bytes"].get<double>(), m["weight_bytes"].get<double>(),
                double(8 << 20))
        << what;
  };
  {
    Model half = Model::random(cfg, 1, at::kHalf, dev);
    const Problem p = generation(4, 256, 16, bench::DataType::fp16);
    check(half, eager, p);
    if (decode_graph_built(nullptr)) check(half, graph, p);
    check(half, eager, p);  // after a graph: its capture stream's workspace is gone
  }
  Model bf16 = Model::random(cfg, 1, at::kBFloat16, dev);
  check(bf16, eager, training(4, 256, bench::DataType::bf16));
  check(bf16, eager, training(2, 256, bench::DataType::bf16));  // after a step: no gradient left
}

}  // namespace
}  // namespace transformer
