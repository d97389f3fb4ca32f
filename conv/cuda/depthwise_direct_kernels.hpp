// Launcher of the nhwc direct depthwise kernel (conv/cuda/depthwise_direct_kernels.cu,
// sub-variant 8.6 of im2col_gemm_cuda) with the configuration of conv/cuda/depthwise_direct.hpp.
// Called by launch_depthwise (conv/cuda/depthwise_kernels.hpp) where the configuration names
// sub-variant 6.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "conv/cuda/depthwise_direct.hpp"
#include "conv/im2col_index.hpp"

namespace conv {

// Enqueues the kernel of c on `stream` and checks the launch. T = float, __half or
// __nv_bfloat16. Throws std::invalid_argument when c does not fit g or src / dst are not aligned
// to c.vec elements.
template <class T>
void launch_depthwise_direct(const Im2colGeometry& g, const DepthwiseDirectConfig& c, const T* src,
                             const T* wei, T* dst, cudaStream_t stream);

// cudaFuncGetAttributes of the kernel c selects for T, as "N registers, N B local, N B static
// shared".
template <class T>
std::string depthwise_direct_kernel_resources(const DepthwiseDirectConfig& c);

}  // namespace conv
