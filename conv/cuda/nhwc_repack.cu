// Variant 6's and variant 10's first step: the input rewritten as nhwc and the weights as
// [OC][KH][KW][Cp], each group's channels padded with zeros to Cp, a whole number of 16-byte
// vectors (mma_repacked_geometry in conv/cuda/mma_index.hpp); declared in im2col_gemm_kernels.hpp
// (launch_mma_repack).
//
// Two forms for the input, as the layout and channel count allow:
//   - nchw input whose repacked channels fill 128-byte runs (64 fp16/bf16, 32 tf32 or more): a
//     transpose through shared memory per (image, 64 pixels of its H*W plane, 128-byte channel
//     run), vector reads along the plane (16 bytes where H*W allows) and 16-byte vector writes
//     along the channels, both coalesced;
//   - otherwise (nhwc input whose channels per group are not whole vectors, e.g. 3; nchw with
//     few channels, e.g. ResNet-50's conv1): one thread per 16-byte output vector, gathering its
//     values from the input (coalesced along W for nchw).
// The weights: one thread per 16-byte output vector. tf32 values are rounded to nearest tf32 in
// every form (variant 10 repacks tf32 input for that reason even where the layout needs none).
// Measured on the H200 (myconv --debug kernel table, ResNet-50 at batch 32, fp16): the
// per-vector form took 20.8 us for res2's nchw input (12.8 MB: 1.2 TB/s) and 6.6 us for res5's
// weights; a first transpose with 2-byte writes (and a per-channel weight slab) made every ResNet-50
// layer slower through variants 6 and 10 (conv1 by 94 us); the transpose before this one (one
// block per image row and 32 pixels, 2-byte reads along W) took 22.5 us for res2's 12.8 MB
// (ncu, results/h200/20261124_conv_ncu_missed_targets/res2_1x1_up_fp16_ncu.txt: 65% SM
// throughput, index math per element), which this one replaces. With it (H200, pure timing,
// variants 6 and 10 through --variant auto, results/h200/20261124_conv_preset_gpu_dtypes/):
// ResNet-50 nchw fp16 res2_3x3 35.2 us (cuDNN 49.8), res2_1x1_up 48.2 us (cuDNN 17.9); geomean
// against cuDNN 0.959 in fp16 (20261125_conv_preset_fp32/targets.md).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "conv/cuda/im2col_gemm_kernels.hpp"
#include "conv/cuda/mma_index.hpp"
#include "conv/indexing.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/mma.cuh"

namespace conv {
namespace {

constexpr int kRepackThreads = 256;  // the transpose's block: 32 channel units x 8 pixel runs
constexpr int kRepackPixels = 64;    // pixels per block: 8 runs of 8

template <int kBytes>
using Word = std::conditional_t<kBytes == 2, unsigned short, unsigned>;

// kV consecutive elements as one load (kV * kBytes of 2, 4, 8 or 16 bytes, aligned to that).
template <int kBytes, int kV>
__device__ __forceinline__ void load_run(const Word<kBytes>* p, Word<kBytes> (&v)[kV]) {
  constexpr int kRunBytes = kV * kBytes;
  using Vec = std::conditional_t<
      kRunBytes == 16, uint4,
      std::conditional_t<kRunBytes == 8, uint2,
                         std::conditional_t<kRunBytes == 4, unsigned, unsigned short>>>;
  const Vec x = __ldg(reinterpret_cast<const Vec*>(p));
  memcpy(v, &x, sizeof x);
}

// nchw input, one block per (image, 64 consecutive pixels of its H*W plane, one 128-byte run of
// repacked channels: 64 fp16/bf16 or 32 tf32). The plane of one channel is contiguous in nchw, so
// the block reads 64-pixel rows of its channels (a warp: 4 channel units x 8 runs of 8 pixels,
// 128 or 256 contiguous bytes per channel, kV-element vector loads where the plane size allows),
// packs each pixel's channel unit into a 32-bit word (a channel pair for 16-bit types, one tf32
// channel, rounded to nearest), and stores the words into a [64 pixels][32 words] shared tile,
// the unit's 4-word group XOR-swizzled by the pixel's run (no bank conflicts on either side).
// Then each thread writes 16-byte vectors of one pixel's channels: 8 threads a pixel's 128
// bytes, contiguous across pixels when the repacked channels are one run. Repacked channel oc_r
// (over all groups, padded) is channel oc_r % Cp of group oc_r / Cp: zero in the padding.
template <int kBytes, int kV>
__global__ void __launch_bounds__(kRepackThreads)
    repack_nchw_src_kernel(const Im2colGeometry g, const Im2colGeometry r,
                           const Word<kBytes>* __restrict__ src, Word<kBytes>* __restrict__ out) {
  constexpr int kRows = kBytes == 2 ? 2 : 1;  // channels per 32-bit unit
  constexpr int kChannels = 32 * kRows;       // channels per 128-byte run
  __shared__ unsigned tile[kRepackPixels * 32];
  const std::int64_t plane = std::int64_t(g.h) * g.w;
  const std::int64_t q0 = std::int64_t(blockIdx.x) * kRepackPixels;
  const int c0 = blockIdx.y * kChannels, n = blockIdx.z;
  const int run = threadIdx.x % 8, unit = threadIdx.x / 8;
  const std::int64_t q = q0 + run * 8;  // this thread's 8 pixels: q .. q + 7
  Word<kBytes> v[kRows][8];
#pragma unroll
  for (int row = 0; row < kRows; ++row) {
    const int oc_r = c0 + unit * kRows + row;
    const int group = oc_r / r.icg, c = oc_r - group * r.icg;
    const bool channel = oc_r < r.c && c < g.icg;
    const Word<kBytes>* p = src + (std::int64_t(n) * g.c + group * g.icg + c) * plane + q;
#pragma unroll
    for (int k = 0; k < 8; k += kV) {
      Word<kBytes> x[kV];
      // plane % kV == 0, so a run of kV pixels lies wholly inside or wholly outside the plane.
      if (channel && q + k < plane) {
        load_run<kBytes, kV>(p + k, x);
      } else {
#pragma unroll
        for (int e = 0; e < kV; ++e) x[e] = 0;
      }
#pragma unroll
      for (int e = 0; e < kV; ++e) v[row][k + e] = x[e];
    }
  }
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    unsigned word;
    if constexpr (kBytes == 2)
      word = unsigned(v[0][j]) | (unsigned(v[1][j]) << 16);
    else
      word = bench::round_to_tf32(v[0][j]);  // tf32: rounded once, here
    tile[(run * 8 + j) * 32 + (unit ^ (run << 2))] = word;
  }
  __syncthreads();
#pragma unroll
  for (int i = threadIdx.x; i < kRepackPixels * 8; i += kRepackThreads) {
    const int pixel = i / 8, vl = i % 8;
    const std::int64_t qq = q0 + pixel;
    const int oc_r = c0 + vl * (16 / kBytes);
    if (qq >= plane || oc_r >= r.c) continue;
    const uint4 words =
        *reinterpret_cast<const uint4*>(&tile[pixel * 32 + ((vl ^ (pixel / 8)) << 2)]);
    *reinterpret_cast<uint4*>(out + (std::int64_t(n) * plane + qq) * r.c + oc_r) = words;
  }
}

template <MmaType T>
constexpr bench::MmaDtype kDtype = T == MmaType::tf32   ? bench::MmaDtype::tf32
                                   : T == MmaType::fp16 ? bench::MmaDtype::fp16
                                                        : bench::MmaDtype::bf16;
template <MmaType T>
using MmaTraits = bench::MmaTraits<kDtype<T>>;
using bench::load_value;
using bench::set_value;

// tf32 values are rounded to tf32 (round to nearest) as they are repacked, so that the
// tensor-core kernels that read them (variant 10's wgmma reads the top 19 bits: truncation) see
// the same rounding as the mma.sync variants' in-stage cvt.rna.
template <MmaType T>
__device__ __forceinline__ unsigned rounded(unsigned bits) {
  if constexpr (T == MmaType::tf32)
    return bench::round_to_tf32(bits);
  else
    return bits;
}

// Either layout: one thread per 16-byte output vector of one pixel's group channels.
template <MmaType T>
__global__ void repack_vector_src_kernel(const Im2colGeometry g, const Im2colGeometry r,
                                         const void* __restrict__ src_, void* __restrict__ out_) {
  constexpr int kBytes = MmaTraits<T>::kBytes, kVec = MmaTraits<T>::kVec;
  const unsigned char* src = static_cast<const unsigned char*>(src_);
  unsigned char* out = static_cast<unsigned char*>(out_);
  const int vectors = r.icg / kVec;
  const std::int64_t total = std::int64_t(g.n) * g.h * g.groups * vectors * g.w;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const int w = int(i % g.w);
    std::int64_t t = i / g.w;
    const int cv = int(t % vectors);
    t /= vectors;
    const int group = int(t % g.groups);
    t /= g.groups;
    const int h = int(t % g.h), n = int(t / g.h);
    unsigned v[4] = {0, 0, 0, 0};
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const int c = cv * kVec + e;
      if (c < g.icg)
        set_value<kBytes>(
            v, e,
            rounded<T>(load_value<kBytes>(
                src + act_offset(g.nhwc, n, group * g.icg + c, h, w, g.c, g.h, g.w) * kBytes)));
    }
    *reinterpret_cast<uint4*>(out + mma_repacked_src_offset(r, n, group, cv * kVec, h, w) *
                                        kBytes) = make_uint4(v[0], v[1], v[2], v[3]);
  }
}

// Any weights: one thread per 16-byte output vector.
template <MmaType T>
__global__ void repack_wei_vector_kernel(const Im2colGeometry g, const Im2colGeometry r,
                                         const void* __restrict__ wei_, void* __restrict__ out_) {
  constexpr int kBytes = MmaTraits<T>::kBytes, kVec = MmaTraits<T>::kVec;
  const unsigned char* wei = static_cast<const unsigned char*>(wei_);
  unsigned char* out = static_cast<unsigned char*>(out_);
  const int vectors = r.icg / kVec;
  const std::int64_t total = std::int64_t(g.oc) * g.kh * g.kw * vectors;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const int cv = int(i % vectors);
    std::int64_t t = i / vectors;
    const int s = int(t % g.kw);
    t /= g.kw;
    const int rr = int(t % g.kh), o = int(t / g.kh);
    unsigned v[4] = {0, 0, 0, 0};
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const int c = cv * kVec + e;
      if (c < g.icg)
        set_value<kBytes>(v, e,
                          rounded<T>(load_value<kBytes>(
                              wei + wei_offset(g.nhwc, o, c, rr, s, g.icg, g.kh, g.kw) * kBytes)));
    }
    *reinterpret_cast<uint4*>(out + mma_repacked_wei_offset(r, o, cv * kVec, rr, s) * kBytes) =
        make_uint4(v[0], v[1], v[2], v[3]);
  }
}

constexpr int kThreads = 256;

unsigned grid_for(std::int64_t items) {
  const std::int64_t blocks = (items + kThreads - 1) / kThreads;
  return unsigned(blocks < 1 ? 1 : blocks < (1 << 20) ? blocks : (1 << 20));
}

template <MmaType T>
void repack(const Im2colGeometry& g, const void* src, const void* wei, void* src_r, void* wei_r,
            cudaStream_t stream) {
  constexpr int kBytes = MmaTraits<T>::kBytes, kVec = MmaTraits<T>::kVec;
  using W = Word<kBytes>;
  const Im2colGeometry r = mma_repacked_geometry(g, kBytes);
  // The tiled transpose where the repacked channels fill its 128-byte runs and the grid's z
  // (images x rows) fits; the per-vector form elsewhere (it reads either layout).
  constexpr int kChannels = 128 / kBytes;
  const std::int64_t plane = std::int64_t(g.h) * g.w;
  if (!g.nhwc && r.c >= kChannels && g.n <= 65535 &&
      (plane + kRepackPixels - 1) / kRepackPixels <= 0x7fffffff) {
    const dim3 grid(unsigned((plane + kRepackPixels - 1) / kRepackPixels),
                    unsigned((r.c + kChannels - 1) / kChannels), unsigned(g.n));
    const W* s = static_cast<const W*>(src);
    W* o = static_cast<W*>(src_r);
    // The widest load that keeps every run of pixels aligned: the plane a multiple of it.
    if (kBytes == 2 && plane % 8 == 0)
      repack_nchw_src_kernel<kBytes, 16 / kBytes><<<grid, kRepackThreads, 0, stream>>>(g, r, s, o);
    else if (plane % 4 == 0)
      repack_nchw_src_kernel<kBytes, 4><<<grid, kRepackThreads, 0, stream>>>(g, r, s, o);
    else if (plane % 2 == 0)
      repack_nchw_src_kernel<kBytes, 2><<<grid, kRepackThreads, 0, stream>>>(g, r, s, o);
    else
      repack_nchw_src_kernel<kBytes, 1><<<grid, kRepackThreads, 0, stream>>>(g, r, s, o);
  } else {
    const std::int64_t vectors = std::int64_t(r.n) * r.h * r.w * r.c / kVec;
    repack_vector_src_kernel<T><<<grid_for(vectors), kThreads, 0, stream>>>(g, r, src, src_r);
  }
  CUDA_CHECK_LAST_LAUNCH();
  const std::int64_t vectors = std::int64_t(r.oc) * r.k / kVec;
  repack_wei_vector_kernel<T><<<grid_for(vectors), kThreads, 0, stream>>>(g, r, wei, wei_r);
  CUDA_CHECK_LAST_LAUNCH();
}

}  // namespace

void launch_mma_repack(const Im2colGeometry& g, MmaType type, const void* src, const void* wei,
                       void* src_repacked, void* wei_repacked, cudaStream_t stream) {
  switch (type) {
    case MmaType::tf32:
      return repack<MmaType::tf32>(g, src, wei, src_repacked, wei_repacked, stream);
    case MmaType::fp16:
      return repack<MmaType::fp16>(g, src, wei, src_repacked, wei_repacked, stream);
    case MmaType::bf16:
      return repack<MmaType::bf16>(g, src, wei, src_repacked, wei_repacked, stream);
  }
}

}  // namespace conv
