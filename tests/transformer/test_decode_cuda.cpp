// The transformer tests that need a CUDA LibTorch (compiled to nothing without one): the fused
// decode kernels against the ATen ops they replace, and own_cuda's decode step against
// libtorch_eager in every dtype on the tiny checkpoints (tests/transformer/tiny_transformers.hpp)
// and wider models; without a GPU they skip, with the reason. Everything else of the suite,
// own_cuda's scalar math and the CUDA decode paths' agreement included: test_model.cpp.
#if MYCONV_HAVE_TORCH_CUDA
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "models/transformer/config.hpp"
#include "models/transformer/cuda/decode_cuda.hpp"
#include "models/transformer/cuda/own_decode.hpp"
#include "models/transformer/generate.hpp"
#include "models/transformer/model.hpp"
#include "tests/common/temp_dir.hpp"
#include "tests/transformer/tiny_transformers.hpp"

namespace transformer {
namespace {

using bench::testing::TempDir;
using namespace transformer::testing;

// The fused decode kernels against the ATen ops they replace, in each dtype: RoPE as
// transformers writes it, the cache written at the position and nowhere else, silu(g) * u, and
// argmax with ties (the first index) and NaN (above every number).
TEST(TransformerCuda, FusedDecodeKernelsMatchAten) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no GPU";
  const c10::NoGradGuard no_grad;
  const auto dev = at::Device(at::kCUDA, 0);
  const std::int64_t b = 2, nq = 4, nkv = 2, d = 64, len = 16, p = 5;
  for (at::ScalarType t : {at::kFloat, at::kHalf, at::kBFloat16}) {
    const auto opt = at::TensorOptions().dtype(t).device(dev);
    const double tol = t == at::kFloat ? 1e-6 : t == at::kHalf ? 1e-3 : 8e-3;  // ~1 ulp
    const at::Tensor qkv0 = at::randn({b, nq + 2 * nkv, d}, opt);
    const at::Tensor inv_freq =
        at::pow(10000.0, -at::arange(0, d, 2, at::kLong).to(at::kFloat) / double(d)).to(dev);
    const at::Tensor pos = at::full({1}, p, at::TensorOptions().dtype(at::kLong).device(dev));
    at::Tensor qkv = qkv0.clone();
    at::Tensor ck = at::zeros({b, nkv, len, d}, opt), cv = at::zeros({b, nkv, len, d}, opt);
    fused_rope_write_kv(qkv, ck, cv, inv_freq, pos, nq, nkv);
    const at::Tensor freqs = at::outer(pos.to(at::kFloat), inv_freq);
    const at::Tensor emb = at::cat({freqs, freqs}, -1);
    const at::Tensor cos = emb.cos().to(t), sin = emb.sin().to(t);
    const at::Tensor qk = qkv0.narrow(1, 0, nq + nkv);
    const at::Tensor rot = at::cat({-qk.narrow(-1, d / 2, d / 2), qk.narrow(-1, 0, d / 2)}, -1);
    const at::Tensor want = qk * cos + rot * sin;
    auto rel = [](const at::Tensor& a, const at::Tensor& w) {
      return (a.to(at::kFloat) - w.to(at::kFloat)).abs().max().item<double>() /
             std::max(1.0, w.to(at::kFloat).abs().max().item<double>());
    };
    EXPECT_LE(rel(qkv.narrow(1, 0, nq + nkv), want), tol) << t;
    EXPECT_TRUE(at::equal(qkv.narrow(1, nq + nkv, nkv), qkv0.narrow(1, nq + nkv, nkv))) << t;
    EXPECT_TRUE(at::equal(ck.select(2, p), qkv.narrow(1, nq, nkv))) << t;
    EXPECT_TRUE(at::equal(cv.select(2, p), qkv0.narrow(1, nq + nkv, nkv))) << t;
    // Nothing written but at position p: the caches are zero elsewhere (a comparison of sums would
    // depend on the order of a floating-point reduction).
    for (const at::Tensor& c : {ck, cv}) {
      at::Tensor rest = c.clone();
      rest.select(2, p).zero_();
      EXPECT_EQ(rest.abs().max().item<double>(), 0.0) << t;
    }
    // Without inv_freq (GPT-2): nothing rotated, k and v written.
    at::Tensor plain = qkv0.clone();
    at::Tensor pk = at::zeros_like(ck), pv = at::zeros_like(cv);
    fused_rope_write_kv(plain, pk, pv, at::Tensor(), pos, nq, nkv);
    EXPECT_TRUE(at::equal(plain, qkv0)) << t;
    EXPECT_TRUE(at::equal(pk.select(2, p), qkv0.narrow(1, nq, nkv))) << t;

    const std::int64_t inter = 200;
    const at::Tensor gu = at::randn({3, 2 * inter}, opt) * 4;
    const at::Tensor sm = fused_silu_mul(gu, inter);
    EXPECT_LE(rel(sm, at::silu(gu.narrow(1, 0, inter)) * gu.narrow(1, inter, inter)), tol) << t;

    at::Tensor logits = at::randn({3, 50257}, opt);
    logits.select(0, 1).fill_(0);
    logits.select(0, 1).narrow(0, 700, 1).fill_(5);
    logits.select(0, 1).narrow(0, 900, 1).fill_(5);  // a tie: the first index wins
    logits.select(0, 2).narrow(0, 1234, 1).fill_(std::numeric_limits<double>::quiet_NaN());
    const at::Tensor got = fused_argmax(logits).cpu();
    EXPECT_TRUE(at::equal(got, logits.to(at::kFloat).cpu().argmax(-1))) << t << " " << got;
    EXPECT_EQ(got[1].item<std::int64_t>(), 700) << t;
    EXPECT_EQ(got[2].item<std::int64_t>(), 1234) << t;
  }
}

struct OwnShape {
  std::int64_t b, in, out;
};

// The kernels own_cuda's step is made with (MYCONV_OWN_CUDA_KERNELS) while it lives; the
// default again after.
class KernelsVariant {
 public:
  explicit KernelsVariant(const char* v) { setenv("MYCONV_OWN_CUDA_KERNELS", v, 1); }
  ~KernelsVariant() { unsetenv("MYCONV_OWN_CUDA_KERNELS"); }
  KernelsVariant(const KernelsVariant&) = delete;
  KernelsVariant& operator=(const KernelsVariant&) = delete;
};

// Whether the decode checks run own_cuda's kernels `variant`: every one, or those that
// MYCONV_TEST_OWN_CUDA_VARIANTS lists (e.g. "2": compute-sanitizer's racecheck, which cannot run
// the persistent step).
bool variant_listed(const char* variant) {
  const char* only = std::getenv("MYCONV_TEST_OWN_CUDA_VARIANTS");
  return !only || std::string(only).find(variant) != std::string::npos;
}

// own_cuda's decode step against libtorch_eager for config c (random weights from a
// checkpoint: nonzero biases, norm weights off 1) in each dtype and shape, with the persistent
// step (kernels v3: batch 1 to 3, where it says it ran) and with the separate launches (v2): in
// fp32 the greedy tokens are eager's and the last logits a full recompute's within float32
// rounding; in fp16 and bf16 the last logits are the recompute's within the suite's check (atol =
// rel x rms, rtol = rel) and the returned tokens their argmax.
void expect_own_decode_matches_eager(const ModelConfig& c, std::vector<at::ScalarType> types,
                                     std::vector<OwnShape> shapes) {
  const c10::NoGradGuard no_grad;
  const auto dev = at::Device(at::kCUDA, 0);
  TempDir dir;
  write_checkpoint(dir.path(), c, random_weights(c, 31));
  const Checkpoint ckpt(dir.path().string());
  for (at::ScalarType t : types) {
    const Model m = Model::from_checkpoint(c, ckpt, t, dev);
    for (const OwnShape s : shapes)
      for (const char* variant : {"3", "2"}) {
        if (!variant_listed(variant)) continue;
        if (std::string(variant) == "2" && s.b >= 4 && variant_listed("3"))
          continue;  // v3 runs these as v2
        const KernelsVariant kernels(variant);
        const std::string what = c.name + " " + c10::toString(t) + " batch " + std::to_string(s.b) +
                                 " in " + std::to_string(s.in) + " kernels v" + variant;
        std::string why;
        ASSERT_TRUE(own_decode_supported(c, t, s.b, &why)) << what << ": " << why;
        Generator eager(m, s.b, s.in, s.out, Sampling{}, DecodeMode::eager, 3);
        Generator own(m, s.b, s.in, s.out, Sampling{}, DecodeMode::own, 3, &make_own_decode_graph);
        eager.run();
        eager.finish();
        own.prepare();
        const std::string step = own.decode_step_description();
        const bool persistent = step.find("one persistent kernel") != std::string::npos;
        EXPECT_EQ(persistent, std::string(variant) == "3" && s.b < 4) << what << ": " << step;
        own.run();
        own.finish();
        const at::Tensor full = recompute_last_logits(m, own.prompt(), own.generated(), s.out - 1)
                                    .to(at::kDouble)
                                    .cpu();
        const at::Tensor got = own.last_logits().to(at::kDouble).cpu();
        ASSERT_EQ(got.sizes(), full.sizes()) << what;
        ASSERT_FALSE(at::isnan(got).any().item<bool>()) << what;
        if (t == at::kFloat) {
          EXPECT_TRUE(at::equal(own.generated(), eager.generated()))
              << what << "\nown\n"
              << own.generated() << "\neager\n"
              << eager.generated();
          EXPECT_LT(max_abs_diff(got, full), 1e-4 * std::max(1.0, full.abs().max().item<double>()))
              << what;
        } else {
          const double rel = t == at::kHalf ? 5e-2 : 1.5e-1;
          const double rms = std::sqrt(full.pow(2).mean().item<double>());
          const at::Tensor bad = (got - full).abs() > rel * std::max(rms, 1e-6) + rel * full.abs();
          EXPECT_EQ(bad.sum().item<std::int64_t>(), 0)
              << what << ": max |diff| " << max_abs_diff(got, full) << ", rms " << rms;
          // The tokens the graph's argmax gave are the argmax of the logits it returned.
          EXPECT_TRUE(at::equal(own.generated().select(1, s.out - 1).cpu(),
                                own.last_logits().to(at::kFloat).argmax(-1).cpu()))
              << what;
        }
      }
  }
}

// On the tiny checkpoints, a Qwen2 layout with an odd KV head count and two wider models, fp32,
// fp16 and bf16: batch 1 and 3 (the SIMT GEMV), 8 and 17 (fp16 and bf16: the tensor-core GEMV;
// 17 past one 16-row pass), a cache of several attention splits (in 40).
TEST(TransformerCuda, OwnCudaDecodeMatchesEager) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no GPU";
  const ModelConfig odd = parse_hf_config(nlohmann::json::parse(R"({"model_type": "qwen2",
      "vocab_size": 103, "hidden_size": 48, "intermediate_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 6, "num_key_value_heads": 3, "max_position_embeddings": 64,
      "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": true})"),
                                          "tiny-qwen2-odd-kv");
  // Rows long enough for several passes of the GEMVs' k loops and their tails (k 320, 384, 1536,
  // 2816), five query heads over one KV head.
  const ModelConfig wide = parse_hf_config(nlohmann::json::parse(R"({"model_type": "qwen2",
      "vocab_size": 1000, "hidden_size": 320, "intermediate_size": 2816, "num_hidden_layers": 2,
      "num_attention_heads": 5, "num_key_value_heads": 1, "max_position_embeddings": 64,
      "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": true})"),
                                           "small-qwen2-wide");
  const ModelConfig wide_gpt2 = parse_hf_config(nlohmann::json::parse(R"({"model_type": "gpt2",
      "vocab_size": 97, "n_embd": 384, "n_layer": 2, "n_head": 6, "n_positions": 64,
      "layer_norm_epsilon": 1e-5})"),
                                                "small-gpt2-wide");
  for (const ModelConfig& c : {tiny_gpt2(), tiny_qwen2(), tiny_llama(), odd, wide, wide_gpt2})
    expect_own_decode_matches_eager(c, {at::kFloat, at::kHalf, at::kBFloat16},
                                    {{1, 9, 10}, {3, 40, 10}, {8, 40, 10}, {17, 5, 4}});
}

// A few cases of the same check, short enough for compute-sanitizer (memcheck, racecheck): the
// GEMV's k split over several warps (k 2816) and over one (k 320), k in several rounds (6400),
// grouped-query attention with an attention split past *pos (a cache of 32 positions, 9 to 18
// filled), and a split longer than the attention's 64-position shared-memory tile (16 KV heads
// at batch 17, 200 positions: splits of 112 positions on a GPU of at most 132 multiprocessors,
// the running softmax over two tiles). The persistent step (batch 1) runs the attention as one
// split (to 64 positions, the item writes the output) and as split partials merged in the
// o-proj's prologue (past 64).
TEST(TransformerCuda, OwnCudaDecodeSmall) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no GPU";
  const ModelConfig wide = parse_hf_config(nlohmann::json::parse(R"({"model_type": "qwen2",
      "vocab_size": 1000, "hidden_size": 320, "intermediate_size": 2816, "num_hidden_layers": 1,
      "num_attention_heads": 5, "num_key_value_heads": 1, "max_position_embeddings": 64,
      "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": true})"),
                                           "small-qwen2-wide-1layer");
  const ModelConfig long_kv = parse_hf_config(nlohmann::json::parse(R"({"model_type": "llama",
      "vocab_size": 89, "hidden_size": 128, "head_dim": 8, "intermediate_size": 6400,
      "num_hidden_layers": 1, "num_attention_heads": 16, "num_key_value_heads": 16,
      "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 500.0,
      "tie_word_embeddings": true})"),
                                              "tiny-llama-long-kv");
  expect_own_decode_matches_eager(wide, {at::kFloat, at::kBFloat16}, {{1, 9, 10}});
  expect_own_decode_matches_eager(long_kv, {at::kFloat, at::kBFloat16},
                                  {{1, 200, 4}, {17, 200, 4}});
}

// Unasked (MYCONV_OWN_CUDA_KERNELS unset), own_cuda runs the separate launches with the SIMT GEMV
// at batch 1 where a layer's weights are under 64 MiB, and says so.
TEST(TransformerCuda, OwnCudaAutoKernelsBySize) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no GPU";
  const c10::NoGradGuard no_grad;
  unsetenv("MYCONV_OWN_CUDA_KERNELS");
  const ModelConfig c = tiny_qwen2();
  TempDir dir;
  write_checkpoint(dir.path(), c, random_weights(c, 31));
  const Checkpoint ckpt(dir.path().string());
  const Model m = Model::from_checkpoint(c, ckpt, at::kBFloat16, at::Device(at::kCUDA, 0));
  Generator own(m, 1, 5, 3, Sampling{}, DecodeMode::own, 3, &make_own_decode_graph);
  own.prepare();
  const std::string step = own.decode_step_description();
  EXPECT_NE(step.find("kernels v2 with the SIMT GEMV below batch 4 (not the persistent step: "
                      "layers of 0 MiB"),
            std::string::npos)
      << step;
}

}  // namespace
}  // namespace transformer
#endif  // MYCONV_HAVE_TORCH_CUDA
