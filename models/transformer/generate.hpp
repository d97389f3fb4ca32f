// Generation over a static KV cache: prefill (the prompt's forward plus the first token sampled:
// time to first token) and then one decode step per further token from the cache, each step
// timed on its own (CUDA events on the GPU, the host clock on the CPU) without synchronizing in
// between. Prefill is never re-run to time decode. Also the training step (forward, loss,
// backward, each phase timed) of --task train.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>  // at::Tensor, ScalarType, Device; the .cpp files include ATen/ATen.h

#include "models/transformer/model.hpp"

namespace transformer {

struct Problem;  // models/transformer/problem.hpp

// Greedy when temperature <= 0; else logits / temperature, top-p filtered as transformers'
// TopPLogitsWarper does, and one multinomial draw, from the device's default generator seeded
// with seed at the start of every generation (so every run draws the same tokens).
struct Sampling {
  double temperature = 0;
  double top_p = 1.0;
  std::uint64_t seed = 1;
  bool greedy() const { return temperature <= 0; }
};

// The next token of every row, [B] int64, from logits [B, V].
at::Tensor next_tokens(const at::Tensor& logits, const Sampling& s);

// Marks on a timeline: start(), then mark() after each step; read_ms() (after the work is
// complete) gives the time of each step, from start to the first mark, then mark to mark.
class StepClock {
 public:
  virtual ~StepClock() = default;
  virtual void start() = 0;
  virtual void mark() = 0;
  virtual std::vector<double> read_ms() = 0;
};

// The host's steady clock (CPU work is synchronous), or CUDA events on the current stream.
std::unique_ptr<StepClock> make_step_clock(at::Device device, int max_marks);

// How decode steps run: eager (forward over the filled cache prefix), static (the fixed-shape
// step, run eagerly: what a graph would replay; the tests compare it on the CPU), graph (the
// static step captured once into a CUDA graph and replayed) or own (our own kernels' step,
// own_decode.hpp, captured into one CUDA graph).
enum class DecodeMode { eager, static_shape, graph, own };

// A decode step replayed from a CUDA graph captured over a static cache.
class DecodeGraph {
 public:
  virtual ~DecodeGraph() = default;
  // Logits [B, V] after feeding ids [B] at position pos.
  virtual at::Tensor step(const at::Tensor& ids, std::int64_t pos) = 0;
  // The greedy tokens [B] of the last step's logits where the graph computes them (own_cuda's
  // argmax is in its graph), else undefined.
  virtual at::Tensor greedy_tokens() { return {}; }
  // What the captured step is, where the graph says more than its mode (own_cuda: its launches).
  virtual std::string description() const { return ""; }
};

// A backend's capture of its decode step over a static cache (the model on a CUDA device): the
// graph, or null with *why. libtorch_graph's (baselines/transformer/) captures
// model.decode_step_static; own_cuda's (cuda/own_decode.hpp) our own kernels' step.
using DecodeCapture =
    std::function<std::unique_ptr<DecodeGraph>(const Model&, KvCache&, std::string*)>;
// Whether this build can capture CUDA graphs (a CUDA LibTorch), and why not.
bool decode_graph_built(std::string* why);

struct GenerationTimes {
  double ttft_ms = 0;             // prefill + first token
  std::vector<double> decode_ms;  // one per decode step (output_len - 1 of them)
  double decode_total_ms() const;
};

class Generator {
 public:
  // A prompt of batch rows x input_len random ids in [0, vocab) (drawn from prompt_seed, a
  // different sequence per row) and a cache of input_len + output_len positions. capture: the
  // backend's (graph and own modes).
  Generator(const Model& model, std::int64_t batch, std::int64_t input_len, std::int64_t output_len,
            const Sampling& sampling, DecodeMode mode, std::uint64_t prompt_seed,
            DecodeCapture capture = {});
  // Graph and own modes: capture the decode step (throw bench::Unsupported when they cannot, or
  // when no capture was given).
  void prepare();
  // One generation: enqueues prefill and output_len - 1 decode steps with the clock's marks.
  void run();
  // Waits for the generation and reads its times.
  GenerationTimes finish();
  // Overwrites the last logits with NaN (the runner's poisoned output).
  void poison();

  const at::Tensor& prompt() const { return prompt_; }            // [B, input_len] int64
  const at::Tensor& generated() const { return generated_; }      // [B, output_len] int64
  const at::Tensor& last_logits() const { return last_logits_; }  // [B, V] of the last step
  std::int64_t kv_cache_bytes() const { return cache_.bytes(); }
  DecodeMode mode() const { return mode_; }
  // The captured step's description() (empty before prepare() or without a graph).
  std::string decode_step_description() const { return graph_ ? graph_->description() : ""; }

 private:
  at::Tensor decode(const at::Tensor& ids, std::int64_t pos);

  const Model& model_;
  std::int64_t batch_, input_len_, output_len_;
  Sampling sampling_;
  DecodeMode mode_;
  DecodeCapture capture_;
  KvCache cache_;
  at::Tensor prompt_, generated_, last_logits_, pos_;
  std::unique_ptr<DecodeGraph> graph_;
  std::unique_ptr<StepClock> clock_;
};

// Logits [B, V] at the last position of a full recompute (no cache) of prompt + the first
// `generated_count` generated tokens: what the cached decode must equal.
at::Tensor recompute_last_logits(const Model& model, const at::Tensor& prompt,
                                 const at::Tensor& generated, std::int64_t generated_count);

struct TrainTimes {
  double forward_ms = 0, loss_ms = 0, backward_ms = 0;
  double total_ms() const { return forward_ms + loss_ms + backward_ms; }
};

// One training step over batch x seq_len random ids: forward (full logits), next-token
// cross-entropy in float32 (transformers' shift), backward into the weights' gradients (cleared
// before each step, and freed with the step). Makes the model's weights require gradients.
class TrainStep {
 public:
  TrainStep(Model& model, std::int64_t batch, std::int64_t seq_len, std::uint64_t seed);
  ~TrainStep();
  TrainStep(const TrainStep&) = delete;
  TrainStep& operator=(const TrainStep&) = delete;
  void run();
  TrainTimes finish();
  void poison();
  double loss() const;  // of the last step (synchronizes)
  // Cross-entropy of the same ids without autograd: what loss() must equal.
  double reference_loss() const;

 private:
  Model& model_;
  std::vector<at::Tensor> params_;
  at::Tensor ids_, loss_;
  std::unique_ptr<StepClock> clock_;
};

// mytransformer's --dump-logits: one greedy generation of p with libtorch_eager, written as JSON
// to path: the prompt, the prefill logits (every position of the first row, the last position of
// every row) and the generated tokens; where CUDA graphs can be captured, the tokens of the same
// generation through libtorch_graph's decode step (graph: its capture; "generated_graph"; its
// decode is written apart from the eager forward) and through own_cuda's (own: its capture;
// "generated_own"). Empty captures: not built. scripts/references/hf_agreement.py compares them
// with transformers.
void dump_logits(const std::string& path, const Model& model, const Problem& p, std::uint64_t seed,
                 const DecodeCapture& graph, const DecodeCapture& own);

}  // namespace transformer
