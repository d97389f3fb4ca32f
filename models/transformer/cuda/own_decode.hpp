// own_cuda: the decode step as our own kernels (own_decode_kernels.cu) over the model's weights
// and the static KV cache, captured into one CUDA graph and replayed. Per layer five launches:
// norm + QKV GEMV + bias + RoPE + KV-cache write; split-KV attention with its merge; o-proj GEMV
// + bias + residual; norm + gate/up GEMV + SwiGLU (GPT-2: up + bias + gelu_new); down GEMV + bias
// + residual (the first layer's first launch also gathers the embedding); then final norm +
// lm_head GEMV into the logits and argmax_rows's greedy tokens. Where a normalized GEMV runs on
// tensor cores, a small kernel before it makes its input rows (the norm; the embedding). Prefill
// stays on LibTorch (Model::forward). The kernels are launched with programmatic dependent launch
// where the graph capture takes it, plain otherwise or with the environment's MYCONV_OWN_CUDA_PDL=0
// (an A/B of the launch mode); the record's extra.decode_step says which ran. The GEMVs run on
// tensor cores in fp16 and bf16 from batch 4 on, and at every batch where a layer's weights are at
// least 64 MiB (MYCONV_OWN_CUDA_MMA_FROM=N asks for batch N on); in float32, where a layer's
// weights are at least 64 MiB and the batch is 1 to 3, the step is instead one persistent kernel
// (own_step.hpp, kernels v3); MYCONV_OWN_CUDA_KERNELS=3, 2 or 1 asks for one. Built with a CUDA
// LibTorch only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <ATen/ATen.h>

#include "models/transformer/backend.hpp"
#include "models/transformer/config.hpp"
#include "models/transformer/generate.hpp"
#include "models/transformer/model.hpp"

namespace transformer {

// Whether own_cuda's kernels run cfg in dtype at batch rows (why not: a one-line reason).
bool own_decode_supported(const ModelConfig& cfg, at::ScalarType dtype, std::int64_t batch,
                          std::string* why);

// The step captured over cache (the model on a CUDA device); null with *why where it cannot be.
std::unique_ptr<DecodeGraph> make_own_decode_graph(const Model& model, KvCache& cache,
                                                   std::string* why);

// own_cuda as a backend of the suite (own_cuda.cpp): decode mode own, the capture above, and
// own_decode_supported's limits beside the suite's.
std::unique_ptr<Backend> make_own_cuda_backend();

}  // namespace transformer
