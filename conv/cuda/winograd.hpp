// Variant 12 of im2col_gemm_cuda: Winograd F(2x2,3x3) for 3x3, stride-1 convolutions in FP32 on
// CUDA cores, nchw and nhwc (the algorithm and what it takes: conv/cuda/winograd_config.hpp).
//
// Sub-variants, both timed beside each other (and both by --variant search) until the GPU
// measurement picks one (plain 12 = 12.1):
//   12.1  four steps: the filter transform, the input transform (V in memory), the 16 GEMMs (the
//         conv SGEMM, with its split-K reduction where the grid is short; M in memory) and the
//         output transform;
//   12.2  two: the filter transform, then one kernel that transforms input patches into shared
//         memory, multiplies, and transforms its accumulators to the output (no V, no M).
// Life: the constructor (prepare, untimed) allocates the buffers (the workspace: U, and for 12.1
// V, M and split-K's partials) and uploads the inputs; compile() has nothing to do; run() enqueues
// the steps. The filter transform is part of every call, as variants 6 and 10 repack their
// weights in every call and as cuDNN transforms its filter in each call it is given: a call
// computes from the weights as given.
//
// Run (an H100/H200), beside cuDNN, on ResNet-50's fp32 3x3 stride-1 layers:
//   build/experiments/myconv --backends im2col_gemm_cuda,cudnn --variant 12.1 --dtypes fp32
//     --layout nchw,nhwc --shapes experiments/shapes/resnet50.txt
// (the layers variant 12 does not take are recorded as unsupported, with the reason).
#pragma once

#include <memory>

#include "conv/backend.hpp"

namespace conv {

// Variant 12's instance (winograd_unsupported_reason(p) empty), sub-variant sub (1 or 2; 0:
// winograd_sub_variant's choice):
// buffers allocated, inputs uploaded. Throws bench::Unsupported where the workspace does not fit
// in the device's free memory.
std::unique_ptr<Instance> make_winograd_instance(const Problem& p, const HostData& data, int sub);

}  // namespace conv
