#include "models/transformer/generate.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <limits>
#include <mutex>
#include <numeric>

#include "core/dtype.hpp"
#include "core/error.hpp"
#include "core/printers.hpp"
#include "core/trace.hpp"
#include "models/transformer/problem.hpp"
#if MYCONV_HAVE_TORCH_CUDA
#include "models/transformer/cuda/decode_cuda.hpp"
#endif

namespace transformer {

#if MYCONV_HAVE_TORCH_CUDA
// generation_cuda.cpp: CUDA events on the current stream.
std::unique_ptr<StepClock> make_cuda_step_clock(int max_marks);
#endif

at::Tensor next_tokens(const at::Tensor& logits, const Sampling& s) {
#if MYCONV_HAVE_TORCH_CUDA
  // Our argmax (decode_kernels.cu) spreads a row over many blocks: ATen's one-block reduction
  // took 15 us a step over GPT-2's vocabulary on the H100 (CUPTI trace of a graph decode).
  if (s.greedy() && logits.is_cuda() && logits.dim() == 2) return fused_argmax(logits.contiguous());
#endif
  if (s.greedy()) return logits.argmax(-1);
  // transformers' sampling: float32 logits, temperature, TopPLogitsWarper, softmax, multinomial.
  at::Tensor scores = logits.to(at::kFloat) / s.temperature;
  if (s.top_p < 1.0) {
    const auto sorted = scores.sort(-1, /*descending=*/false);
    const at::Tensor& sorted_scores = std::get<0>(sorted);
    const at::Tensor& sorted_index = std::get<1>(sorted);
    at::Tensor remove = sorted_scores.softmax(-1).cumsum(-1) <= (1.0 - s.top_p);
    remove.narrow(-1, remove.size(-1) - 1, 1).fill_(false);  // keep at least one token
    const at::Tensor to_remove = remove.scatter(1, sorted_index, remove);
    scores = scores.masked_fill(to_remove, -std::numeric_limits<double>::infinity());
  }
  return at::multinomial(scores.softmax(-1), 1).squeeze(1);
}

namespace {

class HostStepClock final : public StepClock {
 public:
  void start() override {
    marks_.clear();
    start_ = Clock::now();
  }
  void mark() override { marks_.push_back(Clock::now()); }
  std::vector<double> read_ms() override {
    std::vector<double> ms;
    auto prev = start_;
    for (const auto& m : marks_) {
      ms.push_back(std::chrono::duration<double, std::milli>(m - prev).count());
      prev = m;
    }
    return ms;
  }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
  std::vector<Clock::time_point> marks_;
};

void seed_default_generator(at::Device device, std::uint64_t seed) {
  at::Generator gen = at::globalContext().defaultGenerator(device);
  const std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_current_seed(seed);
}

}  // namespace

std::unique_ptr<StepClock> make_step_clock(at::Device device, int max_marks) {
#if MYCONV_HAVE_TORCH_CUDA
  if (device.is_cuda()) return make_cuda_step_clock(max_marks);
#endif
  BENCH_CHECK(!device.is_cuda(), "this build has no CUDA LibTorch");
  (void)max_marks;
  return std::make_unique<HostStepClock>();
}

bool decode_graph_built(std::string* why) {
#if MYCONV_HAVE_TORCH_CUDA
  (void)why;
  return true;
#else
  if (why) *why = "CUDA graphs need a CUDA build of LibTorch (this one is CPU-only)";
  return false;
#endif
}

double GenerationTimes::decode_total_ms() const {
  return std::accumulate(decode_ms.begin(), decode_ms.end(), 0.0);
}

Generator::Generator(const Model& model, std::int64_t batch, std::int64_t input_len,
                     std::int64_t output_len, const Sampling& sampling, DecodeMode mode,
                     std::uint64_t prompt_seed, DecodeCapture capture)
    : model_(model),
      batch_(batch),
      input_len_(input_len),
      output_len_(output_len),
      sampling_(sampling),
      mode_(mode),
      capture_(std::move(capture)) {
  BENCH_CHECK(batch >= 1 && input_len >= 1 && output_len >= 1,
              "batch, input and output lengths must be positive");
  const c10::NoGradGuard no_grad;
  at::Generator gen = at::detail::createCPUGenerator(prompt_seed);
  prompt_ = at::randint(model.config().vocab_size, {batch, input_len}, gen,
                        at::TensorOptions().dtype(at::kLong))
                .to(model.device());
  const auto ids = at::TensorOptions().dtype(at::kLong).device(model.device());
  generated_ = at::zeros({batch, output_len}, ids);
  pos_ = at::zeros({1}, ids);
  cache_ = model.make_cache(batch, static_cache_len(input_len + output_len));
  clock_ = make_step_clock(model.device(), static_cast<int>(output_len));
}

void Generator::prepare() {
  if (mode_ != DecodeMode::graph && mode_ != DecodeMode::own) return;
  const c10::NoGradGuard no_grad;
  std::string why;
  if (!capture_) {
    if (!decode_graph_built(&why)) throw bench::Unsupported(why);
    throw bench::Unsupported("no capture of the decode step was given (its backend gives one)");
  }
  if (!model_.device().is_cuda())
    throw bench::Unsupported("CUDA graphs need the model on a CUDA device");
  graph_ = capture_(model_, cache_, &why);
  if (!graph_) throw bench::Unsupported(why);
}

at::Tensor Generator::decode(const at::Tensor& ids, std::int64_t pos) {
  switch (mode_) {
    case DecodeMode::eager:
      return model_.forward(ids.view({batch_, 1}), pos, &cache_, true).select(1, 0);
    case DecodeMode::static_shape:
      pos_.fill_(pos);
      return model_.decode_step_static(ids.view({batch_, 1}), pos_, cache_);
    case DecodeMode::graph:
    case DecodeMode::own:
      return graph_->step(ids, pos);
  }
  return {};
}

namespace {

// The open host range of a traced call's phase (prefill, then each decode step), closed when
// the next begins or the call ends, also by an exception; nothing without a tracer.
class Phase {
 public:
  Phase(bench::Tracer* tracer, const char* name) : tracer_(tracer) {
    if (tracer_) tracer_->push(name);
  }
  ~Phase() {
    if (tracer_) tracer_->pop();
  }
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;
  void next(const char* name) {
    if (!tracer_) return;
    tracer_->pop();
    tracer_->push(name);
  }

 private:
  bench::Tracer* tracer_;
};

}  // namespace

void Generator::run() {
  const c10::NoGradGuard no_grad;
  if (!sampling_.greedy()) seed_default_generator(model_.device(), sampling_.seed);
  // In a traced call (--trace-dir, --debug) the prefill and each decode step are host ranges, so
  // the trace's device work splits by phase (scripts/analysis/transformer_ops.py); timed calls
  // have no tracer here and pay one pointer test per step.
  Phase phase(bench::traced_call_tracer(), "prefill");
  clock_->start();
  at::Tensor logits = model_.forward(prompt_, 0, &cache_, true).select(1, 0);
  at::Tensor next = next_tokens(logits, sampling_);
  generated_.select(1, 0).copy_(next);
  clock_->mark();  // time to first token
  for (std::int64_t i = 1; i < output_len_; ++i) {
    phase.next("decode step");
    logits = decode(next, input_len_ + i - 1);
    const at::Tensor in_graph =
        graph_ && sampling_.greedy() ? graph_->greedy_tokens() : at::Tensor();
    next = in_graph.defined() ? in_graph : next_tokens(logits, sampling_);
    generated_.select(1, i).copy_(next);
    clock_->mark();
  }
  last_logits_ = logits;
}

GenerationTimes Generator::finish() {
  const std::vector<double> ms = clock_->read_ms();
  GenerationTimes t;
  if (ms.empty()) return t;
  t.ttft_ms = ms.front();
  t.decode_ms.assign(ms.begin() + 1, ms.end());
  return t;
}

void Generator::poison() {
  const c10::NoGradGuard no_grad;
  if (last_logits_.defined())
    last_logits_.fill_(std::numeric_limits<double>::quiet_NaN());
  else
    last_logits_ =
        at::full({batch_, model_.config().vocab_size}, std::numeric_limits<double>::quiet_NaN(),
                 at::TensorOptions().dtype(model_.dtype()).device(model_.device()));
}

at::Tensor recompute_last_logits(const Model& model, const at::Tensor& prompt,
                                 const at::Tensor& generated, std::int64_t generated_count) {
  const c10::NoGradGuard no_grad;
  const at::Tensor seq = at::cat({prompt, generated.narrow(1, 0, generated_count)}, 1);
  return model.forward(seq, 0, nullptr, true).select(1, 0);
}

TrainStep::TrainStep(Model& model, std::int64_t batch, std::int64_t seq_len, std::uint64_t seed)
    : model_(model), params_(model.parameters()) {
  BENCH_CHECK(seq_len >= 2, "training needs sequences of 2 tokens at least");
  for (auto& p : params_) p.requires_grad_(true);
  at::Generator gen = at::detail::createCPUGenerator(seed);
  ids_ = at::randint(model.config().vocab_size, {batch, seq_len}, gen,
                     at::TensorOptions().dtype(at::kLong))
             .to(model.device());
  clock_ = make_step_clock(model.device(), 3);
}

// The last step's gradients go with the step: the next case starts from the weights alone.
TrainStep::~TrainStep() {
  for (auto& p : params_) p.mutable_grad() = at::Tensor();
}

namespace {

// transformers' causal-LM loss: float32 logits, labels shifted by one, mean over the tokens.
at::Tensor causal_lm_loss(const at::Tensor& logits, const at::Tensor& ids) {
  const std::int64_t t = ids.size(1), v = logits.size(-1);
  return at::cross_entropy_loss(logits.narrow(1, 0, t - 1).to(at::kFloat).reshape({-1, v}),
                                ids.narrow(1, 1, t - 1).reshape({-1}));
}

}  // namespace

void TrainStep::run() {
  for (auto& p : params_) p.mutable_grad() = at::Tensor();
  clock_->start();
  const at::Tensor logits = model_.forward(ids_, 0, nullptr, false);
  clock_->mark();
  loss_ = causal_lm_loss(logits, ids_);
  clock_->mark();
  loss_.backward();
  clock_->mark();
}

TrainTimes TrainStep::finish() {
  const std::vector<double> ms = clock_->read_ms();
  TrainTimes t;
  if (ms.size() == 3) {
    t.forward_ms = ms[0];
    t.loss_ms = ms[1];
    t.backward_ms = ms[2];
  }
  return t;
}

void TrainStep::poison() {
  loss_ = at::Tensor();
}

double TrainStep::loss() const {
  return loss_.defined() ? loss_.item<double>() : std::numeric_limits<double>::quiet_NaN();
}

double TrainStep::reference_loss() const {
  const c10::NoGradGuard no_grad;
  return causal_lm_loss(model_.forward(ids_, 0, nullptr, false), ids_).item<double>();
}

// ---- --dump-logits ----------------------------------------------------------------------------

void dump_logits(const std::string& path, const Model& model, const Problem& p, std::uint64_t seed,
                 const DecodeCapture& graph_capture, const DecodeCapture& own_capture) {
  const c10::NoGradGuard no_grad;
  Sampling greedy;
  Generator gen(model, p.mb, p.in, p.out, greedy, DecodeMode::eager, seed);
  gen.run();
  gen.finish();
  const at::Tensor full = model.forward(gen.prompt(), 0, nullptr, false).to(at::kFloat).cpu();
  auto rows = [](const at::Tensor& t) {
    nlohmann::json out = nlohmann::json::array();
    const at::Tensor c = t.contiguous();
    for (std::int64_t i = 0; i < c.size(0); ++i) {
      const at::Tensor row = c.select(0, i).contiguous();
      if (row.scalar_type() == at::kLong)
        out.push_back(std::vector<std::int64_t>(row.data_ptr<std::int64_t>(),
                                                row.data_ptr<std::int64_t>() + row.numel()));
      else
        out.push_back(
            std::vector<float>(row.data_ptr<float>(), row.data_ptr<float>() + row.numel()));
    }
    return out;
  };
  nlohmann::json j;
  j["model"] = model.config().name;
  j["dtype"] = bench::to_string(p.dtype);
  j["device"] = model.device().str();
  j["attention"] = Model::attention_kind();
  j["prompt"] = rows(gen.prompt().cpu());
  j["prefill_logits_row0"] = rows(full.select(0, 0));
  j["prefill_last_logits"] = rows(full.select(1, p.in - 1));
  j["generated"] = rows(gen.generated().cpu());
  if (graph_capture && model.device().is_cuda()) {
    Generator graph(model, p.mb, p.in, p.out, greedy, DecodeMode::graph, seed, graph_capture);
    graph.prepare();
    graph.run();
    graph.finish();
    j["generated_graph"] = rows(graph.generated().cpu());
    // own_cuda's tokens where its kernels run this model and dtype ("generated_own").
    Generator own(model, p.mb, p.in, p.out, greedy, DecodeMode::own, seed, own_capture);
    try {
      own.prepare();
      own.run();
      own.finish();
      j["generated_own"] = rows(own.generated().cpu());
    } catch (const bench::Unsupported& e) {
      j["generated_own_unsupported"] = e.what();
    }
  }
  bench::write_file_atomic(path, j.dump());
}

}  // namespace transformer
