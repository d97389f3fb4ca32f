#include "models/transformer/cuda/own_decode.hpp"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/cuda/cuda_check.hpp"
#include "core/error.hpp"
#include "models/transformer/cuda/own_decode_kernels.hpp"
#include "models/transformer/cuda/own_step.hpp"

namespace transformer {

namespace {

bool elem_of(at::ScalarType t, cuda::Elem* e) {
  switch (t) {
    case at::kFloat:
      *e = cuda::Elem::f32;
      return true;
    case at::kHalf:
      *e = cuda::Elem::f16;
      return true;
    case at::kBFloat16:
      *e = cuda::Elem::bf16;
      return true;
    default:
      return false;
  }
}

// The kernels MYCONV_OWN_CUDA_KERNELS asks for (own_decode.hpp): 3 (the persistent step where it
// runs the case, else 2), 2 or 1 (an A/B comparison); kAutoKernels unset (the layer-size rule
// below decides); 0 for any other value.
constexpr int kAutoKernels = -1;
int kernels_variant() {
  const char* env = std::getenv("MYCONV_OWN_CUDA_KERNELS");
  const std::string v = env ? env : "";
  if (v.empty()) return kAutoKernels;
  return v == "3" ? 3 : v == "2" ? 2 : v == "1" ? 1 : 0;
}

// The batch from which fp16 and bf16 GEMVs run on tensor cores as MYCONV_OWN_CUDA_MMA_FROM asks
// (an A/B comparison; at least 1), else 0.
int mma_from_asked() {
  const char* env = std::getenv("MYCONV_OWN_CUDA_MMA_FROM");
  const int n = env ? std::atoi(env) : 0;
  return n >= 1 ? n : 0;
}

// Unless asked, where a layer's weights are at least kLargeLayerBytes: in fp16 and bf16 the
// separate launches with the tensor-core GEMV at every batch, in float32 the persistent step
// (batch 1 to 3); below, the separate launches with the SIMT GEMV below batch kMmaFromBatch.
// Measured on an H100 at batch 1 (results/h100/20261127_decode_own_cuda_v3/ and
// 20261127_decode_tensor_core_gemv/): for Llama-3.2-1B (121 MB a layer in bf16) the tensor-core
// GEMV's step beats the persistent step and the SIMT GEMV's, and the persistent step beats the
// SIMT launches in float32; for Qwen2-0.5B (30 MB) and GPT-2 (14 MB) the SIMT launches are the
// fastest: the tensor-core GEMV's tiles of 16 rows leave SMs idle on their smaller GEMVs, and the
// persistent step's fixed costs a phase (the grid barrier, the staged rows, the pieces' latency)
// outweigh the launches it saves.
constexpr std::int64_t kLargeLayerBytes = std::int64_t(64) << 20;

std::int64_t layer_weight_bytes(const Model& model) {
  const Model::Layer& l = model.layers().front();
  std::int64_t bytes = 0;
  for (const at::Tensor* t : {&l.qkv_w, &l.o_w, &l.up_w, &l.down_w})
    bytes += t->numel() * static_cast<std::int64_t>(t->element_size());
  return bytes;
}

const void* ptr(const at::Tensor& t) {
  return t.defined() ? t.data_ptr() : nullptr;
}

// The shapes of the step's GEMVs and attention (pointers left null): what both the support
// check and the step use.
struct StepShapes {
  cuda::GemvArgs qkv, o, up, down, head;
  cuda::AttentionArgs attention;
};

// sms: the device's multiprocessors (the attention's split count is sized on them; 1 gives the
// longest splits, the most shared memory: what the support check assumes).
StepShapes step_shapes(const ModelConfig& c, std::int64_t batch, std::int64_t max_len, int variant,
                       int sms, int mma_from) {
  const int kernels = variant == 1 ? 1 : 2;  // the separate launches' kernels (v3's fallback: v2)
  const bool gpt2 = c.arch == Arch::gpt2;
  const int h = static_cast<int>(c.hidden_size), nq = static_cast<int>(c.num_heads),
            nkv = static_cast<int>(c.num_kv_heads), d = static_cast<int>(c.head_dim),
            inter = static_cast<int>(c.intermediate_size), b = static_cast<int>(batch);
  const cuda::NormKind norm = gpt2 ? cuda::NormKind::layer : cuda::NormKind::rms;
  StepShapes s;
  auto gemv = [&](int n, int k, cuda::NormKind nk, cuda::Epilogue e) {
    cuda::GemvArgs a;
    a.n = n;
    a.k = k;
    a.batch = b;
    a.norm = nk;
    a.eps = static_cast<float>(c.norm_eps);
    a.epilogue = e;
    a.kernels = kernels;
    a.mma_from = mma_from;
    return a;
  };
  s.qkv = gemv((nq + 2 * nkv) * d, h, norm, cuda::Epilogue::rope_kv);
  s.qkv.nq = nq;
  s.qkv.nkv = nkv;
  s.qkv.d = d;
  s.qkv.max_len = max_len;
  s.o = gemv(h, nq * d, cuda::NormKind::none, cuda::Epilogue::residual);
  s.up = gpt2 ? gemv(inter, h, norm, cuda::Epilogue::gelu)
              : gemv(2 * inter, h, norm, cuda::Epilogue::swiglu);
  s.down = gemv(h, inter, cuda::NormKind::none, cuda::Epilogue::residual);
  s.head = gemv(static_cast<int>(c.vocab_size), h, norm, cuda::Epilogue::store);
  cuda::AttentionArgs& at = s.attention;
  at.batch = b;
  at.nq = nq;
  at.nkv = nkv;
  at.d = d;
  at.max_len = max_len;
  at.kernels = kernels;
  at.chunk = cuda::attention_chunk(max_len, kernels, batch * nkv, sms);
  return s;
}

class OwnDecodeGraph final : public DecodeGraph {
 public:
  OwnDecodeGraph(const Model& model, KvCache& cache, bool pdl, int kernels, int mma_from)
      : batch_(cache.batch), pdl_(pdl), kernels_(kernels == 1 ? 1 : 2), mma_from_(mma_from) {
    const ModelConfig& c = model.config();
    BENCH_CHECK(elem_of(model.dtype(), &elem_), "own_cuda: no kernels for this dtype");
    const bool gpt2 = c.arch == Arch::gpt2;
    const auto on = at::TensorOptions().device(model.device());
    const auto act = on.dtype(model.dtype());
    const std::int64_t b = batch_, h = c.hidden_size, qd = c.num_heads * c.head_dim;
    ids_ = at::zeros({b}, on.dtype(at::kLong));
    pos_ = at::zeros({1}, on.dtype(at::kLong));
    x_ = at::zeros({b, h}, act);
    xn_ = at::zeros({b, h}, act);
    q_ = at::zeros({b, qd}, act);
    attn_ = at::zeros({b, qd}, act);
    act_ = at::zeros({b, c.intermediate_size}, act);
    logits_ = at::zeros({b, c.vocab_size}, act);
    tokens_ = at::zeros({b}, on.dtype(at::kLong));
    keys_ = at::zeros({b}, on.dtype(at::kLong));
    sms_ = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    shapes_ = step_shapes(c, b, cache.max_len, kernels_, sms_, mma_from_);
    cuda::AttentionArgs& a = shapes_.attention;
    // Room for the separate attention's splits and for the persistent step's.
    const int splits = std::max(cuda::attention_splits(a), cuda::kStepMaxSplits);
    partial_o_ = at::zeros({b * c.num_heads * splits * c.head_dim}, on.dtype(at::kFloat));
    partial_ml_ = at::zeros({b * c.num_heads * splits * 2}, on.dtype(at::kFloat));
    counters_ = at::zeros({b * c.num_kv_heads}, on.dtype(at::kInt));
    a.pos = pos_.data_ptr<std::int64_t>();
    a.q = q_.data_ptr();
    a.out = attn_.data_ptr();
    a.partial_o = partial_o_.data_ptr<float>();
    a.partial_ml = partial_ml_.data_ptr<float>();
    a.counters = reinterpret_cast<unsigned*>(counters_.data_ptr<int>());
    const std::vector<Model::Layer>& layers = model.layers();
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const Model::Layer& l = layers[i];
      BENCH_CHECK(cache.k[i].is_contiguous() && cache.v[i].is_contiguous(),
                  "own_cuda: the KV cache must be contiguous");
      BENCH_CHECK(reinterpret_cast<std::uintptr_t>(cache.k[i].data_ptr()) % 16 == 0 &&
                      reinterpret_cast<std::uintptr_t>(cache.v[i].data_ptr()) % 16 == 0,
                  "own_cuda: the KV cache must be 16-byte aligned (16-byte copies)");
      Launches L;
      L.qkv = shapes_.qkv;
      L.qkv.w = ptr(l.qkv_w);
      L.qkv.bias = ptr(l.qkv_b);
      L.qkv.x = x_.data_ptr();
      L.qkv.norm_w = ptr(l.norm1_w);
      L.qkv.norm_b = ptr(l.norm1_b);
      L.qkv.xn = xn_.data_ptr();
      if (i == 0) {  // the embedding gathered in the first GEMV's prologue
        L.qkv.ids = ids_.data_ptr<std::int64_t>();
        L.qkv.wte = ptr(model.token_embedding());
        L.qkv.wpe = gpt2 ? ptr(model.position_embedding()) : nullptr;
        L.qkv.x_out = x_.data_ptr();
      }
      L.qkv.out = q_.data_ptr();
      L.qkv.inv_freq = gpt2 ? nullptr : model.rope_frequencies().data_ptr<float>();
      L.qkv.pos = pos_.data_ptr<std::int64_t>();
      L.qkv.cache_k = cache.k[i].data_ptr();
      L.qkv.cache_v = cache.v[i].data_ptr();
      L.attention = a;
      L.attention.cache_k = cache.k[i].data_ptr();
      L.attention.cache_v = cache.v[i].data_ptr();
      L.o = shapes_.o;
      L.o.w = ptr(l.o_w);
      L.o.bias = ptr(l.o_b);
      L.o.x = attn_.data_ptr();
      L.o.out = x_.data_ptr();
      L.up = shapes_.up;
      L.up.w = ptr(l.up_w);
      L.up.bias = ptr(l.up_b);
      L.up.x = x_.data_ptr();
      L.up.norm_w = ptr(l.norm2_w);
      L.up.norm_b = ptr(l.norm2_b);
      L.up.xn = xn_.data_ptr();
      L.up.out = act_.data_ptr();
      L.down = shapes_.down;
      L.down.w = ptr(l.down_w);
      L.down.bias = ptr(l.down_b);
      L.down.x = act_.data_ptr();
      L.down.out = x_.data_ptr();
      for (const at::Tensor* t : {&l.qkv_w, &l.o_w, &l.up_w, &l.down_w})
        BENCH_CHECK(t->is_contiguous(), "own_cuda: every weight matrix must be contiguous");
      layers_.push_back(L);
    }
    head_ = shapes_.head;
    BENCH_CHECK(model.lm_head().is_contiguous(), "own_cuda: the head must be contiguous");
    head_.w = ptr(model.lm_head());
    head_.x = x_.data_ptr();
    head_.norm_w = ptr(model.final_norm_weight());
    head_.norm_b = ptr(model.final_norm_bias());
    head_.xn = xn_.data_ptr();
    head_.out = logits_.data_ptr();
    if (kernels == 3) plan_persistent(on);

    // As torch.cuda.graph: one eager step on a side stream (launch errors surface here, with the
    // call's text), then the capture.
    const c10::cuda::CUDAStream side = at::cuda::getStreamFromPool();
    at::cuda::getCurrentCUDAStream().synchronize();
    const c10::cuda::CUDAStreamGuard guard(side);
    enqueue(side.stream());
    side.synchronize();
    graph_.capture_begin();
    try {
      enqueue(side.stream());
    } catch (...) {
      graph_.capture_end();
      throw;
    }
    graph_.capture_end();
    side.synchronize();
  }

  ~OwnDecodeGraph() override {
    if (!trace_.defined()) return;
    try {
      write_trace();
    } catch (...) {  // a diagnostic: never an error of the run
    }
  }
  OwnDecodeGraph(const OwnDecodeGraph&) = delete;
  OwnDecodeGraph& operator=(const OwnDecodeGraph&) = delete;

  at::Tensor step(const at::Tensor& ids, std::int64_t pos) override {
    ids_.copy_(ids.reshape({batch_}));
    pos_.fill_(pos);
    graph_.replay();
    return logits_;
  }
  at::Tensor greedy_tokens() override { return tokens_; }
  void add_note(const std::string& note) { note_ += note; }
  std::string description() const override {
    if (persistent_)
      return std::string("own kernels, one persistent kernel a step (") +
             std::to_string(plan_.slots) + " weight slots of " +
             std::to_string(plan_.slot_bytes / 1024) + " KiB a block)" + blocks_note_ +
             " and the argmax, kernels v3";
    return std::string("own kernels, ") + std::to_string(launches()) + " launches a step" +
           (pdl_ ? ", programmatic dependent launch" : ", plain launches") + ", kernels v" +
           std::to_string(kernels_) +
           (elem_ == cuda::Elem::f32 ? ""
            : batch_ >= mma_from_
                ? " with the tensor-core GEMV"
                : " with the SIMT GEMV below batch " + std::to_string(mma_from_)) +
           note_;
  }

 private:
  struct Launches {
    cuda::GemvArgs qkv, o, up, down;
    cuda::AttentionArgs attention;
  };

  // A layer's GEMVs (two kernels where the input rows are made apart) and attention, the head's
  // GEMV, argmax_rows's memset and two kernels.
  std::size_t launches() const {
    std::size_t n = 3 + cuda::gemv_launches(head_, elem_);
    for (const Launches& l : layers_)
      for (const cuda::GemvArgs* g : {&l.qkv, &l.o, &l.up, &l.down})
        n += cuda::gemv_launches(*g, elem_);
    return n + layers_.size();
  }

  // The persistent step's phases (device memory) and plan where it runs this case, else the
  // reason in note_ (the separate launches run).
  void plan_persistent(const at::TensorOptions& on) {
    std::vector<cuda::StepPhase> phases;
    auto gemv = [&](const cuda::GemvArgs& g) {
      cuda::StepPhase p;
      p.kind = cuda::StepPhase::gemv;
      p.g = g;
      phases.push_back(p);
    };
    for (const Launches& l : layers_) {
      gemv(l.qkv);
      cuda::StepPhase p;
      p.kind = cuda::StepPhase::attention;
      p.a = l.attention;
      phases.push_back(p);
      gemv(l.o);
      gemv(l.up);
      gemv(l.down);
    }
    gemv(head_);
    const char* why = nullptr;
    if (!cuda::plan_persistent_step(phases, elem_, sms_, &plan_, &why)) {
      note_ = std::string(" (not the persistent step: ") + why + ")";
      return;
    }
    // MYCONV_OWN_CUDA_STEP_BLOCKS=N: N blocks instead of one a multiprocessor (1 for
    // compute-sanitizer's racecheck, which cannot keep a grid barrier's blocks resident together).
    if (const char* env = std::getenv("MYCONV_OWN_CUDA_STEP_BLOCKS"); env && *env) {
      const long n = std::strtol(env, nullptr, 10);
      BENCH_CHECK(n >= 1 && n <= sms_,
                  "MYCONV_OWN_CUDA_STEP_BLOCKS must be 1 to the multiprocessors");
      plan_.blocks = static_cast<int>(n);
      blocks_note_ = " on " + std::to_string(n) + " blocks (MYCONV_OWN_CUDA_STEP_BLOCKS)";
    }
    const std::size_t bytes = phases.size() * sizeof(cuda::StepPhase);
    phases_ = at::empty({static_cast<std::int64_t>(bytes)}, on.dtype(at::kByte));
    CUDA_CHECK(cudaMemcpy(phases_.data_ptr(), phases.data(), bytes, cudaMemcpyHostToDevice));
    phase_count_ = static_cast<int>(phases.size());
    barrier_ = at::zeros({1}, on.dtype(at::kInt));
    persistent_ = true;
    for (const cuda::StepPhase& p : phases) phase_names_.push_back(phase_name(p));
    const char* trace = std::getenv("MYCONV_OWN_CUDA_STEP_TRACE");
    if (trace && *trace) {
      trace_path_ = trace;
      trace_ = at::zeros({static_cast<std::int64_t>(phases.size()) * plan_.blocks * 4},
                         on.dtype(at::kLong));
    }
  }

  static std::string phase_name(const cuda::StepPhase& p) {
    if (p.kind == cuda::StepPhase::attention) return "attention";
    switch (p.g.epilogue) {
      case cuda::Epilogue::rope_kv:
        return "qkv";
      case cuda::Epilogue::swiglu:
      case cuda::Epilogue::gelu:
        return "up";
      case cuda::Epilogue::residual:
        return p.g.n == p.g.k ? "o" : "down";
      case cuda::Epilogue::store:
        return "head";
    }
    return "gemv";
  }

  // The last step's phase times (MYCONV_OWN_CUDA_STEP_TRACE=FILE): per phase, over the blocks,
  // when it began (after its barrier) and its work ended, in microseconds from the first
  // phase's earliest start, and the medians of its work, of the staging of its input rows (a
  // GEMV's prologue) and of the time it waited for its weight pieces (a CSV).
  void write_trace() const {
    const at::Tensor t = trace_.cpu();
    const auto* v = t.data_ptr<std::int64_t>();
    const int blocks = plan_.blocks;
    std::int64_t t0 = v[0];
    for (int b = 0; b < blocks; ++b) t0 = std::min(t0, v[4 * b]);
    const auto median = [](std::vector<double> x) {
      std::sort(x.begin(), x.end());
      return x[x.size() / 2];
    };
    std::ofstream out(trace_path_);
    out << "phase,name,start_min_us,start_max_us,end_min_us,end_max_us,work_median_us,"
           "staging_median_us,waiting_median_us\n";
    for (int p = 0; p < phase_count_; ++p) {
      std::vector<double> start, end, work, staging, waiting;
      for (int b = 0; b < blocks; ++b) {
        const std::int64_t* r = v + (std::size_t(p) * blocks + b) * 4;
        start.push_back((r[0] - t0) / 1e3);
        end.push_back((r[2] - t0) / 1e3);
        work.push_back((r[2] - r[0]) / 1e3);
        staging.push_back(r[1] ? (r[1] - r[0]) / 1e3 : 0.0);
        waiting.push_back(r[3] / 1e3);
      }
      out << p << "," << phase_names_[p] << "," << *std::min_element(start.begin(), start.end())
          << "," << *std::max_element(start.begin(), start.end()) << ","
          << *std::min_element(end.begin(), end.end()) << ","
          << *std::max_element(end.begin(), end.end()) << "," << median(work) << ","
          << median(staging) << "," << median(waiting) << "\n";
    }
  }

  void enqueue(cudaStream_t s) {
    if (persistent_) {
      cuda::persistent_step(
          static_cast<const cuda::StepPhase*>(phases_.data_ptr()), phase_count_, plan_,
          reinterpret_cast<unsigned*>(barrier_.data_ptr<int>()),
          trace_.defined() ? reinterpret_cast<unsigned long long*>(trace_.data_ptr<std::int64_t>())
                           : nullptr,
          elem_, s);
      argmax(s);
      return;
    }
    for (const Launches& l : layers_) {
      cuda::norm_gemv(l.qkv, elem_, sms_, pdl_, s);
      cuda::split_kv_attention(l.attention, elem_, pdl_, s);
      cuda::norm_gemv(l.o, elem_, sms_, pdl_, s);
      cuda::norm_gemv(l.up, elem_, sms_, pdl_, s);
      cuda::norm_gemv(l.down, elem_, sms_, pdl_, s);
    }
    cuda::norm_gemv(head_, elem_, sms_, pdl_, s);
    argmax(s);
  }

  void argmax(cudaStream_t s) {
    cuda::argmax_rows(logits_.data_ptr(), batch_, logits_.size(1), tokens_.data_ptr<std::int64_t>(),
                      reinterpret_cast<unsigned long long*>(keys_.data_ptr<std::int64_t>()), elem_,
                      s);
  }

  std::int64_t batch_;
  bool pdl_;
  int kernels_;
  int mma_from_;
  cuda::Elem elem_ = cuda::Elem::f32;
  int sms_ = 1;
  StepShapes shapes_;
  std::vector<Launches> layers_;
  cuda::GemvArgs head_;
  at::Tensor ids_, pos_, x_, xn_, q_, attn_, act_, logits_, tokens_, keys_;
  at::Tensor partial_o_, partial_ml_, counters_;
  bool persistent_ = false;
  cuda::StepPlan plan_;
  at::Tensor phases_, barrier_;
  int phase_count_ = 0;
  std::string note_, blocks_note_;
  std::vector<std::string> phase_names_;
  at::Tensor trace_;
  std::string trace_path_;
  at::cuda::CUDAGraph graph_;
};

}  // namespace

bool own_decode_supported(const ModelConfig& cfg, at::ScalarType dtype, std::int64_t batch,
                          std::string* why) {
  cuda::Elem e;
  if (!elem_of(dtype, &e)) {
    if (why)
      *why = std::string("own_cuda has kernels for float32, float16 and bfloat16, not ") +
             c10::toString(dtype);
    return false;
  }
  if (cfg.num_heads % cfg.num_kv_heads != 0) {
    if (why) *why = "own_cuda needs num_heads a multiple of num_key_value_heads";
    return false;
  }
  const int kernels = kernels_variant();
  if (kernels == 0) {
    if (why) *why = "own_cuda: MYCONV_OWN_CUDA_KERNELS must be 1, 2 or 3";
    return false;
  }
  // The tensor-core GEMV at every batch: its shared memory is the SIMT GEMV's and more.
  const StepShapes s =
      step_shapes(cfg, batch, static_cache_len(cfg.max_position_embeddings), kernels, 1, 1);
  for (const cuda::GemvArgs* a : {&s.qkv, &s.o, &s.up, &s.down, &s.head}) {
    const char* w = nullptr;
    if (!cuda::gemv_supported(*a, e, &w)) {
      if (why) *why = std::string("own_cuda: ") + w;
      return false;
    }
  }
  const char* w = nullptr;
  if (!cuda::attention_supported(s.attention, e, &w)) {
    if (why) *why = std::string("own_cuda: ") + w;
    return false;
  }
  return true;
}

std::unique_ptr<DecodeGraph> make_own_decode_graph(const Model& model, KvCache& cache,
                                                   std::string* why) {
  if (!model.device().is_cuda()) {
    if (why) *why = "own_cuda needs the model on a CUDA device";
    return nullptr;
  }
  std::string w;
  if (!own_decode_supported(model.config(), model.dtype(), cache.batch, &w)) {
    if (why) *why = w;
    return nullptr;
  }
  // The persistent step where it runs the case and is asked for or pays (kernels v3, the
  // layer-size rule), then the separate launches with
  // programmatic dependent launch where the driver captures it into a graph (and
  // MYCONV_OWN_CUDA_PDL is not 0), then plain launches. description() says which ran; where none
  // did, the reason names each try's error.
  int variant = kernels_variant();
  int mma_from = cuda::kMmaFromBatch;
  std::string note;
  if (variant == kAutoKernels) {
    const std::int64_t bytes = model.layers().empty() ? 0 : layer_weight_bytes(model);
    const bool large = bytes >= kLargeLayerBytes;
    const bool f32 = model.dtype() == at::kFloat;
    variant = large && f32 ? 3 : 2;
    if (large && !f32) mma_from = 1;
    if (variant == 2)
      note = " (not the persistent step: layers of " + std::to_string(bytes >> 20) + " MiB" +
             (large ? ", where the tensor-core GEMV is faster in 16 bits"
                    : ", under the 64 MiB where it pays") +
             "; MYCONV_OWN_CUDA_KERNELS=3 asks for it)";
  }
  if (const int asked = mma_from_asked()) mma_from = asked;
  const char* env = std::getenv("MYCONV_OWN_CUDA_PDL");
  const bool pdl = !env || std::string(env) != "0";
  std::string errors = pdl ? "" : "programmatic dependent launch off (MYCONV_OWN_CUDA_PDL=0); ";
  struct Try {
    bool pdl;
    int kernels;
    const char* name;
  };
  std::vector<Try> tries;
  if (variant == 3) tries.push_back({pdl, 3, "the persistent step"});
  if (pdl) tries.push_back({true, variant == 1 ? 1 : 2, "programmatic dependent launch"});
  tries.push_back({false, variant == 1 ? 1 : 2, "plain launches"});
  for (const Try& t : tries) {
    try {
      auto graph = std::make_unique<OwnDecodeGraph>(model, cache, t.pdl, t.kernels, mma_from);
      graph->add_note(note);
      return graph;
    } catch (const std::exception& e) {
      errors += std::string(t.name) + ": " + e.what() + "; ";
    }
    (void)cudaGetLastError();  // a launch error of one try is not the next one's
  }
  if (why) *why = "own_cuda: the decode step failed or its capture did: " + errors;
  return nullptr;
}

}  // namespace transformer
