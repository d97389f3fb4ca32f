// One transformer case through the core's case runner (core/runner.hpp): the instance is one
// generation (prefill, then output_len - 1 decode steps from the static cache, each step timed)
// or one training step; the runner's samples are the num_runs repetitions (min_iters = max_iters
// = num_runs). The check: the last decode step's logits against a full recompute (no cache) of
// the prompt and the generated tokens; for training, the loss against a forward without autograd.
// After the runner, the per-run step times become the suite's metrics (results/README.md): TTFT,
// decode per token (mean, median, p90), throughputs, bytes per decode step and their bandwidth
// (against the measured copy bandwidth where there is one), memory measured and predicted
// (memory.hpp).
// Never throws.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/runner.hpp"
#include "core/trace.hpp"
#include "models/transformer/generate.hpp"
#include "models/transformer/memory.hpp"
#include "models/transformer/model.hpp"
#include "models/transformer/problem.hpp"
#include "models/transformer/backend.hpp"

namespace transformer {

struct CaseSettings {
  Sampling sampling;
  int num_runs = 3;
  std::int64_t max_batch_input_product = 131072;
  std::uint64_t seed = 1;  // prompt ids (and training ids)
  // The device's measured copy bandwidth (read + write, GB/s; 0: not measured): the decode
  // step's bandwidth metrics are also given as a fraction of it.
  double copy_bandwidth_gbs = 0;
};

struct CaseOutput {
  bench::Result result;
  std::shared_ptr<bench::Trace> trace;
};

// A record with the case's identity: suite "transformer", implementation, device, problem,
// work, the model in params, the reproducing command (options.command_prefix, e.g.
// "mytransformer --model gpt2", then the case's own options).
bench::Result make_result(const std::string& impl, const std::string& device, const Problem& p,
                          const ModelConfig& cfg, const bench::CaseOptions& options);

// Runs one case. impl null: not built (skipped with why_missing). model null: the model could not
// be made for this device and dtype (failed with why_missing). Past max_batch_input_product:
// skipped with the reason. Out of memory: failed, reason "out of memory".
CaseOutput run_case(Model* model, const Backend* impl, const std::string& impl_name,
                    const std::string& device, const std::string& why_missing, const Problem& p,
                    const ModelConfig& cfg, const CaseSettings& settings,
                    bench::CaseOptions options);

// Peak memory: the caching allocator's peaks on a CUDA device (reset per case, after the cuBLAS
// workspaces earlier cases left are freed), the process's peak resident set (VmHWM, reset per
// case through /proc/self/clear_refs where the kernel allows it).
void reset_memory_peaks(at::Device device);
// The caching allocator's allocated bytes now (CUDA), -1 on the CPU.
std::int64_t allocated_bytes_now(at::Device device);
void add_memory_metrics(bench::Result& r, at::Device device);

// What the peak-memory prediction needs to know of how the case runs: the decode mode, the
// sampling, the attention LibTorch runs, and on CUDA LibTorch's cuBLAS workspace size.
MemoryContext memory_context(DecodeMode mode, const Sampling& sampling, at::Device device);
// The prediction beside the measured peaks (results/README.md): predicted_peak_bytes and its
// parts, extra.predicted_peak_at, and peak_vs_prediction = peak_allocated_bytes / predicted where
// the allocator measured a peak (CUDA; the CPU's allocator keeps no statistics).
void add_memory_prediction(bench::Result& r, const MemoryPrediction& m);
// One line for the console: the measured peak (CUDA) beside the prediction and its parts.
std::string memory_text(const bench::Result& r);
// Hands the caching allocator's free blocks back (after an out-of-memory case).
void release_cached_memory(at::Device device);

// Per case its times (a generation's: with the decode step's bandwidth, GB/s of its bytes and its
// weight bytes' fraction of the measured copy bandwidth; train: the step's), then memory: the
// allocator's peak (CUDA) beside the prediction from the config (memory.hpp).
void print_generation_figures(std::ostream& os, const std::vector<bench::Result>& results,
                              bool train);

}  // namespace transformer
