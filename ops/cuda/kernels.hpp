// Our op kernels as families the own_cuda backend (own_cuda.cpp) chooses from: one family per .cu
// file (elementwise.cu: element ops and activations; reduction.cu; normalization.cu: softmax,
// layernorm, rmsnorm; memory.cu: copy, transpose, permute, concat; matmul.cu). Each family has
// numbered variants side by side (llm.c's dev/cuda habit): variants(p) lists those that run p, the
// best first (the backend's default); --variant picks another.
//
// Storage: fp32 and tf32 tensors are float, fp16 __half, bf16 __nv_bfloat16; every kernel computes
// in float (tf32: the matmul's tensor-core mode) and rounds once to the output's type. Tensors are
// row-major and contiguous, in the order and shapes of ops::HostData (ops/data.hpp) and
// ops::Problem (ops/problem.hpp), whose float64 reference (ops/ref_ops.cpp) is the definition.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include "ops/problem.hpp"

namespace ops::cuda {

struct OpArgs {
  const Problem* p = nullptr;
  std::vector<const void*> inputs;  // device pointers, in the order of HostData::inputs
  void* output = nullptr;           // p->output_elements() elements of the dtype's storage
  void* workspace = nullptr;        // workspace_bytes(p, variant) bytes (null when 0)
  cudaStream_t stream = nullptr;
};

struct KernelFamily {
  // The variants that run p, best first; empty when the family does not take p.
  std::vector<int> (*variants)(const Problem& p);
  // Scratch memory a variant needs (partial sums of a two-pass reduction), 0 for none.
  std::size_t (*workspace_bytes)(const Problem& p, int variant);
  // Enqueues the op on args.stream (no synchronization, no allocation: capturable in a CUDA
  // graph); checks the launch with CUDA_CHECK_LAST_LAUNCH.
  void (*launch)(const OpArgs& args, int variant);
  // What the variant does, one line, for the result's algorithm field, e.g.
  // "v2 row reduction: a warp per row, 128-bit loads".
  std::string (*describe)(const Problem& p, int variant);
};

const KernelFamily& elementwise_family();    // element ops (with broadcast) and activations
const KernelFamily& reduction_family();      // sum, mean, max over any axes
const KernelFamily& normalization_family();  // softmax, layernorm, rmsnorm over the last axis
const KernelFamily& memory_family();         // copy, transpose, permute, concat
const KernelFamily& matmul_family();         // matmul and batched matmul, every dtype

}  // namespace ops::cuda
