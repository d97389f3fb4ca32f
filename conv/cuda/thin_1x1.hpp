// Variant 13 of im2col_gemm_cuda: nhwc 1x1 layers as one streaming GEMM kernel on mma.sync, tf32,
// fp16 and bf16, the input read once straight into registers (the design and what it takes:
// conv/cuda/thin_1x1_config.hpp; the kernel: conv/cuda/thin_1x1_kernels.cu).
//
// Life: the constructor (prepare, untimed) plans (the occupancy calculator's resident blocks),
// allocates the buffers and uploads the inputs; compile() has nothing to do; run() only enqueues
// the one kernel.
//
// Run (an sm_80+ GPU), beside cuDNN, on MobileNet-v2's layers:
//   build/experiments/myconv --shapes experiments/shapes/mobilenet_v2.txt --backends
//   im2col_gemm_cuda,cudnn --variant 13 --dtypes tf32,fp16,bf16 --layout nhwc
#pragma once

#include <memory>

#include "conv/backend.hpp"

namespace conv {

// Variant 13's instance (variant_support(p, Variant::thin_1x1) ok: thin_1x1_unsupported_reason(p)
// empty on a device where the mma.sync kernels run): buffers allocated, inputs uploaded.
std::unique_ptr<Instance> make_thin_1x1_instance(const Problem& p, const HostData& data);

}  // namespace conv
