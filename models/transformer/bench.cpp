#include "models/transformer/bench.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <new>
#include <sstream>

#include <c10/util/Exception.h>
#include <torch/version.h>

#include "core/case_result.hpp"
#include "core/compare.hpp"
#include "core/error.hpp"
#include "core/printers.hpp"
#include "core/stats.hpp"
#include "core/torch/libtorch_common.hpp"

namespace transformer {

#if MYCONV_HAVE_TORCH_CUDA
// cuda/generation_cuda.cpp: the CUDA caching allocator's statistics, LibTorch's cuBLAS workspaces.
void cuda_reset_peak(int device);
void cuda_peak(int device, std::int64_t* allocated, std::int64_t* reserved);
void cuda_empty_cache();
std::int64_t cuda_allocated_now(int device);
void cuda_clear_blas_workspaces();
std::int64_t cuda_blas_workspace_bytes();
#endif

namespace {

#define MYCONV_TF_WHERE "LibTorch " TORCH_VERSION

// ATen's errors as the case's status: out of memory -> std::bad_alloc (the runner's "out of
// memory"), a kernel missing for the dtype -> unsupported, anything else a failure (first line).
template <typename F>
void guarded(F&& f) {
  try {
    f();
  } catch (const c10::OutOfMemoryError&) {
    throw std::bad_alloc();
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    if (what.find("out of memory") != std::string::npos ||
        what.find("not enough memory") != std::string::npos)
      throw std::bad_alloc();
    bench::libtorch::rethrow(e, MYCONV_TF_WHERE);
  }
}

// Step times of every generation or training step, in the order the runner made them: the
// first (checked) run, the warm-up runs, the samples, the run of the second check.
struct RunLog {
  std::vector<GenerationTimes> generations;
  std::vector<TrainTimes> train_steps;
};

std::string mode_text(DecodeMode m) {
  switch (m) {
    case DecodeMode::eager:
      return "eager";
    case DecodeMode::static_shape:
      return "static";
    case DecodeMode::graph:
      return "cuda_graph";
    case DecodeMode::own:
      return "own_cuda_graph";
  }
  return "?";
}

// The cached and recomputed paths round differently (other GEMM shapes, K/V read back from the
// cache in the model's dtype), more so through many layers in 16-bit types; a difference beyond
// this is a cache bug, not rounding.
bench::Tolerance cache_tolerance(bench::DataType dt, double ref_rms) {
  const double rel = dt == bench::DataType::fp32   ? 1e-3
                     : dt == bench::DataType::fp16 ? 5e-2
                                                   : 1.5e-1;
  return {rel * std::max(ref_rms, 1e-6), rel};
}

class GenerationInstance final : public bench::Instance {
 public:
  GenerationInstance(const Model& model, const Problem& p, const CaseSettings& s,
                     const Backend& backend, std::shared_ptr<RunLog> log)
      : model_(model), p_(p), log_(std::move(log)) {
    guarded([&] {
      gen_ = std::make_unique<Generator>(model, p.mb, p.in, p.out, s.sampling, backend.mode(),
                                         s.seed, backend.decode_capture());
    });
    sampling_ = s.sampling;
  }
  void compile() override {
    guarded([&] { gen_->prepare(); });
  }
  void poison_output() override {
    guarded([&] { gen_->poison(); });
  }
  void run() override {
    guarded([&] { gen_->run(); });
    pending_ = true;
  }
  void sync() override {
    if (!pending_) return;
    pending_ = false;
    guarded([&] { log_->generations.push_back(gen_->finish()); });
  }
  std::string algorithm() const override {
    if (gen_->mode() == DecodeMode::own)
      return "decode steps of our own kernels (fused norm + GEMV, split-KV attention) replayed "
             "from one CUDA graph over a static KV cache; prefill: LibTorch, attention: " +
             Model::attention_kind();
    return std::string(gen_->mode() == DecodeMode::graph ? "decode steps replayed from a CUDA graph"
                                                         : "eager decode steps") +
           " over a static KV cache; attention: " + Model::attention_kind();
  }
  std::optional<std::int64_t> workspace_bytes() const override { return gen_->kv_cache_bytes(); }
  nlohmann::ordered_json extra() const override {
    nlohmann::ordered_json e;
    e["decode_mode"] = mode_text(gen_->mode());
    if (const std::string d = gen_->decode_step_description(); !d.empty()) e["decode_step"] = d;
    e["attention"] = Model::attention_kind();
    e["kv_cache_positions"] = p_.cache_len();
    e["sampling"] = sampling_.greedy()
                        ? nlohmann::ordered_json("greedy")
                        : nlohmann::ordered_json(
                              {{"temperature", sampling_.temperature}, {"top_p", sampling_.top_p}});
    e["prompt"] = "random ids in [0, vocab), a different sequence per row";
    e["workspace_bytes_is"] = "the KV cache";
    e["check"] =
        "the last decode step's logits against a full recompute (no cache) of the prompt and the "
        "generated tokens, in the same dtype";
    return e;
  }

  Generator& generator() { return *gen_; }
  const Model& model() const { return model_; }

 private:
  const Model& model_;
  Problem p_;
  std::shared_ptr<RunLog> log_;
  std::unique_ptr<Generator> gen_;
  Sampling sampling_;
  bool pending_ = false;
};

class TrainInstance final : public bench::Instance {
 public:
  TrainInstance(Model& model, const Problem& p, const CaseSettings& s, std::shared_ptr<RunLog> log)
      : log_(std::move(log)) {
    guarded([&] { step_ = std::make_unique<TrainStep>(model, p.mb, p.in, s.seed); });
  }
  void compile() override {}
  void poison_output() override { step_->poison(); }
  void run() override {
    guarded([&] { step_->run(); });
    pending_ = true;
  }
  void sync() override {
    if (!pending_) return;
    pending_ = false;
    guarded([&] { log_->train_steps.push_back(step_->finish()); });
  }
  std::string algorithm() const override {
    return "forward, float32 cross-entropy, backward (LibTorch autograd); attention: " +
           Model::attention_kind();
  }
  nlohmann::ordered_json extra() const override {
    return {{"attention", Model::attention_kind()},
            {"check", "the loss against a forward without autograd of the same ids"}};
  }
  TrainStep& step() { return *step_; }

 private:
  std::shared_ptr<RunLog> log_;
  std::unique_ptr<TrainStep> step_;
  bool pending_ = false;
};

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

double std_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / double(v.size() - 1));
}

// The runs the runner timed: after the first checked run and the warm-up, as many as it sampled.
template <typename T>
std::vector<T> sampled_runs(const std::vector<T>& all, const bench::Result& r, int warmup) {
  if (!r.total_time_ms) return {};
  const std::size_t n = r.total_time_ms->samples, first = 1 + static_cast<std::size_t>(warmup);
  if (all.size() < first + n) return {};
  return std::vector<T>(all.begin() + first, all.begin() + first + n);
}

void fill_generation_metrics(bench::Result& r, const Problem& p,
                             const std::vector<GenerationTimes>& runs) {
  if (runs.empty()) return;
  std::vector<double> ttft, decode_total, total, steps;
  nlohmann::ordered_json step_runs = nlohmann::ordered_json::array();
  for (const auto& t : runs) {
    ttft.push_back(t.ttft_ms);
    decode_total.push_back(t.decode_total_ms());
    total.push_back(t.ttft_ms + t.decode_total_ms());
    steps.insert(steps.end(), t.decode_ms.begin(), t.decode_ms.end());
    step_runs.push_back(t.decode_ms);
  }
  auto& m = r.metrics;
  const double b = double(p.mb);
  m["num_runs"] = runs.size();
  m["ttft_ms"] = mean_of(ttft);
  m["ttft_ms_std"] = std_of(ttft);
  m["decoded_tokens_per_row"] = p.out - 1;
  if (!steps.empty()) {
    std::vector<double> sorted = steps;
    std::sort(sorted.begin(), sorted.end());
    m["decode_ms_per_token_mean"] = mean_of(steps);
    m["decode_ms_per_token_median"] = bench::quantile_sorted(sorted, 0.5);
    m["decode_ms_per_token_p90"] = bench::quantile_sorted(sorted, 0.9);
    m["decode_ms_per_token_std"] = std_of(steps);
  }
  m["decode_total_ms"] = mean_of(decode_total);
  m["decode_total_ms_std"] = std_of(decode_total);
  m["total_latency_ms"] = mean_of(total);
  m["total_latency_ms_std"] = std_of(total);
  if (mean_of(ttft) > 0) m["prefill_tokens_per_s"] = b * double(p.in) / (mean_of(ttft) / 1e3);
  if (p.out > 1 && mean_of(decode_total) > 0)
    m["decode_tokens_per_s"] = b * double(p.out - 1) / (mean_of(decode_total) / 1e3);
  if (mean_of(total) > 0) m["e2e_tokens_per_s"] = b * double(p.out) / (mean_of(total) / 1e3);
  r.extra["ttft_ms_runs"] = ttft;
  r.extra["decode_step_ms_runs"] = step_runs;
}

// The bytes a decode step moves at the least (results/README.md): every weight read once, the
// K/V of the positions it attends to read (step i of the out - 1 attends to in + i positions:
// in + out / 2 on average), its own K/V written; over the mean step time, and against the
// device's measured copy bandwidth where the run measured one.
void fill_bandwidth_metrics(bench::Result& r, const Problem& p, const ModelConfig& cfg,
                            std::int64_t weight_bytes, double copy_gbs) {
  auto& m = r.metrics;
  if (p.task != Task::generate || p.out < 2 || !m.contains("decode_ms_per_token_mean")) return;
  const double step_s = m["decode_ms_per_token_mean"].get<double>() / 1e3;
  if (!(step_s > 0)) return;
  const double per_position = double(cfg.kv_cache_bytes(p.mb, 1, bench::storage_bytes(p.dtype)));
  const double weights = double(weight_bytes);
  const double kv_read = per_position * (double(p.in) + double(p.out) / 2.0);
  const double kv_write = per_position;
  const double total = weights + kv_read + kv_write;
  m["decode_weight_bytes_per_step"] = weights;
  m["decode_kv_read_bytes_per_step"] = kv_read;
  m["decode_kv_write_bytes_per_step"] = kv_write;
  m["decode_bytes_per_step"] = total;
  m["decode_bandwidth_gbs"] = total / step_s / 1e9;
  m["decode_weight_bandwidth_gbs"] = weights / step_s / 1e9;
  if (copy_gbs > 0) {
    m["copy_bandwidth_gbs"] = copy_gbs;
    m["decode_bandwidth_vs_copy"] = total / step_s / 1e9 / copy_gbs;
    m["decode_weight_bandwidth_vs_copy"] = weights / step_s / 1e9 / copy_gbs;
  }
}

void fill_train_metrics(bench::Result& r, const Problem& p, const std::vector<TrainTimes>& runs) {
  if (runs.empty()) return;
  std::vector<double> fwd, loss, bwd, total;
  for (const auto& t : runs) {
    fwd.push_back(t.forward_ms);
    loss.push_back(t.loss_ms);
    bwd.push_back(t.backward_ms);
    total.push_back(t.total_ms());
  }
  auto& m = r.metrics;
  m["num_runs"] = runs.size();
  m["forward_ms"] = mean_of(fwd);
  m["forward_ms_std"] = std_of(fwd);
  m["loss_ms"] = mean_of(loss);
  m["loss_ms_std"] = std_of(loss);
  m["backward_ms"] = mean_of(bwd);
  m["backward_ms_std"] = std_of(bwd);
  m["train_step_ms"] = mean_of(total);
  m["train_step_ms_std"] = std_of(total);
  if (mean_of(total) > 0)
    m["train_tokens_per_s"] = double(p.mb) * double(p.in) / (mean_of(total) / 1e3);
}

bench::CheckOutcome check_generation(GenerationInstance& inst, const Problem& p, bench::Result& r) {
  Generator& g = inst.generator();
  at::Tensor got, ref;
  guarded([&] {
    got = g.last_logits().to(at::kFloat).cpu().contiguous();
    ref = recompute_last_logits(inst.model(), g.prompt(), g.generated(), p.out - 1)
              .to(at::kDouble)
              .cpu()
              .contiguous();
  });
  const auto n = static_cast<std::size_t>(ref.numel());
  if (static_cast<std::size_t>(got.numel()) != n) {
    r.shape_ok = false;
    return {false, "the last logits have " + std::to_string(got.numel()) + " elements, expected " +
                       std::to_string(n)};
  }
  r.shape_ok = true;
  const double* refp = ref.data_ptr<double>();
  r.correctness =
      bench::compare(got.data_ptr<float>(), refp, n, cache_tolerance(p.dtype, bench::rms(refp, n)));
  return {r.correctness->passed, r.correctness->message};
}

bench::CheckOutcome check_train(TrainInstance& inst, bench::Result& r) {
  double got = 0, want = 0;
  guarded([&] {
    got = inst.step().loss();
    want = inst.step().reference_loss();
  });
  const float got_f = static_cast<float>(got);
  r.shape_ok = true;
  r.correctness = bench::compare(&got_f, &want, 1, {1e-3 * std::max(1.0, std::abs(want)), 1e-2});
  r.extra["loss"] = got;
  return {r.correctness->passed, r.correctness->message};
}

std::int64_t read_vm_hwm_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream s(line.substr(6));
      std::int64_t kb = 0;
      s >> kb;
      return kb * 1024;
    }
  return -1;
}

}  // namespace

bench::Result make_result(const std::string& impl, const std::string& device, const Problem& p,
                          const ModelConfig& cfg, const bench::CaseOptions& options) {
  bench::Result r = bench::case_identity("transformer", impl, device, p.str(), cfg.name, p.dtype);
  r.flop = p.flops(cfg);
  r.params = p.params(cfg);
  const int elem = bench::storage_bytes(p.dtype);
  // Fewest bytes: every weight read once per forward pass (prefill and each decode step) and the
  // KV cache written once.
  const double weights = double(cfg.parameter_count()) * elem;
  r.bytes = p.task == Task::train
                ? 3 * weights
                : weights * double(p.out) + double(cfg.kv_cache_bytes(p.mb, p.cache_len(), elem));
  std::ostringstream cmd;
  cmd << (options.command_prefix.empty() ? "mytransformer --model " + cfg.name
                                         : options.command_prefix)
      << " --device " << device << " --backend " << impl << " --dtype " << r.dtype
      << " --batch-size " << p.mb << " --input-length " << p.in;
  if (p.task == Task::generate) cmd << " --output-length " << p.out;
  r.command = cmd.str();
  return r;
}

void reset_memory_peaks(at::Device device) {
#if MYCONV_HAVE_TORCH_CUDA
  if (device.is_cuda()) {
    cuda_clear_blas_workspaces();
    cuda_reset_peak(device.has_index() ? device.index() : 0);
  }
#else
  (void)device;
#endif
  // "5" resets the peak resident set (VmHWM) of the process (Linux 4.0+); where it is refused
  // the figure stays the process's peak so far (the metric's note says so).
  std::ofstream clear("/proc/self/clear_refs");
  if (clear) clear << "5";
}

std::int64_t allocated_bytes_now(at::Device device) {
#if MYCONV_HAVE_TORCH_CUDA
  if (device.is_cuda()) return cuda_allocated_now(device.has_index() ? device.index() : 0);
#else
  (void)device;
#endif
  return -1;
}

void add_memory_metrics(bench::Result& r, at::Device device) {
#if MYCONV_HAVE_TORCH_CUDA
  if (device.is_cuda()) {
    std::int64_t allocated = 0, reserved = 0;
    cuda_peak(device.has_index() ? device.index() : 0, &allocated, &reserved);
    r.metrics["peak_allocated_bytes"] = allocated;
    r.metrics["peak_reserved_bytes"] = reserved;
  }
#else
  (void)device;
#endif
  const std::int64_t hwm = read_vm_hwm_bytes();
  if (hwm >= 0) r.metrics["host_peak_rss_bytes"] = hwm;
}

MemoryContext memory_context(DecodeMode mode, const Sampling& sampling, at::Device device) {
  MemoryContext c;
  c.cuda_graph = mode == DecodeMode::graph || mode == DecodeMode::own;
  c.fused_attention = Model::attention_kind() == "scaled_dot_product_attention";
  c.mean_saves_input = TORCH_VERSION_MAJOR < 2;
  c.cpu = !device.is_cuda();
  c.sampling = !sampling.greedy();
  c.top_p = c.sampling && sampling.top_p < 1.0;
#if MYCONV_HAVE_TORCH_CUDA
  if (device.is_cuda()) c.blas_workspace_bytes = cuda_blas_workspace_bytes();
#else
  (void)device;
#endif
  return c;
}

void add_memory_prediction(bench::Result& r, const MemoryPrediction& m) {
  auto& x = r.metrics;
  x["predicted_peak_bytes"] = m.total();
  x["predicted_weight_bytes"] = m.weight_bytes;
  if (m.kv_cache_bytes) x["predicted_kv_cache_bytes"] = m.kv_cache_bytes;
  if (m.gradient_bytes) x["predicted_gradient_bytes"] = m.gradient_bytes;
  x["predicted_activation_bytes"] = m.activation_bytes;
  x["predicted_workspace_bytes"] = m.workspace_bytes;
  if (x.contains("peak_allocated_bytes") && m.total() > 0)
    x["peak_vs_prediction"] = x["peak_allocated_bytes"].get<double>() / double(m.total());
  r.extra["predicted_peak_at"] = m.peak_at;
}

std::string memory_text(const bench::Result& r) {
  const auto& m = r.metrics;
  if (!m.contains("predicted_peak_bytes")) return "";
  auto mib = [&](const char* key) {
    return bench::format_fixed(m.value(key, 0.0) / double(1 << 20), 1);
  };
  std::string s;
  if (m.contains("peak_allocated_bytes"))
    s = "peak " + mib("peak_allocated_bytes") + " MiB allocated, ";
  s += "predicted " + mib("predicted_peak_bytes") + " MiB (weights ";
  s += mib("predicted_weight_bytes");
  if (m.contains("predicted_kv_cache_bytes")) s += " + KV cache " + mib("predicted_kv_cache_bytes");
  if (m.contains("predicted_gradient_bytes"))
    s += " + gradients " + mib("predicted_gradient_bytes");
  s += " + activations " + mib("predicted_activation_bytes");
  if (m.value("predicted_workspace_bytes", 0.0) > 0)
    s += " + cuBLAS workspaces " + mib("predicted_workspace_bytes");
  s += ", at " + r.extra.value("predicted_peak_at", std::string("?")) + ")";
  if (m.contains("peak_vs_prediction"))
    s += ", peak/predicted " + bench::format_fixed(m["peak_vs_prediction"].get<double>(), 3);
  return s;
}

void release_cached_memory(at::Device device) {
#if MYCONV_HAVE_TORCH_CUDA
  if (device.is_cuda()) cuda_empty_cache();
#else
  (void)device;
#endif
}

CaseOutput run_case(Model* model, const Backend* impl, const std::string& impl_name,
                    const std::string& device, const std::string& why_missing, const Problem& p,
                    const ModelConfig& cfg, const CaseSettings& settings,
                    bench::CaseOptions options) {
  CaseOutput out;
  const bench::Result identity = make_result(impl_name, device, p, cfg, options);
  if (p.mb * p.in > settings.max_batch_input_product) {
    out.result = identity;
    out.result.status = bench::Status::skipped;
    out.result.reason = "batch x input length = " + std::to_string(p.mb * p.in) +
                        " exceeds max_batch_input_product " +
                        std::to_string(settings.max_batch_input_product);
    return out;
  }
  // The runner's samples are the num_runs repetitions, exactly.
  options.measure.min_iters = options.measure.max_iters = settings.num_runs;
  options.measure.min_time_ms = 0;
  options.measure.max_time_ms = 1e300;
  options.measure.target_cv = -1;
  options.timing = bench::TimingMode::real;

  auto log = std::make_shared<RunLog>();
  bench::CaseHooks hooks;
  hooks.built = impl != nullptr;
  hooks.why_missing = why_missing;
  if (impl) {
    hooks.available = [impl, model, &why_missing]() -> Support {
      if (const Support a = impl->available(); !a.ok) return a;
      if (!model) return Support::no(why_missing);
      return Support::yes();
    };
    hooks.check_support = [impl, &p, &cfg] { return impl->check_support(p, cfg); };
    hooks.prepare = [&, model]() -> std::unique_ptr<bench::Instance> {
      if (p.task == Task::train) return std::make_unique<TrainInstance>(*model, p, settings, log);
      return std::make_unique<GenerationInstance>(*model, p, settings, *impl, log);
    };
    hooks.check = [&p](bench::Instance& base, bench::Result& r, bool) {
      if (p.task == Task::train) return check_train(static_cast<TrainInstance&>(base), r);
      return check_generation(static_cast<GenerationInstance&>(base), p, r);
    };
  }
  const at::Device dev = model ? model->device() : at::Device(at::kCPU);
  std::int64_t allocated_at_start = -1;
  if (model) {
    reset_memory_peaks(dev);
    allocated_at_start = allocated_bytes_now(dev);
  }
  bench::CaseRun run = bench::run_case(identity, hooks, options);
  out.result = std::move(run.result);
  out.trace = std::move(run.trace);
  bench::Result& r = out.result;
  if (r.status == bench::Status::passed) {
    const int warmup = options.measure.warmup_iters;
    if (p.task == Task::train)
      fill_train_metrics(r, p, sampled_runs(log->train_steps, r, warmup));
    else
      fill_generation_metrics(r, p, sampled_runs(log->generations, r, warmup));
    const int elem = bench::storage_bytes(p.dtype);
    if (p.task == Task::generate)
      r.metrics["kv_cache_bytes"] = cfg.kv_cache_bytes(p.mb, p.cache_len(), elem);
    r.metrics["weight_bytes"] = model->weight_bytes();
    fill_bandwidth_metrics(r, p, cfg, model->weight_bytes(),
                           dev.is_cuda() ? settings.copy_bandwidth_gbs : 0);
    if (allocated_at_start >= 0) r.metrics["allocated_at_start_bytes"] = allocated_at_start;
    add_memory_metrics(r, dev);
    add_memory_prediction(
        r, predict_peak_memory(cfg, p, memory_context(impl->mode(), settings.sampling, dev)));
  }
  if (r.status == bench::Status::failed && r.reason == "out of memory" && model)
    release_cached_memory(dev);
  return out;
}

void print_generation_figures(std::ostream& os, const std::vector<bench::Result>& results,
                              bool train) {
  using Row = std::vector<std::string>;
  auto join = [](Row a, const Row& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  const Row times = train ? Row{"forward ms", "backward ms", "step ms", "tokens/s"}
                          : Row{"TTFT ms",   "ms/token (median)", "decode tok/s",
                                "e2e tok/s", "decode GB/s",       "weights/copy"};
  bench::Table t(join(join({"model", "backend", "dtype", "case", "status"}, times),
                      {"peak MiB", "predicted MiB", "peak/pred"}));
  for (const auto& r : results) {
    const auto& m = r.metrics;
    auto num = [&](const char* key, int digits, double scale = 1) {
      return m.contains(key) ? bench::format_fixed(m[key].get<double>() / scale, digits)
                             : std::string("-");
    };
    const Row figures = train ? Row{num("forward_ms", 2), num("backward_ms", 2),
                                    num("train_step_ms", 2), num("train_tokens_per_s", 1)}
                              : Row{num("ttft_ms", 2),
                                    num("decode_ms_per_token_median", 3),
                                    num("decode_tokens_per_s", 1),
                                    num("e2e_tokens_per_s", 1),
                                    num("decode_bandwidth_gbs", 1),
                                    num("decode_weight_bandwidth_vs_copy", 3)};
    const double mib = double(1 << 20);
    t.add_row(
        join(join({r.name, r.backend, r.dtype, r.problem, bench::to_string(r.status)}, figures),
             {num("peak_allocated_bytes", 1, mib), num("predicted_peak_bytes", 1, mib),
              num("peak_vs_prediction", 3)}));
  }
  t.print(os);
}

}  // namespace transformer

// The macro is this file's own (a unity build puts several files in one translation unit).
#undef MYCONV_TF_WHERE
