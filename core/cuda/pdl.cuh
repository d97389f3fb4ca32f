// Programmatic dependent launch (PDL, sm_90): a kernel launched with programmatic stream
// serialization may start while the kernel before it on the stream ends, once every block of
// that one has called launch_dependents() or exited; its wait_for_previous() returns once the
// kernels before it are complete and their writes visible. A kernel that touches no global
// memory before wait_for_previous() keeps the stream's order of the data, and its launch and
// prologue (barriers, descriptors) overlap the tail of the kernel before it, as in a model's
// layers or a benchmark's back-to-back calls. Both are no-ops before sm_90 and where the kernel
// was launched without the attribute. Users: conv's variants 10, 11 and 13 and the GEMM engine
// (conv/cuda/, core/cuda/gemm/), and mytransformer's decode kernels
// (models/transformer/cuda/own_decode_device.cuh).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "core/cuda/cuda_check.hpp"

namespace bench {

#ifdef __CUDACC__
__device__ __forceinline__ void wait_for_previous() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// kernel<<<grid, block, shared, s>>>(args...), with programmatic stream serialization where pdl
// is set (the caller asks only on sm_90 devices).
template <typename... Params, typename... Args>
void launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared, bool pdl,
                cudaStream_t s, Args... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = s;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = pdl ? 1 : 0;
  CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}
#endif

}  // namespace bench
