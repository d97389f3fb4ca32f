// Launchers of variant 12's transform kernels (Winograd F(2x2,3x3), conv/cuda/winograd_config.hpp
// for the algorithm and the matrices' layouts; conv/cuda/winograd_kernels.cu for the kernels).
// Every launcher only enqueues on `stream` and checks the launch (CUDA_CHECK_LAST_LAUNCH). Tensors
// are FP32 device pointers; src, wei and dst in g's layout (nchw or nhwc, weights [OC][IC][3][3]
// or [OC][3][3][IC]).
#pragma once

#include <cuda_runtime_api.h>

#include "conv/cuda/winograd_config.hpp"

namespace conv {

// U[16][OC][IC] from the weights.
void launch_winograd_filter_transform(const WinogradGeometry& g, const float* wei, float* u,
                                      cudaStream_t stream);
// V[16][IC][P] from the input, the padding read as zeros.
void launch_winograd_input_transform(const WinogradGeometry& g, const float* src, float* v,
                                     cudaStream_t stream);
// The output from M[16][OC][P], each 2x2 tile cut at OH and OW.
void launch_winograd_output_transform(const WinogradGeometry& g, const float* m, float* dst,
                                      cudaStream_t stream);

// Sub-variant 12.2: the input transform, the 16 GEMMs (from U[16][OC][IC]) and the output
// transform in one kernel, no V or M in memory.
void launch_winograd_fused(const WinogradGeometry& g, const float* src, const float* u, float* dst,
                           cudaStream_t stream);

}  // namespace conv
