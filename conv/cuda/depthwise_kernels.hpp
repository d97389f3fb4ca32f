// Launchers of the depthwise convolution kernels (conv/cuda/depthwise_kernels.cu, variant 8 of
// im2col_gemm_cuda): groups == IC with a channel multiplier OC/G of 1..kDepthwiseMaxMultiplier,
// any kernel size, stride, padding and dilation, nchw and nhwc. The configuration
// (conv/cuda/depthwise_config.hpp) is chosen from the geometry, the storage type and the GPU's
// SM count.
// Every launcher only enqueues on `stream` and checks the launch (CUDA_CHECK_LAST_LAUNCH).
// Tensors are device pointers in the problem's layout (g.nhwc; see conv/im2col_index.hpp); the
// weights are [OC][KH][KW]. Every output element is written exactly once, by one thread, with a
// fixed summation order (deterministic).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <string>

#include "conv/cuda/depthwise_config.hpp"
#include "conv/im2col_index.hpp"

namespace conv {

// Runs the depthwise convolution of g with the configuration chosen for the current device
// (depthwise_config(g, sizeof(T), its SM count)). T = float (fp32 and tf32 storage), __half or
// __nv_bfloat16: the storage type of src, wei and dst; products and sums in FP32, the output
// rounded to T once. Throws std::invalid_argument when !depthwise_supported(g); CUDA errors
// through CUDA_CHECK.
template <class T>
void launch_depthwise(const Im2colGeometry& g, const T* src, const T* wei, T* dst,
                      cudaStream_t stream);

// The same with an explicit configuration (from depthwise_config(g, sizeof(T), ..., choice));
// throws std::invalid_argument when c does not fit g.
template <class T>
void launch_depthwise(const Im2colGeometry& g, const DepthwiseConfig& c, const T* src, const T* wei,
                      T* dst, cudaStream_t stream);

// depthwise_config_name() of the configuration launch_depthwise(g, ...) uses on the current
// device for elem_bytes-byte storage.
std::string depthwise_name(const Im2colGeometry& g, int elem_bytes);

// Registers per thread, spilled bytes and static shared memory of the kernel c selects for g and T
// (cudaFuncGetAttributes), e.g. "40 registers, 0 B local, 0 B static shared".
template <class T>
std::string depthwise_kernel_resources(const Im2colGeometry& g, const DepthwiseConfig& c);

}  // namespace conv
