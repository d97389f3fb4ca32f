// The nhwc direct depthwise kernel (sub-variant 8.6 of im2col_gemm_cuda): a thread per channel
// vector and item of R x P outputs, its window read from global memory through L1 a row at a
// time, the taps from shared memory. Configuration, index math and the per-item sums are
// conv/cuda/depthwise_direct.hpp (its reasons there).
#include "conv/cuda/depthwise_direct_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "conv/cuda/depthwise_io.cuh"
#include "core/cuda/cuda_check.hpp"

namespace conv {
namespace {

// B: 0 bounds the threads only (ptxas then keeps about 64 registers), 2 asks for 2 blocks per SM
// (up to 128 registers: the window's loads hoisted ahead of the sums).
template <class T, int S, int R, int P, int E, int B>
__global__ void __launch_bounds__(kDepthwiseDirectThreads, B)
    depthwise_direct_kernel(const Im2colGeometry g, const DepthwiseDirectConfig c,
                            const T* __restrict__ src, const T* __restrict__ wei,
                            T* __restrict__ dst) {
  extern __shared__ float4 direct_smem[];
  float* const taps = reinterpret_cast<float*>(direct_smem);  // [tap][W * E]
  const int tid = int(threadIdx.x);
  const DepthwiseDirectThread t = depthwise_direct_thread(c, int(blockIdx.x), tid);
  const int block_channels = c.words * E;
  const int ch0 = (t.cv - t.cv_local) * E;
  for (int i = tid; i < kDepthwiseDirectTaps * block_channels; i += int(blockDim.x)) {
    const int lc = i / kDepthwiseDirectTaps, tap = i % kDepthwiseDirectTaps;
    const int ch = ch0 + lc;
    taps[tap * block_channels + lc] =
        ch < g.c ? depthwise_io::load1(wei + std::int64_t(ch) * kDepthwiseDirectTaps + tap) : 0.0f;
  }
  __syncthreads();
  if (t.cv >= c.channel_vectors || t.item >= c.items) return;

  const int oy0 = t.item / c.strips * R, ox0 = (t.item % c.strips) * P;
  const T* const img = src + std::int64_t(t.n) * g.h * g.w * g.c + t.cv * E;
  const auto in = [&](int iy, int ix, float(&x)[E]) {
    depthwise_io::load_vec<T, E>(img + (iy * g.w + ix) * g.c, x);
  };
  const float* const my_taps = taps + t.cv_local * E;
  const auto tap = [&](int k, float(&w)[E]) {
    depthwise_io::load_smem<E>(my_taps + k * block_channels, w);
  };
  float acc[R][P][E];
  depthwise_direct_outputs<S, R, P, E>(g, in, tap, oy0, ox0, acc);
  T* const out =
      dst + (std::int64_t(t.n) * g.oh * g.ow + std::int64_t(oy0) * g.ow + ox0) * g.c + t.cv * E;
#pragma unroll
  for (int q = 0; q < R; ++q)
#pragma unroll
    for (int p = 0; p < P; ++p)
      if (oy0 + q < g.oh && ox0 + p < g.ow)
        depthwise_io::store_rounded<T, E>(out + (q * g.ow + p) * g.c, acc[q][p]);
}

template <class T>
using DirectKernelFn = void (*)(Im2colGeometry, DepthwiseDirectConfig, const T*, const T*, T*);

// Items of 1 x 2, 1 x 4 and 2 x 2 outputs (2 x 4 takes more than 128 registers at stride 2).
template <class T, int S, int R, int E>
DirectKernelFn<T> direct_kernel_by_shape(int pixels, int min_blocks) {
  if constexpr (R == 2) {
    if constexpr (E == 8)
      return depthwise_direct_kernel<T, S, 2, 2, E, 0>;
    else
      return min_blocks == 2 ? depthwise_direct_kernel<T, S, 2, 2, E, 2>
                             : depthwise_direct_kernel<T, S, 2, 2, E, 0>;
  } else if constexpr (E == 8) {
    return pixels == 2 ? depthwise_direct_kernel<T, S, R, 2, E, 0>
                       : depthwise_direct_kernel<T, S, R, 4, E, 0>;
  } else {
    if (pixels == 2)
      return min_blocks == 2 ? depthwise_direct_kernel<T, S, R, 2, E, 2>
                             : depthwise_direct_kernel<T, S, R, 2, E, 0>;
    return min_blocks == 2 ? depthwise_direct_kernel<T, S, R, 4, E, 2>
                           : depthwise_direct_kernel<T, S, R, 4, E, 0>;
  }
}

template <class T, int E>
DirectKernelFn<T> direct_kernel_by_vec(const DepthwiseDirectConfig& c) {
  if (c.stride == 1)
    return c.rows == 2 ? direct_kernel_by_shape<T, 1, 2, E>(c.pixels, c.min_blocks)
                       : direct_kernel_by_shape<T, 1, 1, E>(c.pixels, c.min_blocks);
  return c.rows == 2 ? direct_kernel_by_shape<T, 2, 2, E>(c.pixels, c.min_blocks)
                     : direct_kernel_by_shape<T, 2, 1, E>(c.pixels, c.min_blocks);
}

template <class T>
DirectKernelFn<T> direct_kernel_for(const DepthwiseDirectConfig& c) {
  if constexpr (sizeof(T) == 2) {
    if (c.vec == 8) return direct_kernel_by_vec<T, 8>(c);
  }
  return direct_kernel_by_vec<T, 4>(c);
}

}  // namespace

template <class T>
void launch_depthwise_direct(const Im2colGeometry& g, const DepthwiseDirectConfig& c, const T* src,
                             const T* wei, T* dst, cudaStream_t stream) {
  if (const std::string why = depthwise_direct_config_mismatch(g, int(sizeof(T)), c); !why.empty())
    throw std::invalid_argument("depthwise direct kernel: configuration does not fit: " + why);
  const std::uintptr_t align = std::uintptr_t(c.vec) * sizeof(T);
  if (reinterpret_cast<std::uintptr_t>(src) % align != 0 ||
      reinterpret_cast<std::uintptr_t>(dst) % align != 0)
    throw std::invalid_argument("depthwise direct kernel: tensors not aligned to channel vectors");
  direct_kernel_for<T>(
      c)<<<unsigned(c.blocks), unsigned(c.threads), std::size_t(c.smem_bytes), stream>>>(g, c, src,
                                                                                         wei, dst);
  CUDA_CHECK_LAST_LAUNCH();
}

template <class T>
std::string depthwise_direct_kernel_resources(const DepthwiseDirectConfig& c) {
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(direct_kernel_for<T>(c))));
  return std::to_string(a.numRegs) + " registers, " + std::to_string(a.localSizeBytes) +
         " B local, " + std::to_string(a.sharedSizeBytes) + " B static shared";
}

#define MYCONV_DEPTHWISE_DIRECT_INSTANTIATE(T)                                                  \
  template void launch_depthwise_direct<T>(const Im2colGeometry&, const DepthwiseDirectConfig&, \
                                           const T*, const T*, T*, cudaStream_t);               \
  template std::string depthwise_direct_kernel_resources<T>(const DepthwiseDirectConfig&);
MYCONV_DEPTHWISE_DIRECT_INSTANTIATE(float)
MYCONV_DEPTHWISE_DIRECT_INSTANTIATE(__half)
MYCONV_DEPTHWISE_DIRECT_INSTANTIATE(__nv_bfloat16)
#undef MYCONV_DEPTHWISE_DIRECT_INSTANTIATE

}  // namespace conv
