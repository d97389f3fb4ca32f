// Launchers of the Hopper tensor-core convolution (variant 10 of im2col_gemm_cuda;
// conv/cuda/wgmma_conv.cu): wgmma (sm_90a) fed by the copy engine's tensor copies (TMA) through a
// warp-specialized pipeline. The plan and the problems it runs are in wgmma_conv_config.hpp.
// Every launcher only enqueues on `stream` and checks the launch.
#pragma once

#include <cuda.h>  // CUtensorMap
#include <cuda_runtime_api.h>

#include <string>

#include "conv/cuda/im2col_gemm_kernels.hpp"
#include "conv/cuda/wgmma_conv_config.hpp"
#include "conv/im2col_index.hpp"

namespace conv {

// Empty when the kernels can run on the current device (compute capability 9.0 and a build that
// holds their sm_90a code), else why not. Throws on CUDA errors.
std::string wgmma_conv_unusable_reason();

// The two tensor maps (copy-engine descriptors) of one case, encoded once for its buffers:
// `src` holds the nhwc input and `wei` the [OC][KH][KW][C] weights of the nhwc geometry r
// (wgmma_conv_unsupported_reason(r, ...) empty), in the storage type of `type`.
struct WgmmaConvMaps {
  CUtensorMap src;  // im2col mode: 128 pixels x one 128-byte k slice, 128-byte swizzle
  CUtensorMap wei;  // tiled: BN output channels x one 128-byte k slice, 128-byte swizzle
};
WgmmaConvMaps make_wgmma_conv_maps(const Im2colGeometry& r, MmaType type, const WgmmaConvPlan& plan,
                                   const void* src, const void* wei);

// The convolution of g (its output layout: g.nhwc) from the tensors `maps` describes, into dst in
// the storage type. With plan.splits > 1 the kernel writes FP32 partials to `partial`
// (wgmma_conv_partial_elements floats, split after split, each in dst's element order), which
// launch_mma_split_reduce (im2col_gemm_kernels.hpp, with MmaPlan::splits = plan.splits) then sums
// in split order into dst. tf32 with round_tf32: the kernel rounds the operands to nearest tf32
// in shared memory (tensors that no copy has rounded); without it they must come rounded.
std::size_t wgmma_conv_partial_elements(const Im2colGeometry& g, const WgmmaConvPlan& plan);
void launch_wgmma_conv(const Im2colGeometry& g, MmaType type, const WgmmaConvPlan& plan,
                       const WgmmaConvMaps& maps, bool round_tf32, void* dst, float* partial,
                       cudaStream_t stream);

// Registers, spills and shared memory of the kernel the plan selects, e.g. "168 registers, 0 B
// local, 197760 B dynamic shared".
std::string wgmma_conv_kernel_resources(MmaType type, const WgmmaConvPlan& plan);

}  // namespace conv
