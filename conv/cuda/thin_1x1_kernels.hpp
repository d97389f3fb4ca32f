// Variant 13's kernels: the streaming 1x1 GEMM of conv/cuda/thin_1x1_config.hpp (its plan and
// what it takes) on mma.sync, tf32, fp16 and bf16 (sm_80 and newer; elsewhere the mma.sync
// variants' device question, mma_kernels_unusable_reason, says why not).
#pragma once

#include <cuda_runtime_api.h>

#include "conv/cuda/im2col_gemm_kernels.hpp"  // MmaType
#include "conv/cuda/thin_1x1_config.hpp"

namespace conv {

// Blocks of the kernel for `chunks` k chunks and `groups` 16-row groups a warp in `type` that one
// SM keeps resident (the occupancy calculator, with `smem_bytes` of dynamic shared memory).
// Throws on CUDA errors.
int thin_1x1_blocks_per_sm(MmaType type, int chunks, int groups, std::size_t smem_bytes);

// Enqueues dst[m][n] = sum_k src[m][k] wei[n][k] (storage type of `type`, rows contiguous) with
// plan t on stream: one kernel. Throws on a launch error.
void launch_thin_1x1(MmaType type, const Thin1x1Plan& t, const void* src, const void* wei,
                     void* dst, cudaStream_t stream);

}  // namespace conv
