// Variant 11 of im2col_gemm_cuda: 1x1 convolutions on the Hopper GEMM engine, fp16 and bf16, nchw
// and nhwc, the tensors read as they lie (the mapping and what it takes:
// conv/cuda/gemm_1x1_config.hpp; the engine: core/cuda/gemm/).
//
// Life: the constructor (prepare, untimed) plans (gemm_1x1_plan for the device's SM count;
// MYCONV_GEMM_1X1_PLAN=BN:S forces the tile width and split-K count, and
// MYCONV_GEMM_1X1_REDUCE=kernel sums the splits in the GEMM's kernel, for experiments),
// allocates the buffers and split-K's workspace (its tile counters zeroed where the kernel sums),
// and uploads the inputs; compile() has nothing to do; run() only enqueues the engine's kernels
// (one, or two with split-K summed by a second kernel).
//
// Run (an H100/H200), beside cuDNN, on the 1x1 layers of ResNet-50 and MobileNet-v2:
//   build/experiments/myconv --shapes experiments/shapes/resnet50.txt --backends
//   im2col_gemm_cuda,cudnn --variant 11 --dtypes fp16,bf16 --layout nchw,nhwc
#pragma once

#include <memory>
#include <string>

#include "conv/backend.hpp"

namespace conv {

// Empty where variant 11 runs p on this device: gemm_1x1_unsupported_reason(p), then the engine's
// device question (compute capability 9.0 and the sm_90a build). Never throws.
std::string gemm_1x1_unusable_reason(const Problem& p);

// Variant 11's instance (gemm_1x1_unusable_reason(p) empty): buffers allocated, inputs uploaded.
std::unique_ptr<Instance> make_gemm_1x1_instance(const Problem& p, const HostData& data);

}  // namespace conv
