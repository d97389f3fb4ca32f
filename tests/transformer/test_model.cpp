// The transformer suite (models/transformer/) on the CPU: config.json parsing and the built-in
// configs, the safetensors reader (round trip, shards, one-line errors), GPT-2 / Qwen2 / Llama
// on tiny checkpoints written in the Hugging Face layout (tests/transformer/tiny_transformers.hpp),
// checked against a float64 reference written here from transformers' modeling code; the KV-cache
// decode against a full recompute at every step; the static (graph) step against the eager one; the
// generator's modes, and on a GPU the CUDA decode paths against each other; own_cuda's kernels'
// scalar math; the case through the core's runner with its bandwidth metrics; a training step;
// --device (backend.cpp resolve_device).
// (own_cuda's and the fused kernels' tests that need a CUDA LibTorch: test_decode_cuda.cpp;
// descriptors, presets, models and cases: test_settings.cpp.)
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "baselines/transformer/backends.hpp"
#include "core/error.hpp"
#include "models/transformer/bench.hpp"
#include "models/transformer/config.hpp"
#include "models/transformer/cuda/own_decode_math.hpp"
#include "models/transformer/generate.hpp"
#include "models/transformer/model.hpp"
#include "models/transformer/problem.hpp"
#include "models/transformer/safetensors.hpp"
#include "tests/common/temp_dir.hpp"
#include "tests/transformer/tiny_transformers.hpp"

namespace transformer {
namespace {

using bench::testing::TempDir;
using namespace transformer::testing;

// ---- a float64 reference written from transformers' modeling code -----------------------------

at::Tensor D(const Weights& w, const std::string& name) {
  return w.at(name).to(at::kDouble);
}

at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const std::int64_t t = q.size(2);
  at::Tensor s = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(q.size(-1)));
  s = s.masked_fill(at::ones({t, t}, at::kBool).triu(1), -INFINITY);
  return at::matmul(at::softmax(s, -1), v);
}

// modeling_gpt2.py: Conv1D is x @ W + b; gelu_new; tied head.
at::Tensor reference_gpt2(const ModelConfig& c, const Weights& w, const at::Tensor& ids) {
  const std::int64_t b = ids.size(0), t = ids.size(1), h = c.hidden_size, nh = c.num_heads,
                     d = c.head_dim;
  const std::string p = "transformer.";
  auto ln = [&](const at::Tensor& x, const std::string& n) {
    return at::layer_norm(x, {h}, D(w, n + ".weight"), D(w, n + ".bias"), c.norm_eps);
  };
  at::Tensor x = D(w, p + "wte.weight").index_select(0, ids.flatten()).view({b, t, h}) +
                 D(w, p + "wpe.weight").narrow(0, 0, t);
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    const std::string l = p + "h." + std::to_string(i) + ".";
    const at::Tensor qkv = at::matmul(ln(x, l + "ln_1"), D(w, l + "attn.c_attn.weight")) +
                           D(w, l + "attn.c_attn.bias");
    auto heads = [&](int j) {
      return qkv.narrow(-1, j * h, h).view({b, t, nh, d}).transpose(1, 2);
    };
    const at::Tensor a =
        causal_attention(heads(0), heads(1), heads(2)).transpose(1, 2).reshape({b, t, h});
    x = x + at::matmul(a, D(w, l + "attn.c_proj.weight")) + D(w, l + "attn.c_proj.bias");
    const at::Tensor f =
        at::matmul(ln(x, l + "ln_2"), D(w, l + "mlp.c_fc.weight")) + D(w, l + "mlp.c_fc.bias");
    const at::Tensor g = 0.5 * f * (1 + at::tanh(std::sqrt(2 / M_PI) * (f + 0.044715 * f.pow(3))));
    x = x + at::matmul(g, D(w, l + "mlp.c_proj.weight")) + D(w, l + "mlp.c_proj.bias");
  }
  return at::matmul(ln(x, p + "ln_f"), D(w, p + "wte.weight").t());
}

// modeling_qwen2.py / modeling_llama.py, with _compute_llama3_parameters for the rope scaling.
at::Tensor reference_rope_model(const ModelConfig& c, const Weights& w, const at::Tensor& ids) {
  const std::int64_t b = ids.size(0), t = ids.size(1), h = c.hidden_size, nh = c.num_heads,
                     nkv = c.num_kv_heads, d = c.head_dim;
  auto rms = [&](const at::Tensor& x, const std::string& n) {
    return x * at::rsqrt(x.pow(2).mean(-1, true) + c.norm_eps) * D(w, n);
  };
  auto linear = [&](const at::Tensor& x, const std::string& n, bool bias) {
    at::Tensor y = at::matmul(x, D(w, n + ".weight").t());
    return bias ? y + D(w, n + ".bias") : y;
  };
  std::vector<double> inv(d / 2);
  for (std::int64_t i = 0; i < d / 2; ++i) {
    double f = 1.0 / std::pow(c.rope_theta, double(2 * i) / double(d));
    if (c.rope_scaling.type == "llama3") {
      const auto& s = c.rope_scaling;
      const double wl = 2 * M_PI / f, old = double(s.original_max_position_embeddings);
      if (wl > old / s.low_freq_factor) {
        f = f / s.factor;
      } else if (wl >= old / s.high_freq_factor) {
        const double sm = (old / wl - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1 - sm) * f / s.factor + sm * f;
      }
    }
    inv[i] = f;
  }
  const at::Tensor freqs = at::outer(at::arange(t, at::kDouble),
                                     at::from_blob(inv.data(), {d / 2}, at::kDouble).clone());
  const at::Tensor emb = at::cat({freqs, freqs}, -1);
  const at::Tensor cos = emb.cos(), sin = emb.sin();
  auto rope = [&](const at::Tensor& x) {
    const at::Tensor rot = at::cat({-x.narrow(-1, d / 2, d / 2), x.narrow(-1, 0, d / 2)}, -1);
    return x * cos + rot * sin;
  };
  const std::string emb_name = "model.embed_tokens.weight";
  at::Tensor x = D(w, emb_name).index_select(0, ids.flatten()).view({b, t, h});
  for (std::int64_t i = 0; i < c.num_layers; ++i) {
    const std::string l = "model.layers." + std::to_string(i) + ".";
    const at::Tensor hn = rms(x, l + "input_layernorm.weight");
    const bool bias = c.attention_bias;
    const at::Tensor q =
        rope(linear(hn, l + "self_attn.q_proj", bias).view({b, t, nh, d}).transpose(1, 2));
    at::Tensor k =
        rope(linear(hn, l + "self_attn.k_proj", bias).view({b, t, nkv, d}).transpose(1, 2));
    at::Tensor v = linear(hn, l + "self_attn.v_proj", bias).view({b, t, nkv, d}).transpose(1, 2);
    k = k.repeat_interleave(nh / nkv, 1);
    v = v.repeat_interleave(nh / nkv, 1);
    const at::Tensor a = causal_attention(q, k, v).transpose(1, 2).reshape({b, t, nh * d});
    x = x + linear(a, l + "self_attn.o_proj", c.o_bias);
    const at::Tensor hm = rms(x, l + "post_attention_layernorm.weight");
    x = x + linear(at::silu(linear(hm, l + "mlp.gate_proj", false)) *
                       linear(hm, l + "mlp.up_proj", false),
                   l + "mlp.down_proj", false);
  }
  const at::Tensor head = c.tie_word_embeddings ? D(w, emb_name) : D(w, "lm_head.weight");
  return at::matmul(rms(x, "model.norm.weight"), head.t());
}

at::Tensor reference_logits(const ModelConfig& c, const Weights& w, const at::Tensor& ids) {
  return c.arch == Arch::gpt2 ? reference_gpt2(c, w, ids) : reference_rope_model(c, w, ids);
}

// ---- config -----------------------------------------------------------------------------------

// --device (backend.cpp resolve_device): cpu without selecting a CUDA device; a name that is no
// device, or a CUDA index past the devices here, is a UsageError.
TEST(TransformerBackend, DeviceOfARun) {
  int selected = -1;
  EXPECT_TRUE(resolve_device("cpu", [&](int n) { selected = n; }).is_cpu());
  EXPECT_EQ(selected, -1);
  EXPECT_THROW(resolve_device("tpu", [](int) {}), bench::UsageError);
  EXPECT_THROW(resolve_device("cuda:99", [](int) {}), bench::UsageError);
}

TEST(TransformerConfig, BuiltinsMatchThePublishedParameterCounts) {
  // GPT-2 small 124,439,808; Qwen2-0.5B 494,032,768; Llama-3.2-1B 1,235,814,400 (tied heads).
  EXPECT_EQ(builtin_config("gpt2").parameter_count(), 124439808);
  EXPECT_EQ(builtin_config("qwen2-0.5b").parameter_count(), 494032768);
  EXPECT_EQ(builtin_config("llama-3.2-1b").parameter_count(), 1235814400);
  const ModelConfig llama = builtin_config("llama-3.2-1b");
  EXPECT_EQ(llama.rope_scaling.type, "llama3");
  EXPECT_EQ(llama.head_dim, 64);
  EXPECT_EQ(builtin_config("qwen2.5-0.5b").max_position_embeddings, 32768);
  for (const auto& n : builtin_names()) EXPECT_NO_THROW(builtin_config(n)) << n;
  EXPECT_THROW(builtin_config("gpt5"), bench::UsageError);
}

TEST(TransformerConfig, HfConfigRoundTrips) {
  for (const ModelConfig& c :
       {tiny_gpt2(), tiny_qwen2(), tiny_llama(), builtin_config("gpt2-large")}) {
    const ModelConfig back = parse_hf_config(nlohmann::json::parse(to_hf_config(c).dump()), "x");
    EXPECT_EQ(back.arch, c.arch);
    EXPECT_EQ(back.parameter_count(), c.parameter_count());
    EXPECT_EQ(back.num_kv_heads, c.num_kv_heads);
    EXPECT_EQ(back.head_dim, c.head_dim);
    EXPECT_EQ(back.tie_word_embeddings, c.tie_word_embeddings);
    EXPECT_EQ(back.rope_scaling.type, c.rope_scaling.type);
    EXPECT_DOUBLE_EQ(back.rope_theta, c.rope_theta);
  }
}

TEST(TransformerConfig, BadConfigsAreOneLineErrors) {
  const char* bad[] = {R"({"model_type": "bert"})", R"({"model_type": "gpt2", "n_embd": 32})",
                       R"({"model_type": "qwen2", "vocab_size": 10, "hidden_size": 30,
                          "num_hidden_layers": 1, "num_attention_heads": 4,
                          "num_key_value_heads": 3, "intermediate_size": 8})",
                       R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 32,
                          "num_hidden_layers": 1, "num_attention_heads": 4,
                          "intermediate_size": 8, "rope_scaling": {"rope_type": "yarn"}})",
                       "[1, 2]"};
  for (const char* text : bad) {
    try {
      parse_hf_config(nlohmann::json::parse(text), "cfg");
      ADD_FAILURE() << "accepted " << text;
    } catch (const bench::UsageError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

// ---- safetensors ------------------------------------------------------------------------------

TEST(Safetensors, RoundTripsAndShards) {
  TempDir dir;
  const ModelConfig c = tiny_qwen2();
  const Weights w = random_weights(c, 3);
  write_checkpoint(dir.path() / "one", c, w);
  write_checkpoint(dir.path() / "two", c, w, /*sharded=*/true);
  const Checkpoint one((dir.path() / "one").string()), two((dir.path() / "two").string());
  EXPECT_FALSE(one.sharded());
  EXPECT_TRUE(two.sharded());
  EXPECT_EQ(two.file_count(), 2u);
  EXPECT_EQ(one.names(), two.names());
  for (const auto& [name, t] : w) {
    const TensorView& v = two.get(name);
    EXPECT_EQ(v.shape, t.sizes().vec());
    EXPECT_EQ(std::memcmp(v.data, t.contiguous().data_ptr(), v.nbytes), 0) << name;
  }
  const at::Tensor ids = random_ids(c, 2, 5, 1);
  const Model a = Model::from_checkpoint(c, one, at::kFloat, at::kCPU);
  const Model b = Model::from_checkpoint(c, two, at::kFloat, at::kCPU);
  EXPECT_TRUE(at::equal(a.forward(ids, 0, nullptr, false), b.forward(ids, 0, nullptr, false)));
}

TEST(Safetensors, BadFilesAreOneLineErrors) {
  TempDir dir;
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream((dir.path() / name).string(), std::ios::binary) << bytes;
    return (dir.path() / name).string();
  };
  auto with_header = [](const std::string& json, std::size_t data_bytes) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
    return s + json + std::string(data_bytes, '\0');
  };
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"short", "abc"},
      {"long_header", std::string("\xff\xff\x00\x00\x00\x00\x00\x00", 8) + "{}"},
      {"not_json", with_header("{not json", 0)},
      {"outside",
       with_header(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8)},
      {"size",
       with_header(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}})", 16)},
      {"dtype",
       with_header(R"({"w": {"dtype": "F33", "shape": [4], "data_offsets": [0, 16]}})", 16)},
      {"fields", with_header(R"({"w": {"shape": [4]}})", 16)}};
  for (const auto& [name, bytes] : bad) {
    try {
      SafetensorsFile f(write(name, bytes));
      ADD_FAILURE() << name << " accepted";
    } catch (const bench::UsageError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(Checkpoint((dir.path() / "nothing").string()), bench::UsageError);
  // A checkpoint that lacks a tensor, or has one of the wrong shape.
  const ModelConfig c = tiny_gpt2();
  Weights w = random_weights(c, 1);
  const Checkpoint good = [&] {
    write_checkpoint(dir.path() / "good", c, w);
    return Checkpoint((dir.path() / "good").string());
  }();
  EXPECT_NO_THROW(Model::check_checkpoint(c, good));
  Weights wrong = w;
  wrong["transformer.h.0.attn.c_attn.weight"] = at::zeros({c.hidden_size, c.hidden_size});
  write_checkpoint(dir.path() / "wrong", c, wrong);
  EXPECT_THROW(Model::check_checkpoint(c, Checkpoint((dir.path() / "wrong").string())),
               bench::UsageError);
  w.erase("transformer.h.1.mlp.c_fc.bias");
  write_checkpoint(dir.path() / "missing", c, w);
  EXPECT_THROW(Model::check_checkpoint(c, Checkpoint((dir.path() / "missing").string())),
               bench::UsageError);
  EXPECT_THROW(Model::from_checkpoint(c, Checkpoint((dir.path() / "missing").string()), at::kFloat,
                                      at::kCPU),
               bench::UsageError);
}

// ---- the models against the float64 reference, the cache against a recompute ------------------

TEST_P(TinyModels, LogitsMatchTheFloat64Reference) {
  TempDir dir;
  const ModelConfig c = config();
  const Weights w = random_weights(c, 11);
  write_checkpoint(dir.path(), c, w);
  const Model m = Model::from_checkpoint(c, Checkpoint(dir.path().string()), at::kFloat, at::kCPU);
  const at::Tensor ids = random_ids(c, 2, 20, 5);
  const at::Tensor ref = reference_logits(c, w, ids);
  const at::Tensor got = m.forward(ids, 0, nullptr, false);
  const double scale = ref.abs().max().item<double>();
  EXPECT_LT(max_abs_diff(got, ref), 2e-5 * std::max(1.0, scale)) << "scale " << scale;
  // bf16 weights and activations stay near (a loose check that the dtype path works).
  const Model half =
      Model::from_checkpoint(c, Checkpoint(dir.path().string()), at::kBFloat16, at::kCPU);
  EXPECT_LT(max_abs_diff(half.forward(ids, 0, nullptr, false), ref), 0.1 * std::max(1.0, scale));
}

TEST_P(TinyModels, CachedDecodeEqualsFullRecomputeAtEveryStep) {
  const ModelConfig c = config();
  TempDir dir;
  write_checkpoint(dir.path(), c, random_weights(c, 21));
  const Model m = Model::from_checkpoint(c, Checkpoint(dir.path().string()), at::kFloat, at::kCPU);
  const c10::NoGradGuard no_grad;
  const std::int64_t b = 3, in = 7, steps = 12;
  at::Tensor seq = random_ids(c, b, in, 9);
  KvCache eager = m.make_cache(b, in + steps), fixed = m.make_cache(b, in + steps);
  at::Tensor logits = m.forward(seq, 0, &eager, true).select(1, 0);
  m.forward(seq, 0, &fixed, true);
  at::Tensor pos = at::zeros({1}, at::kLong);
  for (std::int64_t s = 0; s < steps; ++s) {
    const at::Tensor full = m.forward(seq, 0, nullptr, false).select(1, seq.size(1) - 1);
    const double scale = std::max(1.0, full.abs().max().item<double>());
    ASSERT_LT(max_abs_diff(logits, full), 1e-5 * scale) << "step " << s;
    const at::Tensor next = logits.argmax(-1);
    ASSERT_TRUE(at::equal(next, full.argmax(-1))) << "step " << s;
    const std::int64_t p = seq.size(1);
    seq = at::cat({seq, next.view({b, 1})}, 1);
    logits = m.forward(next.view({b, 1}), p, &eager, true).select(1, 0);
    pos.fill_(p);
    const at::Tensor static_logits = m.decode_step_static(next.view({b, 1}), pos, fixed);
    ASSERT_LT(max_abs_diff(static_logits, logits), 1e-5 * scale) << "static step " << s;
  }
  // A chunk of several tokens after a prefix (a masked, non-causal-aligned attention).
  KvCache chunked = m.make_cache(b, seq.size(1));
  m.forward(seq.narrow(1, 0, 4), 0, &chunked, false);
  const at::Tensor rest = m.forward(seq.narrow(1, 4, seq.size(1) - 4), 4, &chunked, false);
  const at::Tensor full = m.forward(seq, 0, nullptr, false).narrow(1, 4, seq.size(1) - 4);
  EXPECT_LT(max_abs_diff(rest, full), 1e-5 * std::max(1.0, full.abs().max().item<double>()));
}

TEST_P(TinyModels, GeneratorModesAgree) {
  const ModelConfig c = config();
  const Model m = Model::random(c, 4, at::kFloat, at::kCPU);
  Generator eager(m, 2, 9, 10, Sampling{}, DecodeMode::eager, 3);
  Generator fixed(m, 2, 9, 10, Sampling{}, DecodeMode::static_shape, 3);
  eager.run();
  fixed.run();
  const GenerationTimes t = eager.finish();
  fixed.finish();
  EXPECT_EQ(t.decode_ms.size(), 9u);
  EXPECT_GT(t.ttft_ms, 0);
  EXPECT_TRUE(at::equal(eager.prompt(), fixed.prompt()));
  EXPECT_TRUE(at::equal(eager.generated(), fixed.generated()));
  EXPECT_LT(max_abs_diff(eager.last_logits(),
                         recompute_last_logits(m, eager.prompt(), eager.generated(), 9)),
            1e-5);
  // Rows differ (a different prompt per row), and runs repeat exactly.
  EXPECT_FALSE(at::equal(eager.prompt().select(0, 0), eager.prompt().select(0, 1)));
  const at::Tensor first = eager.generated().clone();
  eager.run();
  eager.finish();
  EXPECT_TRUE(at::equal(first, eager.generated()));
  // Sampling draws the same tokens every run (seeded per generation) and stays in the vocab.
  Sampling s;
  s.temperature = 0.8;
  s.top_p = 0.9;
  Generator sampled(m, 2, 5, 6, s, DecodeMode::eager, 3);
  sampled.run();
  sampled.finish();
  const at::Tensor drawn = sampled.generated().clone();
  sampled.run();
  sampled.finish();
  EXPECT_TRUE(at::equal(drawn, sampled.generated()));
  EXPECT_LT(drawn.max().item<std::int64_t>(), c.vocab_size);
  // Without its backend's capture (and on the CPU) the graph mode says why it cannot run.
  Generator graph(m, 1, 4, 3, Sampling{}, DecodeMode::graph, 3);
  EXPECT_THROW(graph.prepare(), bench::Unsupported);
}

// On a GPU: the eager, static and graph decode paths (the last two through the fused CUDA
// kernels) give the same greedy tokens, and each one's last logits equal a full recompute.
TEST_P(TinyModels, CudaDecodePathsAgree) {
  if (!decode_graph_built(nullptr) || !at::hasCUDA()) GTEST_SKIP() << "no CUDA LibTorch or GPU";
  const ModelConfig c = config();
  const Model m = Model::random(c, 4, at::kFloat, at::Device(at::kCUDA, 0));
#if MYCONV_HAVE_TORCH_CUDA
  const DecodeCapture graph_capture = &capture_libtorch_decode_graph;  // libtorch_graph's
#else
  const DecodeCapture graph_capture;
#endif
  std::vector<std::unique_ptr<Generator>> gens;
  for (DecodeMode mode : {DecodeMode::eager, DecodeMode::static_shape, DecodeMode::graph}) {
    gens.push_back(
        std::make_unique<Generator>(m, 2, 9, 10, Sampling{}, mode, 3,
                                    mode == DecodeMode::graph ? graph_capture : DecodeCapture{}));
    gens.back()->prepare();
    gens.back()->run();
    gens.back()->finish();
  }
  for (const auto& g : gens) {
    EXPECT_TRUE(at::equal(g->generated(), gens[0]->generated())) << int(g->mode());
    const at::Tensor full = recompute_last_logits(m, g->prompt(), g->generated(), 9);
    EXPECT_LT(max_abs_diff(g->last_logits(), full),
              1e-4 * std::max(1.0, full.abs().max().item<double>()))
        << int(g->mode());
  }
}

INSTANTIATE_TEST_SUITE_P(Arch, TinyModels, ::testing::Values(0, 1, 2));

// own_cuda's split-KV attention: partials of chunks of positions (one split past the last
// position, empty), merged as the kernel merges them, equal the softmax over all positions; the
// activations' float forms equal their definitions.
TEST(TransformerOwnDecode, SplitSoftmaxMergeEqualsTheDirectSoftmax) {
  const int len = 37, d = 5, chunk = 8, splits = 6;  // splits 0-4 hold positions, 5 none
  at::Generator gen = at::detail::createCPUGenerator(3);
  const at::Tensor s = at::randn({len}, gen, at::kDouble) * 4;
  const at::Tensor v = at::randn({len, d}, gen, at::kDouble);
  const at::Tensor want = at::matmul(at::softmax(s, 0), v);
  std::vector<float> ml(2 * splits), o(splits * d, 0.0f);
  for (int i = 0; i < splits; ++i) {
    const int t0 = i * chunk, t1 = std::min(len, t0 + chunk);
    float m = -INFINITY, l = 0;
    for (int t = t0; t < t1; ++t) m = std::max(m, float(s[t].item<double>()));
    for (int t = t0; t < t1; ++t) {
      const float p = std::exp(float(s[t].item<double>()) - m);
      l += p;
      for (int e = 0; e < d; ++e) o[i * d + e] += p * float(v[t][e].item<double>());
    }
    ml[2 * i] = m;
    ml[2 * i + 1] = l;
  }
  EXPECT_EQ(ml[2 * (splits - 1) + 1], 0.0f);
  for (int e = 0; e < d; ++e)
    EXPECT_NEAR(own::merge_split_softmax(
                    splits, [&](int i) { return ml[2 * i]; }, [&](int i) { return ml[2 * i + 1]; },
                    [&](int i) { return o[i * d + e]; }),
                want[e].item<double>(), 1e-5)
        << e;
  for (double x : {-9.0, -1.5, -0.1, 0.0, 0.3, 2.0, 8.0}) {
    EXPECT_NEAR(own::silu_f(float(x)), x / (1 + std::exp(-x)), 1e-6) << x;
    const double g = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    EXPECT_NEAR(own::gelu_new_f(float(x)), g, 1e-6) << x;
  }
}

TEST(TransformerTrain, LossAndGradients) {
  const ModelConfig c = tiny_qwen2();
  Model m = Model::random(c, 2, at::kFloat, at::kCPU);
  TrainStep step(m, 2, 8, 5);
  step.run();
  const TrainTimes t = step.finish();
  EXPECT_GT(t.forward_ms, 0);
  EXPECT_GT(t.backward_ms, 0);
  EXPECT_NEAR(step.loss(), step.reference_loss(), 1e-5);
  EXPECT_NEAR(step.loss(), std::log(double(c.vocab_size)), 0.5);  // near uniform at init
  for (const auto& p : m.parameters()) EXPECT_TRUE(p.grad().defined());
}

// ---- the case through the runner -----------------------------------------------------------

bench::CaseOptions quick_options() {
  bench::CaseOptions o;
  o.measure.warmup_iters = 1;
  o.command_prefix = "mytransformer --model tiny";
  return o;
}

TEST(TransformerCase, GenerationThroughTheRunner) {
  const ModelConfig c = tiny_gpt2();
  Model m = Model::random(c, 1, at::kFloat, at::kCPU);
  const Backend impl("libtorch_eager", "cpu", DecodeMode::eager);
  CaseSettings s;
  s.num_runs = 3;
  Problem p;
  p.mb = 2;
  p.in = 6;
  p.out = 5;
  CaseOutput out = run_case(&m, &impl, impl.name(), "cpu", "", p, c, s, quick_options());
  const bench::Result& r = out.result;
  ASSERT_EQ(r.status, bench::Status::passed) << r.reason;
  EXPECT_EQ(r.suite, "transformer");
  EXPECT_EQ(r.total_time_ms->samples, 3u);
  for (const char* key : {"ttft_ms", "decode_ms_per_token_mean", "decode_ms_per_token_median",
                          "decode_ms_per_token_p90", "decode_total_ms", "total_latency_ms",
                          "prefill_tokens_per_s", "decode_tokens_per_s", "e2e_tokens_per_s",
                          "kv_cache_bytes", "weight_bytes", "host_peak_rss_bytes"})
    EXPECT_TRUE(r.metrics.contains(key)) << key;
  EXPECT_EQ(r.metrics["num_runs"].get<int>(), 3);
  EXPECT_EQ(r.extra["decode_step_ms_runs"].size(), 3u);
  EXPECT_EQ(r.extra["decode_step_ms_runs"][0].size(), 4u);
  EXPECT_EQ(r.metrics["kv_cache_bytes"].get<std::int64_t>(),
            c.kv_cache_bytes(2, static_cache_len(11), 4));
  EXPECT_NEAR(r.metrics["total_latency_ms"].get<double>(),
              r.metrics["ttft_ms"].get<double>() + r.metrics["decode_total_ms"].get<double>(),
              1e-9);
  EXPECT_NE(r.command.find("--batch-size 2 --input-length 6 --output-length 5"), std::string::npos);
  // The decode step's bytes: the weights once, K/V of in + out / 2 positions read on average,
  // one position written; no copy bandwidth measured on the CPU.
  const double per_position = double(c.kv_cache_bytes(2, 1, 4));
  EXPECT_EQ(r.metrics["decode_weight_bytes_per_step"].get<double>(),
            r.metrics["weight_bytes"].get<double>());
  EXPECT_DOUBLE_EQ(r.metrics["decode_kv_read_bytes_per_step"].get<double>(),
                   per_position * (6 + 2.5));
  EXPECT_DOUBLE_EQ(r.metrics["decode_kv_write_bytes_per_step"].get<double>(), per_position);
  EXPECT_NEAR(r.metrics["decode_bandwidth_gbs"].get<double>(),
              r.metrics["decode_bytes_per_step"].get<double>() /
                  (r.metrics["decode_ms_per_token_mean"].get<double>() / 1e3) / 1e9,
              1e-9 * r.metrics["decode_bandwidth_gbs"].get<double>());
  EXPECT_FALSE(r.metrics.contains("decode_bandwidth_vs_copy"));

  // Past max_batch_input_product: skipped; past the positions: unsupported; training.
  s.max_batch_input_product = 11;
  EXPECT_EQ(run_case(&m, &impl, impl.name(), "cpu", "", p, c, s, quick_options()).result.status,
            bench::Status::skipped);
  s.max_batch_input_product = 131072;
  p.in = 60;
  EXPECT_EQ(run_case(&m, &impl, impl.name(), "cpu", "", p, c, s, quick_options()).result.status,
            bench::Status::unsupported);
  p.task = Task::train;
  p.in = 8;
  const bench::Result t =
      run_case(&m, &impl, impl.name(), "cpu", "", p, c, s, quick_options()).result;
  ASSERT_EQ(t.status, bench::Status::passed) << t.reason;
  EXPECT_TRUE(t.metrics.contains("backward_ms"));
  // Not built: skipped with the reason.
  EXPECT_EQ(
      run_case(nullptr, nullptr, "libtorch_graph", "cuda", "needs CUDA", p, c, s, quick_options())
          .result.status,
      bench::Status::skipped);
}

}  // namespace
}  // namespace transformer
