// The peak memory of one mytransformer case, predicted from the config and the problem (issue 13:
// "peak memory within 10% of the prediction from the config (weights + KV cache + activations)").
//
// What is predicted is the CUDA caching allocator's peak of ALLOCATED bytes during the case
// (metrics.peak_allocated_bytes), as a sum of named parts: the weights, the static KV cache, the
// weights' gradients (training), the activations at the case's worst point, and the cuBLAS
// workspaces LibTorch keeps per (handle, stream). The activations are counted by reading the code
// path (model.cpp, generate.cpp, bench.cpp's check) tensor by tensor: every tensor alive at each
// candidate point of the case, the largest point wins. memory.cpp says, point by point, what is
// counted and what is left out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/memory_fit.hpp"
#include "models/transformer/config.hpp"
#include "models/transformer/problem.hpp"

namespace transformer {

// How a case runs, where that changes what is alive.
struct MemoryContext {
  // libtorch_graph: the decode step is captured on a side stream (a second cuBLAS workspace, the
  // graph's own input and logits buffers).
  bool cuda_graph = false;
  // at::scaled_dot_product_attention (LibTorch >= 2): no T x L score matrix. false: the explicit
  // softmax(QK^T / sqrt(d) + mask) V of LibTorch 1.13 (scores in the dtype, softmax in float32).
  bool fused_attention = true;
  // LibTorch 1.x: mean()'s backward keeps its input (RMSNorm's float32 x^2 stays saved in
  // training); 2.x keeps only its sizes.
  bool mean_saves_input = false;
  bool cpu = false;       // the model on the CPU: the check's host copies share its memory
  bool sampling = false;  // temperature > 0: next_tokens' float32 copies of the logits
  bool top_p = false;     // sampling with top_p < 1: the sort and the cumulative sum too
  // Bytes LibTorch allocates per (cuBLAS handle, stream) that runs a matmul and keeps: the cuBLAS
  // workspace plus the cuBLASLt one (32 MiB + 1 MiB on an sm90 GPU with LibTorch 2.x defaults).
  // 0 on the CPU.
  std::int64_t blas_workspace_bytes = 0;
};

// One candidate point of a case: what is alive there besides the weights and the KV cache.
struct MemoryPoint {
  std::string name;  // e.g. "check recompute: MLP", "backward: log-softmax"
  std::int64_t activation_bytes = 0;
  std::int64_t gradient_bytes = 0;  // the weights' gradients alive at this point (training)
};

struct MemoryPrediction {
  std::int64_t weight_bytes = 0;      // parameter_count() x element size (a tied head once)
  std::int64_t kv_cache_bytes = 0;    // generate: the static cache (cfg.kv_cache_bytes)
  std::int64_t gradient_bytes = 0;    // train: the gradients alive at the peak (0 or the weights)
  std::int64_t activation_bytes = 0;  // every other tensor alive at the peak point
  std::int64_t workspace_bytes = 0;   // cuBLAS workspaces: handles x streams x their size
  std::string peak_at;                // the point the peak is at (MemoryPoint::name)
  std::int64_t total() const {
    return weight_bytes + kv_cache_bytes + gradient_bytes + activation_bytes + workspace_bytes;
  }
};

// Every candidate point of the case p on cfg, in the order the case reaches them.
std::vector<MemoryPoint> memory_points(const ModelConfig& cfg, const Problem& p,
                                       const MemoryContext& ctx);

// The peak: weights + KV cache + workspaces + the largest point of memory_points.
MemoryPrediction predict_peak_memory(const ModelConfig& cfg, const Problem& p,
                                     const MemoryContext& ctx);

// What one case needs (core/memory_fit.hpp), for the check before any case runs: the predicted
// peak, on the device (CUDA) or the host (CPU); on CUDA also the host's float32 copy of the
// largest random weight (the embedding), drawn there first. A case whose rough size (the
// prediction's largest products, in double) is past 2^52 bytes gets that rough size instead of the
// prediction, whose int64 sums it could overflow.
bench::MemoryNeed memory_need(const ModelConfig& cfg, const Problem& p, const MemoryContext& ctx);

// The cuBLAS handle-stream pairs a case runs matmuls on: 1 for a generation in eager mode (the
// current stream), 2 with a CUDA graph (its capture's side stream) and for training (the autograd
// engine's device thread has its own cuBLAS handle).
int blas_workspace_count(const Problem& p, const MemoryContext& ctx);

}  // namespace transformer
