// Variant 12's kernels (Winograd F(2x2,3x3), FP32; the algorithm, the matrices' layouts and the
// transform arithmetic: conv/cuda/winograd_config.hpp). 12.1: the filter, input and output
// transforms, with the 16 GEMMs between them on the conv SGEMM (conv/cuda/im2col_gemm_kernels.cu;
// the mapping: winograd_gemm_geometry). 12.2: the filter transform, then one kernel for the input
// transform, the GEMMs and the output transform. Each kernel reads and writes the layout in its
// own loads and stores: no repack copy.
//
// Build (part of the conv_cuda target); registers and spills of every kernel:
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c conv/cuda/winograd_kernels.cu -o /dev/null
// (sm_90, nvcc 13.0: filter 29 registers, input nchw 32 / nhwc 40, output nchw 32 / nhwc 32, the
// nhwc ones 18432 bytes of shared memory; fused nchw 205 / nhwc 227 (one block of 256 threads per
// SM; capped at 128 for two blocks they spill), 36864 bytes of shared memory; no spills.)
// Run (on a GPU):
//   build/experiments/myconv --backends im2col_gemm_cuda,cudnn --variant 12.2
//     --problem mb32ic128ih28oc128kh3ph1 --dtypes fp32 --layout nchw,nhwc --timing pure
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
//   fused   (12.2) 32 output channels x 32 tiles x all 16 xi per block: below, at
//           winograd_fused_kernel.
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

// ---- 12.2: the input transform, the 16 GEMMs and the output transform in one kernel ----------
// A block computes M[xi][k][p] for all 16 xi over a tile of kFusedK output channels x kFusedP
// Winograd tiles, in chunks of kFusedC input channels: each thread loads one 4x4 patch of the
// chunk (one channel, one tile) and 16 values of U, transforms the patch, and stores both to
// shared memory (Us[xi][c][k], Vs[xi][c][p]); then every thread multiplies: thread t takes
// xi = t / 16 and an 8 x 8 register tile of that xi's 32 x 32 outputs (two slices of 4 channels
// and two of 4 tiles, float4 reads that are broadcast or contiguous within each quarter warp).
// The next chunk's patch and U values are loaded into registers while the current one is
// multiplied. Epilogue: the accumulators go through shared memory in two halves of 16 channels
// (Ms[xi][k][p]), and each thread transforms two (k, tile) pairs of each half to 2x2 outputs.
constexpr int kFusedK = 32, kFusedP = 32, kFusedC = 8;
// Row stride of the staged operands: a multiple of 4 floats (aligned float4 reads) whose rows
// start 4 banks apart, so that the staging stores of a warp (8 rows x 4 columns) hit 32 banks.
constexpr int kFusedRow = 36;
constexpr int kFusedStage = 16 * kFusedC * kFusedRow;  // floats per staged operand
constexpr int kFusedHalfK = 16, kFusedOutRow = kFusedP + 1;
constexpr int kFusedEpilogue = 16 * kFusedHalfK * kFusedOutRow;
constexpr int kFusedShared = 2 * kFusedStage > kFusedEpilogue ? 2 * kFusedStage : kFusedEpilogue;
static_assert(kFusedC * kFusedP == kThreads && 16 * kFusedK * kFusedC == 16 * kThreads,
              "one patch and 16 values of U per thread and chunk");

template <bool kNhwc>
__global__ void __launch_bounds__(kThreads, 1)
    winograd_fused_kernel(const WinogradGeometry g, const float* __restrict__ src,
                          const float* __restrict__ u, float* __restrict__ dst) {
  __shared__ __align__(16) float smem[kFusedShared];
  float* const us = smem;                // Us[xi][c][k]
  float* const vs = smem + kFusedStage;  // Vs[xi][c][p]
  const int tid = threadIdx.x;
  const int p0 = blockIdx.x * kFusedP, k0 = blockIdx.y * kFusedK;

  // Staging roles, fixed for every chunk: the patch (channel sc of the chunk, tile sp) and the
  // U values (channel uc of the chunk, output channel uk, every xi).
  const int sc = kNhwc ? tid % kFusedC : tid / kFusedP;  // nhwc: channels fastest (8 x 4 bytes)
  const int sp = kNhwc ? tid / kFusedC : tid % kFusedP;  // nchw: tiles fastest
  const bool tile_ok = p0 + sp < g.p;
  const WinogradTile tile = winograd_tile(g, tile_ok ? p0 + sp : 0);
  const int uc = tid % kFusedC, uk = tid / kFusedC;
  const bool uk_ok = k0 + uk < g.oc;
  const std::int64_t u_plane = std::int64_t(g.oc) * g.ic;
  const float* u_row = u + std::int64_t(uk_ok ? k0 + uk : 0) * g.ic + uc;

  float d[16], w[16];  // the next chunk: raw patch and U values
  auto load_chunk = [&](int c0) {
    const bool patch_ok = tile_ok && c0 + sc < g.ic;
    if (patch_ok) {
      load_patch<kNhwc>(g, src, tile, c0 + sc, d);
    } else {
#pragma unroll
      for (int i = 0; i < 16; ++i) d[i] = 0.0f;
    }
    const bool u_ok = uk_ok && c0 + uc < g.ic;
#pragma unroll
    for (int xi = 0; xi < 16; ++xi) w[xi] = u_ok ? u_row[xi * u_plane + c0] : 0.0f;
  };
  auto store_chunk = [&]() {
    float t[16];
    winograd_input_tile(d, t);
#pragma unroll
    for (int xi = 0; xi < 16; ++xi) {
      vs[(xi * kFusedC + sc) * kFusedRow + sp] = t[xi];
      us[(xi * kFusedC + uc) * kFusedRow + uk] = w[xi];
    }
  };

  // Multiply roles: xi, and the thread's channel and tile slices within the 32 x 32 tile.
  const int xi = tid / 16, tk = (tid / 4) % 4, tp = tid % 4;
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  const int chunks = (g.ic + kFusedC - 1) / kFusedC;
  load_chunk(0);
  store_chunk();
  __syncthreads();
  for (int s = 0; s < chunks; ++s) {
    const bool more = s + 1 < chunks;
    if (more) load_chunk((s + 1) * kFusedC);  // in flight during the multiply below
#pragma unroll
    for (int c = 0; c < kFusedC; ++c) {
      const float* ur = us + (xi * kFusedC + c) * kFusedRow;
      const float* vr = vs + (xi * kFusedC + c) * kFusedRow;
      const float4 a0 = *reinterpret_cast<const float4*>(ur + tk * 4);
      const float4 a1 = *reinterpret_cast<const float4*>(ur + 16 + tk * 4);
      const float4 b0 = *reinterpret_cast<const float4*>(vr + tp * 4);
      const float4 b1 = *reinterpret_cast<const float4*>(vr + 16 + tp * 4);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // everyone done reading the chunk
    if (more) {
      store_chunk();
      __syncthreads();
    }
  }

  // Epilogue, one half of the block's channels at a time: acc[h * 4 + i][q * 4 + j] is
  // M[xi][k0 + h * 16 + tk * 4 + i][p0 + q * 16 + tp * 4 + j].
  float* const ms = smem;  // Ms[xi][k][p] of the half
#pragma unroll
  for (int h = 0; h < 2; ++h) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int q = 0; q < 2; ++q)
#pragma unroll
        for (int j = 0; j < 4; ++j)
          ms[(xi * kFusedHalfK + tk * 4 + i) * kFusedOutRow + q * 16 + tp * 4 + j] =
              acc[h * 4 + i][q * 4 + j];
    __syncthreads();
#pragma unroll
    for (int e = tid; e < kFusedHalfK * kFusedP; e += kThreads) {
      // nhwc: channels fastest (contiguous stores); nchw: tiles fastest.
      const int kl = kNhwc ? e % kFusedHalfK : e / kFusedP;
      const int pl = kNhwc ? e / kFusedHalfK : e % kFusedP;
      const int k = k0 + h * kFusedHalfK + kl, p = p0 + pl;
      if (k < g.oc && p < g.p) {
        float t[16], y[4];
#pragma unroll
        for (int x = 0; x < 16; ++x) t[x] = ms[(x * kFusedHalfK + kl) * kFusedOutRow + pl];
        winograd_output_tile(t, y);
        store_tile<kNhwc>(g, dst, winograd_tile(g, p), k, y);
      }
    }
    __syncthreads();  // the next half overwrites ms
  }
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

void launch_winograd_fused(const WinogradGeometry& g, const float* src, const float* u, float* dst,
                           cudaStream_t stream) {
  const dim3 grid(blocks(g.p, kFusedP), blocks(g.oc, kFusedK));
  if (g.nhwc)
    winograd_fused_kernel<true><<<grid, kThreads, 0, stream>>>(g, src, u, dst);
  else
    winograd_fused_kernel<false><<<grid, kThreads, 0, stream>>>(g, src, u, dst);
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
