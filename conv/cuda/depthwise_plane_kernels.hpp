// Launcher of the nchw whole-plane depthwise kernel (conv/cuda/depthwise_plane_kernels.cu,
// sub-variant 8.4 of im2col_gemm_cuda) with the configuration of conv/cuda/depthwise_plane.hpp.
// Called by launch_depthwise (conv/cuda/depthwise_kernels.hpp) where the configuration names
// sub-variant 4.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "conv/cuda/depthwise_image.hpp"
#include "conv/cuda/depthwise_plane.hpp"
#include "conv/im2col_index.hpp"

namespace conv {

// Enqueues the kernel of c on `stream` and checks the launch. T = float, __half or
// __nv_bfloat16. Throws std::invalid_argument when c does not fit g or src / dst are not 16-byte
// aligned.
template <class T>
void launch_depthwise_plane(const Im2colGeometry& g, const DepthwisePlaneConfig& c, const T* src,
                            const T* wei, T* dst, cudaStream_t stream);

// cudaFuncGetAttributes of the kernel c selects for T, as "N registers, N B local, N B static
// shared".
template <class T>
std::string depthwise_plane_kernel_resources(const DepthwisePlaneConfig& c);

// The nhwc whole-image kernel (sub-variant 8.5, conv/cuda/depthwise_image.hpp): the same
// promises; src 16-byte aligned.
template <class T>
void launch_depthwise_image(const Im2colGeometry& g, const DepthwiseImageConfig& c, const T* src,
                            const T* wei, T* dst, cudaStream_t stream);
template <class T>
std::string depthwise_image_kernel_resources(const DepthwiseImageConfig& c);

}  // namespace conv
