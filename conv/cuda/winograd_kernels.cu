// Variant 12's transforms (Winograd F(2x2,3x3), FP32; the algorithm, the matrices' layouts and the
// transform arithmetic: conv/cuda/winograd_config.hpp). The 16 GEMMs between the input and the
// output transform run on the conv SGEMM (conv/cuda/im2col_gemm_kernels.cu; the mapping:
// conv/cuda/winograd.cpp). Each kernel reads the layout in its loads: no repack copy.
//
// Build (part of the conv_cuda target); registers and spills of every kernel:
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c conv/cuda/winograd_kernels.cu -o /dev/null
// (sm_90, nvcc 13.0: filter 29 registers, input nchw 32 / nhwc 40, output nchw 32 / nhwc 32;
// no spills; the nhwc kernels 18432 bytes of shared memory.)
// Run (on a GPU):
//   build/experiments/myconv --backends im2col_gemm_cuda,cudnn --variant 12
//     --problem mb32ic128ih28oc128kh3ph1 --dtypes fp32 --layout nchw,nhwc
//   build/tests/test_backends_gpu --gtest_filter='GpuBackends.Winograd*'
//
// Kernels, 256 threads each:
//   filter  one thread per (k, c): 9 weights in, 16 values of U out (coalesced along c).
//   input   nchw: one thread per (c, tile), tiles along x, so the 16 loads of a warp read 2 rows
//           of 64 floats each and the 16 stores are coalesced along p. nhwc: a block of 32
//           channels x 8 tiles, the loads coalesced along c, the transformed tiles staged in
//           shared memory ([16][32][9] floats) and stored along p.
//   output  the mirror image: nchw one thread per (k, tile), M read along p, the 2x2 tile written
//           as two pairs; nhwc M read along p into shared memory, then one thread per (k, tile)
//           with k fastest, so the 4 stores of a warp are 128-byte runs along k.
#include "conv/cuda/winograd_kernels.hpp"

#include <cstdint>

#include "core/cuda/cuda_check.hpp"

namespace conv {
namespace {

constexpr int kThreads = 256;
// The nhwc kernels' block: kChannels channels (threadIdx.x) x kTiles tiles (threadIdx.y).
constexpr int kChannels = 32, kTiles = 8;
static_assert(kChannels * kTiles == kThreads, "one block shape");

__global__ void __launch_bounds__(kThreads)
    winograd_filter_kernel(const WinogradGeometry g, const float* __restrict__ wei,
                           float* __restrict__ u) {
  const std::int64_t plane = std::int64_t(g.oc) * g.ic;
  const std::int64_t idx = std::int64_t(blockIdx.x) * kThreads + threadIdx.x;  // k * IC + c
  if (idx >= plane) return;
  float f[9];
  if (g.nhwc) {  // [OC][3][3][IC]
    const std::int64_t k = idx / g.ic, c = idx - k * g.ic;
    const float* w = wei + k * 9 * g.ic + c;
#pragma unroll
    for (int t = 0; t < 9; ++t) f[t] = w[std::int64_t(t) * g.ic];
  } else {  // [OC][IC][3][3]
    const float* w = wei + idx * 9;
#pragma unroll
    for (int t = 0; t < 9; ++t) f[t] = w[t];
  }
  float v[16];
  winograd_filter_tile(f, v);
#pragma unroll
  for (int xi = 0; xi < 16; ++xi) u[xi * plane + idx] = v[xi];
}

// The 4x4 input patch of tile t in channel c; `at(y, x)` is the element's offset.
template <bool kNhwc>
__device__ __forceinline__ void load_patch(const WinogradGeometry& g, const float* __restrict__ src,
                                           const WinogradTile& t, int c, float d[16]) {
  const int y0 = 2 * t.ty - g.ph, x0 = 2 * t.tx - g.pw;
  const float* image =
      src + std::int64_t(t.n) * g.ic * g.h * g.w + (kNhwc ? c : std::int64_t(c) * g.h * g.w);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int y = y0 + i;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int x = x0 + j;
      const bool inside = unsigned(y) < unsigned(g.h) && unsigned(x) < unsigned(g.w);
      const std::int64_t at =
          kNhwc ? (std::int64_t(y) * g.w + x) * g.ic : std::int64_t(y) * g.w + x;
      d[4 * i + j] = inside ? image[at] : 0.0f;
    }
  }
}

// nchw: grid (ceil(P / 256), IC).
__global__ void __launch_bounds__(kThreads)
    winograd_input_nchw_kernel(const WinogradGeometry g, const float* __restrict__ src,
                               float* __restrict__ v) {
  const int p = blockIdx.x * kThreads + threadIdx.x, c = blockIdx.y;
  if (p >= g.p) return;
  float d[16], t[16];
  load_patch<false>(g, src, winograd_tile(g, p), c, d);
  winograd_input_tile(d, t);
  const std::int64_t plane = std::int64_t(g.ic) * g.p;
  float* out = v + std::int64_t(c) * g.p + p;
#pragma unroll
  for (int xi = 0; xi < 16; ++xi) out[xi * plane] = t[xi];
}

// nhwc: grid (ceil(P / 8), ceil(IC / 32)), block (32, 8).
__global__ void __launch_bounds__(kThreads)
    winograd_input_nhwc_kernel(const WinogradGeometry g, const float* __restrict__ src,
                               float* __restrict__ v) {
  __shared__ float s[16][kChannels][kTiles + 1];  // odd row stride: both phases conflict-free
  const int p0 = blockIdx.x * kTiles, c0 = blockIdx.y * kChannels;
  {
    const int c = c0 + threadIdx.x, p = p0 + threadIdx.y;
    if (c < g.ic && p < g.p) {
      float d[16], t[16];
      load_patch<true>(g, src, winograd_tile(g, p), c, d);
      winograd_input_tile(d, t);
#pragma unroll
      for (int xi = 0; xi < 16; ++xi) s[xi][threadIdx.x][threadIdx.y] = t[xi];
    }
  }
  __syncthreads();
  const int tid = threadIdx.y * kChannels + threadIdx.x;
  const int cc = tid / kTiles, pp = tid % kTiles;
  const int c = c0 + cc, p = p0 + pp;
  if (c >= g.ic || p >= g.p) return;
  const std::int64_t plane = std::int64_t(g.ic) * g.p;
  float* out = v + std::int64_t(c) * g.p + p;
#pragma unroll
  for (int xi = 0; xi < 16; ++xi) out[xi * plane] = s[xi][cc][pp];
}

// The 2x2 outputs of tile t in channel k, cut at OH and OW; `out` is (n, k, 0, 0)'s offset.
template <bool kNhwc>
__device__ __forceinline__ void store_tile(const WinogradGeometry& g, float* __restrict__ dst,
                                           const WinogradTile& t, int k, const float y[4]) {
  const int oy = 2 * t.ty, ox = 2 * t.tx;
  float* image =
      dst + std::int64_t(t.n) * g.oc * g.oh * g.ow + (kNhwc ? k : std::int64_t(k) * g.oh * g.ow);
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j)
      if (oy + i < g.oh && ox + j < g.ow) {
        const std::int64_t pixel = std::int64_t(oy + i) * g.ow + ox + j;
        image[kNhwc ? pixel * g.oc : pixel] = y[2 * i + j];
      }
}

// nchw: grid (ceil(P / 256), OC).
__global__ void __launch_bounds__(kThreads)
    winograd_output_nchw_kernel(const WinogradGeometry g, const float* __restrict__ m,
                                float* __restrict__ dst) {
  const int p = blockIdx.x * kThreads + threadIdx.x, k = blockIdx.y;
  if (p >= g.p) return;
  const std::int64_t plane = std::int64_t(g.oc) * g.p;
  const float* in = m + std::int64_t(k) * g.p + p;
  float t[16], y[4];
#pragma unroll
  for (int xi = 0; xi < 16; ++xi) t[xi] = in[xi * plane];
  winograd_output_tile(t, y);
  store_tile<false>(g, dst, winograd_tile(g, p), k, y);
}

// nhwc: grid (ceil(P / 8), ceil(OC / 32)), block (32, 8).
__global__ void __launch_bounds__(kThreads)
    winograd_output_nhwc_kernel(const WinogradGeometry g, const float* __restrict__ m,
                                float* __restrict__ dst) {
  __shared__ float s[16][kChannels][kTiles + 1];
  const int p0 = blockIdx.x * kTiles, k0 = blockIdx.y * kChannels;
  {
    const int tid = threadIdx.y * kChannels + threadIdx.x;
    const int kk = tid / kTiles, pp = tid % kTiles;
    const int k = k0 + kk, p = p0 + pp;
    if (k < g.oc && p < g.p) {
      const std::int64_t plane = std::int64_t(g.oc) * g.p;
      const float* in = m + std::int64_t(k) * g.p + p;
#pragma unroll
      for (int xi = 0; xi < 16; ++xi) s[xi][kk][pp] = in[xi * plane];
    }
  }
  __syncthreads();
  const int k = k0 + threadIdx.x, p = p0 + threadIdx.y;
  if (k >= g.oc || p >= g.p) return;
  float t[16], y[4];
#pragma unroll
  for (int xi = 0; xi < 16; ++xi) t[xi] = s[xi][threadIdx.x][threadIdx.y];
  winograd_output_tile(t, y);
  store_tile<true>(g, dst, winograd_tile(g, p), k, y);
}

unsigned blocks(std::int64_t n, int per_block) {
  return unsigned((n + per_block - 1) / per_block);
}

}  // namespace

void launch_winograd_filter_transform(const WinogradGeometry& g, const float* wei, float* u,
                                      cudaStream_t stream) {
  winograd_filter_kernel<<<blocks(std::int64_t(g.oc) * g.ic, kThreads), kThreads, 0, stream>>>(
      g, wei, u);
  CUDA_CHECK_LAST_LAUNCH();
}

void launch_winograd_input_transform(const WinogradGeometry& g, const float* src, float* v,
                                     cudaStream_t stream) {
  if (g.nhwc)
    winograd_input_nhwc_kernel<<<dim3(blocks(g.p, kTiles), blocks(g.ic, kChannels)),
                                 dim3(kChannels, kTiles), 0, stream>>>(g, src, v);
  else
    winograd_input_nchw_kernel<<<dim3(blocks(g.p, kThreads), unsigned(g.ic)), kThreads, 0,
                                 stream>>>(g, src, v);
  CUDA_CHECK_LAST_LAUNCH();
}

void launch_winograd_output_transform(const WinogradGeometry& g, const float* m, float* dst,
                                      cudaStream_t stream) {
  if (g.nhwc)
    winograd_output_nhwc_kernel<<<dim3(blocks(g.p, kTiles), blocks(g.oc, kChannels)),
                                  dim3(kChannels, kTiles), 0, stream>>>(g, m, dst);
  else
    winograd_output_nchw_kernel<<<dim3(blocks(g.p, kThreads), unsigned(g.oc)), kThreads, 0,
                                  stream>>>(g, m, dst);
  CUDA_CHECK_LAST_LAUNCH();
}

}  // namespace conv
