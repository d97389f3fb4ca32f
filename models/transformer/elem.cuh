// Element type <-> float in device code, and the rounding to the element type that an ATen op's
// output does: what the decode kernels (decode_kernels.cu, own_decode_kernels.cu,
// own_gemv_mma_kernels.cu, own_attention_kernels.cu) share.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace transformer::cuda {

__device__ __forceinline__ float to_f(float v) {
  return v;
}
__device__ __forceinline__ float to_f(__half v) {
  return __half2float(v);
}
__device__ __forceinline__ float to_f(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <typename T>
__device__ T from_f(float v);
template <>
__device__ __forceinline__ float from_f<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_f<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <typename T>
__device__ __forceinline__ float round_to(float v) {
  return to_f(from_f<T>(v));
}

}  // namespace transformer::cuda
