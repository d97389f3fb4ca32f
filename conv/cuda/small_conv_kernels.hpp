// Launchers of the small-OC direct convolution kernel (conv/cuda/small_conv_kernels.cu): each
// thread computes every output channel of its group's oc tile for a few output pixels in
// registers, for convolutions with few output channels per group, where a tiled GEMM's rows go
// unused. The configuration (conv/cuda/small_conv_config.hpp) is chosen from the geometry and the
// GPU's SM count.
// Every launcher only enqueues on `stream` and checks the launch (CUDA_CHECK_LAST_LAUNCH).
// Tensors are device pointers in the problem's layout (nchw or nhwc, g.nhwc; see
// conv/im2col_index.hpp). Every output element is written exactly once; the result does not
// depend on the configuration's timing (fixed summation order: deterministic).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <string>

#include "conv/cuda/small_conv_config.hpp"
#include "conv/im2col_index.hpp"

namespace conv {

// Runs the convolution of g with the configuration chosen for the current device
// (small_conv_config(g, its SM count)). T = float, __half or __nv_bfloat16: storage type of
// src, wei and dst; products and sums in FP32, the output rounded to T once. Throws
// std::invalid_argument when !small_conv_supported(g); CUDA errors through CUDA_CHECK.
template <class T>
void launch_small_conv(const Im2colGeometry& g, const T* src, const T* wei, T* dst,
                       cudaStream_t stream);

// The same with an explicit configuration (from small_conv_config(g, ..., choice)); throws
// std::invalid_argument when c does not fit g or names no instantiated kernel.
template <class T>
void launch_small_conv(const Im2colGeometry& g, const SmallConvConfig& c, const T* src,
                       const T* wei, T* dst, cudaStream_t stream);

// SM count of the current device (cached per device).
int small_conv_sm_count();

// small_conv_config_name() of the configuration launch_small_conv(g, ...) uses on the current
// device, e.g. "8 oc x 4 px per thread, kw 7 unrolled, split-K 8, block 32x8, grid 237x1, 28
// units in 1 chunk".
std::string small_conv_name(const Im2colGeometry& g);

// Registers per thread, spilled bytes and static shared memory of the kernel c selects for T
// (cudaFuncGetAttributes), e.g. "64 registers, 0 B local, 2048 B static shared".
template <class T>
std::string small_conv_kernel_resources(const SmallConvConfig& c);

}  // namespace conv
