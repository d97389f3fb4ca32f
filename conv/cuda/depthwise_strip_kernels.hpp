// Launchers of the depthwise strip kernels (conv/cuda/depthwise_strip_kernels.cu, sub-variant
// 8.2 of im2col_gemm_cuda): 3x3 depthwise at stride 1 or 2, multiplier 1, nchw and nhwc, with
// the configuration of conv/cuda/depthwise_strip_config.hpp. Called by launch_depthwise
// (conv/cuda/depthwise_kernels.hpp) where the configuration names sub-variant 2.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "conv/cuda/depthwise_pipe.hpp"
#include "conv/cuda/depthwise_strip_config.hpp"
#include "conv/im2col_index.hpp"

namespace conv {

// Enqueues the strip kernel of s on `stream` and checks the launch. T = float, __half or
// __nv_bfloat16. Throws std::invalid_argument when s does not fit g, or a tensor is not aligned
// to the kernel's vectors (16 bytes in nhwc, the load and store vectors in nchw).
template <class T>
void launch_depthwise_strip(const Im2colGeometry& g, const DepthwiseStripConfig& s, const T* src,
                            const T* wei, T* dst, cudaStream_t stream);

// cudaFuncGetAttributes of the kernel s selects for T, as "N registers, N B local, N B static
// shared".
template <class T>
std::string depthwise_strip_kernel_resources(const Im2colGeometry& g,
                                             const DepthwiseStripConfig& s);

// The nhwc pipelined kernel (sub-variant 8.3, conv/cuda/depthwise_pipe.hpp): the same promises,
// 16-byte aligned tensors.
template <class T>
void launch_depthwise_pipe(const Im2colGeometry& g, const DepthwisePipeConfig& c, const T* src,
                           const T* wei, T* dst, cudaStream_t stream);
template <class T>
std::string depthwise_pipe_kernel_resources(const DepthwisePipeConfig& c);

}  // namespace conv
