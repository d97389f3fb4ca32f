// Element type <-> float in device code, and the rounding to the element type that an ATen op's
// output does: what the decode kernels (decode_kernels.cu, own_decode_kernels.cu,
// own_gemv_mma_kernels.cu, own_attention_kernels.cu) share.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "core/cuda/element.cuh"

namespace transformer::cuda {

// The conversions themselves are core/cuda/element.cuh's, under the decode kernels' short names.
template <typename T>
__device__ __forceinline__ float to_f(T v) {
  return bench::to_float(v);
}
template <typename T>
__device__ __forceinline__ T from_f(float v) {
  return bench::from_float<T>(v);
}
template <typename T>
__device__ __forceinline__ float round_to(float v) {
  return to_f(from_f<T>(v));
}

}  // namespace transformer::cuda
