// Variant 6's and variant 10's first step: the input rewritten as nhwc and the weights as
// [OC][KH][KW][Cp], each group's channels padded with zeros to Cp, a whole number of 16-byte
// vectors (mma_repacked_geometry in conv/cuda/mma_index.hpp); declared in im2col_gemm_kernels.hpp
// (launch_mma_repack).
//
// Two forms for the input, as the layout and channel count allow:
//   - nchw input whose repacked channels fill 128-byte runs (64 fp16/bf16, 32 tf32 or more): a
//     transpose through shared memory per (image, row, 32 pixels, 128-byte channel run), reads
//     along W and 16-byte vector writes along the channels, both coalesced;
//   - otherwise (nhwc input whose channels per group are not whole vectors, e.g. 3; nchw with
//     few channels, e.g. ResNet-50's conv1): one thread per 16-byte output vector, gathering its
//     values from the input (coalesced along W for nchw).
// The weights: one thread per 16-byte output vector. tf32 values are rounded to nearest tf32 in
// every form (variant 10 repacks tf32 input for that reason even where the layout needs none).
// Measured on the H200 (myconv --debug kernel table, ResNet-50 at batch 32, fp16): the
// per-vector form took 20.8 us for res2's nchw input (12.8 MB: 1.2 TB/s) and 6.6 us for res5's
// weights; a first transpose with 2-byte writes (and a per-channel weight slab) made every ResNet-50
// layer slower through variants 6 and 10 (conv1 by 94 us).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "conv/cuda/im2col_gemm_kernels.hpp"
#include "conv/cuda/mma_index.hpp"
#include "conv/indexing.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/mma.cuh"

namespace conv {
namespace {

constexpr int kRepackThreads = 256;  // the transpose's block: 32 pixels x 8 vectors

template <int kBytes>
using Word = std::conditional_t<kBytes == 2, unsigned short, unsigned>;

// nchw input: one block per (image, row, 32 pixels, one 128-byte run of repacked channels): the
// channel rows are read along W into shared memory, then each thread writes one 16-byte vector of
// a pixel's channels, 8 threads a pixel's 128 bytes. Repacked channel oc_r (over all groups,
// padded) is channel oc_r % Cp of group oc_r / Cp: zero in the padding.
template <int kBytes>
__global__ void repack_nchw_src_kernel(const Im2colGeometry g, const Im2colGeometry r,
                                       const Word<kBytes>* __restrict__ src,
                                       Word<kBytes>* __restrict__ out) {
  constexpr int kChannels = 128 / kBytes, kVec = 16 / kBytes;
  __shared__ Word<kBytes> tile[kChannels][33];
  const int w0 = blockIdx.x * 32, c0 = blockIdx.y * kChannels;
  const int n = blockIdx.z / g.h, h = blockIdx.z - (blockIdx.z / g.h) * g.h;
  // All of a thread's loads issued before the first store (unrolled: a fixed count per thread),
  // so that 8 (4 for tf32) loads per thread are in flight, not one.
#pragma unroll
  for (int j = 0; j < kChannels * 32 / kRepackThreads; ++j) {
    const int i = threadIdx.x + j * kRepackThreads;
    const int cl = i / 32, wl = i % 32;
    const int oc_r = c0 + cl, w = w0 + wl;
    const int group = oc_r / r.icg, c = oc_r - group * r.icg;
    Word<kBytes> v = 0;
    if (oc_r < r.c && c < g.icg && w < g.w) {
      v = src[((std::int64_t(n) * g.c + group * g.icg + c) * g.h + h) * g.w + w];
      if constexpr (kBytes == 4) v = bench::round_to_tf32(v);  // tf32: rounded once, here
    }
    tile[cl][wl] = v;
  }
  __syncthreads();
  {
    const int i = threadIdx.x;  // 32 pixels x 8 vectors: one per thread
    const int wl = i / (kChannels / kVec), vl = i % (kChannels / kVec);
    const int w = w0 + wl, oc_r = c0 + vl * kVec;
    if (w >= g.w || oc_r >= r.c) return;
    unsigned word[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if constexpr (kBytes == 2)
        word[e] = unsigned(tile[vl * kVec + 2 * e][wl]) |
                  (unsigned(tile[vl * kVec + 2 * e + 1][wl]) << 16);
      else
        word[e] = tile[vl * kVec + e][wl];
    }
    *reinterpret_cast<uint4*>(out + ((std::int64_t(n) * g.h + h) * g.w + w) * r.c + oc_r) =
        make_uint4(word[0], word[1], word[2], word[3]);
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
  if (!g.nhwc && r.c >= kChannels && std::int64_t(g.n) * g.h <= 65535) {
    const dim3 grid(unsigned((g.w + 31) / 32), unsigned((r.c + kChannels - 1) / kChannels),
                    unsigned(g.n * g.h));
    repack_nchw_src_kernel<kBytes><<<grid, kRepackThreads, 0, stream>>>(
        g, r, static_cast<const W*>(src), static_cast<W*>(src_r));
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
