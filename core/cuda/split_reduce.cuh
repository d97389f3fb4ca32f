// Split-K's second pass over a whole output: the body of the split-K reduce kernels of every suite
// (conv/cuda/im2col_gemm_mma.cu, ops/cuda/matmul.cu). Included only by .cu files.
#pragma once

#include <cstdint>

#include "core/cuda/mma.cuh"

namespace bench {

// split_reduce_quad for every q of `elements`, grid-stride: one thread per 4 outputs, converted
// to T's storage at dst.
template <MmaDtype T>
__device__ __forceinline__ void split_reduce(const float* __restrict__ partial, int splits,
                                             std::int64_t elements, void* __restrict__ dst) {
  const std::int64_t quads = (elements + 3) / 4;
  for (std::int64_t q = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; q < quads;
       q += std::int64_t(gridDim.x) * blockDim.x)
    split_reduce_quad<T>(partial, splits, elements, static_cast<unsigned char*>(dst), q);
}

}  // namespace bench
