// Index math of conv's tensor-core kernels (variants 4-6 in conv/cuda/im2col_gemm_mma.cu), shared
// by host and device so that tests/conv/test_mma_index.cpp checks it on the CPU. The generic part
// (mma.sync fragment layouts, ldmatrix row addresses, the k-contiguous tile geometry, split-K)
// lives in core/cuda/mma_index.hpp, shared with the op suite's matmul; here is what is conv's:
//   - how a k slice of the column tile is dealt to threads (along k or along m);
//   - the epilogue's staging strides for nchw and nhwc output;
//   - the row-major column buffer of variant 5, col[group][m][k], k padded to whole vectors, and
//     the padded nhwc repack of variant 6;
//   - the tile and split-K plans.
//
// Shared-memory operand tiles are row-major with k contiguous: row r of the weight tile is an
// output channel, row r of the column tile is an output pixel (core/cuda/mma_index.hpp gives
// their 64-byte slices at an 80-byte stride and the ldmatrix addressing of both).
#pragma once

#include <cstdint>
#include <string>

#include "conv/im2col_index.hpp"
#include "core/cuda/mma_index.hpp"

namespace conv {

using bench::choose_split_k;
using bench::kMmaRowStride;
using bench::kMmaSliceBytes;
using bench::kMmaStepBytes;
using bench::kMmaVecBytes;
using bench::kMmaVecsPerRow;
using bench::ldmatrix_a_row;
using bench::ldmatrix_b_row;
using bench::LdmatrixRow;
using bench::mma_a_slot;
using bench::mma_m16n8_c;
using bench::mma_m16n8k16_a;
using bench::mma_m16n8k16_b;
using bench::mma_m16n8k8_tf32_a;
using bench::mma_m16n8k8_tf32_b;
using bench::mma_split_begin;
using bench::mma_vec_elements;
using bench::MmaCoord;
using bench::MmaTileDims;
using bench::MmaVecSlot;

// The vectors of one k slice of the column tile (BN rows x 4 vectors) dealt to `threads` threads:
// each thread keeps one vector column kv (its 4..8 k values, hence its rows of the im2col table,
// are the same for all its pixels) and takes pixels mrow, mrow + threads/4, ... Along k (nhwc
// gathers and the column buffer: the 4 lanes of a pixel read its 64 contiguous bytes) or along m
// (nchw gathers: 32 lanes read 32 neighbouring pixels of one channel plane).
MYCONV_HD MmaVecSlot mma_b_slot(int tid, int threads, bool along_k) {
  const int lanes_along_m = threads / kMmaVecsPerRow;
  if (along_k) return {tid % kMmaVecsPerRow, tid / kMmaVecsPerRow};
  return {tid / lanes_along_m, tid % lanes_along_m};
}

// The epilogue stages the output tile in shared memory, in the order in which it is stored:
// nchw, channel rows of BN pixels (pixels contiguous in the output); nhwc, pixel rows of BM
// channels (channels contiguous). Row strides are padded so that the fragment stores spread over
// the banks and every row stays 16-byte aligned.
MYCONV_HD constexpr int mma_out_stride(bool nhwc, int bm, int bn, int element_bytes) {
  return nhwc ? bm + (element_bytes == 4 ? 4 : 8) : bench::mma_staging_stride(bn);
}

// Variant 5's column buffer: for each group an M x Kp row-major matrix, Kp = K rounded up to
// whole 16-byte vectors (the extra k hold zeros), so every row is a run of aligned vectors.
MYCONV_HD int mma_padded_k(int k, int element_bytes) {
  const int vec = mma_vec_elements(element_bytes);
  return (k + vec - 1) / vec * vec;
}
MYCONV_HD std::int64_t mma_column_buffer_offset(const Im2colGeometry& g, int kp, int group, int m,
                                                int k) {
  return (std::int64_t(group) * g.m + m) * kp + k;
}

// nhwc gathers load a whole vector per (pixel, tap) when the vector's k values are consecutive
// channels of one tap, 16-byte aligned: true when IC/G is a multiple of the vector length (then
// so are IC, every group's first channel and the channel of every vector's first k).
MYCONV_HD bool mma_nhwc_vector_gather(const Im2colGeometry& g, int element_bytes) {
  return g.nhwc && g.icg % mma_vec_elements(element_bytes) == 0;
}

// Variant 6 repacks the input to nhwc with each group's channels padded to whole vectors,
// [N][H][W][G * Cp], Cp = IC/G rounded up to the vector length (the extra channels hold zeros),
// and the weights to [OC][KH][KW][Cp] to match, so that every gather is one aligned 16-byte copy.
// The GEMM then runs on the geometry below (K = KH * KW * Cp; M, OC, the output unchanged).
MYCONV_HD int mma_padded_channels(const Im2colGeometry& g, int element_bytes) {
  const int vec = mma_vec_elements(element_bytes);
  return (g.icg + vec - 1) / vec * vec;
}
MYCONV_HD Im2colGeometry mma_repacked_geometry(const Im2colGeometry& g, int element_bytes) {
  Im2colGeometry r = g;
  r.icg = mma_padded_channels(g, element_bytes);
  r.c = r.icg * g.groups;
  r.k = r.icg * g.kh * g.kw;
  r.nhwc = true;
  return r;
}
// Offset in the repacked input of (n, channel c of group `group`, h, w); c < Cp.
MYCONV_HD std::int64_t mma_repacked_src_offset(const Im2colGeometry& r, int n, int group, int c,
                                               int h, int w) {
  return ((std::int64_t(n) * r.h + h) * r.w + w) * r.c + std::int64_t(group) * r.icg + c;
}
// Offset in the repacked weights of (output channel o over all groups, channel c, tap r, s).
MYCONV_HD std::int64_t mma_repacked_wei_offset(const Im2colGeometry& rg, int o, int c, int r,
                                               int s) {
  return std::int64_t(o) * rg.k + (r * rg.kw + s) * rg.icg + c;
}

// A row of the im2col table (conv/im2col_index.hpp) padded to 16 bytes: one vector load.
struct alignas(16) Im2colRow16 {
  int offset, dy, dx, unused;
};
MYCONV_HD Im2colRow16 im2col_row16(const Im2colGeometry& g, int k) {
  const Im2colRow r = im2col_row(g, k);
  return {r.offset, r.dy, r.dx, 0};
}

// Thread-block tiles of the tensor-core GEMM: BM output channels x BN output pixels, a k slice of
// 64 bytes (BK = 32 fp16/bf16 or 16 tf32 values), warps of WM x WN outputs.
enum class MmaTileShape {
  t128x128,  // 8 warps of 64x32: large OC/G and enough blocks
  t64x128,   // 4 warps of 32x64: OC/G <= 64, or a 128x128 grid under one wave
  t64x64,    // 4 warps of 32x32: small grids (7x7 and 14x14 maps, small batches)
  t32x64,    // 4 warps of 16x32: OC/G <= 32 (grouped and depthwise layers)
};
constexpr MmaTileDims mma_tile_dims(MmaTileShape t) {
  return t == MmaTileShape::t128x128  ? MmaTileDims{128, 128, 64, 32}
         : t == MmaTileShape::t64x128 ? MmaTileDims{64, 128, 32, 64}
         : t == MmaTileShape::t64x64  ? MmaTileDims{64, 64, 32, 32}
                                      : MmaTileDims{32, 64, 16, 32};
}
constexpr MmaTileShape kAllMmaTiles[] = {MmaTileShape::t128x128, MmaTileShape::t64x128,
                                         MmaTileShape::t64x64, MmaTileShape::t32x64};

// Thread blocks of a launch: pixel tiles x channel tiles x groups.
inline std::int64_t mma_blocks(const Im2colGeometry& g, MmaTileShape t) {
  const MmaTileDims d = mma_tile_dims(t);
  return (std::int64_t(g.m) + d.bn - 1) / d.bn * ((g.ocg + d.bm - 1) / d.bm) * g.groups;
}

// The tile for g on a GPU with sm_count multiprocessors: the candidates whose height suits OC/G
// (a tile far taller than OC/G multiplies zeros), largest first; the first that gives every SM
// a block, else the one with the most blocks (the last).
inline MmaTileShape choose_mma_tile(const Im2colGeometry& g, int sm_count) {
  if (g.ocg <= 32) return MmaTileShape::t32x64;
  const MmaTileShape wide[] = {MmaTileShape::t128x128, MmaTileShape::t64x128, MmaTileShape::t64x64};
  const MmaTileShape narrow[] = {MmaTileShape::t64x128, MmaTileShape::t64x64};
  const MmaTileShape* first = g.ocg > 64 ? wide : narrow;
  const int count = g.ocg > 64 ? 3 : 2;
  for (int i = 0; i < count; ++i)
    if (mma_blocks(g, first[i]) >= sm_count) return first[i];
  return first[count - 1];
}

// A launch of the tensor-core GEMM: its tile, and how many blocks share the k slices of each
// output tile (split-K; 1 = none). Split s of `splits` takes slices [mma_split_begin(s),
// mma_split_begin(s + 1)) of `slices`: balanced to within one slice, none empty while
// splits <= slices.
struct MmaPlan {
  MmaTileShape tile = MmaTileShape::t128x128;
  int splits = 1;
};
inline int mma_slices(const Im2colGeometry& g, int element_bytes) {
  const int slice_k = kMmaSliceBytes / element_bytes;
  return (g.k + slice_k - 1) / slice_k;
}

// A grid of this many blocks or more is left unsplit: 1.4 blocks per SM (the 128x128 kernel
// keeps two resident per SM). Measured on the H200 (132 SMs), fp16/tf32 nhwc, variant 6:
// ResNet-50 res3 (196 blocks of 128x128) lost 30% with split-K 2; FP32 res3 lost 6%.
inline std::int64_t mma_unsplit_blocks(int sm_count) {
  return std::int64_t(sm_count) * 7 / 5;
}

// The plan for g. Without split-K (the register-staged kernel), choose_mma_tile. With it: the
// tiles that suit OC/G, largest first; the first whose grid reaches mma_unsplit_blocks as it is
// or split at most 4 ways (each split 8 slices or more); else the smallest, split up to 16 ways
// towards that count. Measured on the H200, fp16 nhwc, ms (tile/splits):
//   res5 mb32ic512ih7oc512kh3ph1: 64x64/1 0.083, 64x128/2 0.061, 128x128/4 0.051 (chosen)
//   res4 mb32ic256ih14oc256kh3ph1: 64x128/1 0.055, 128x128/2 0.053 (chosen), 64x128/2 0.050
//   mb8ic512ih7oc512kh3ph1: 128x128/4 0.038, 64x128/4 0.032, 64x64/3 0.037, 64x64/4 0.030 (chosen)
//   mb1ic256ih14oc256kh3ph1: 128x128/4 0.024, 64x64/4 0.018, 64x64/9 0.015 (chosen)
inline MmaPlan choose_mma_plan(const Im2colGeometry& g, int element_bytes, int sm_count,
                               bool can_split) {
  if (!can_split) return {choose_mma_tile(g, sm_count), 1};
  const std::int64_t target = mma_unsplit_blocks(sm_count);
  const int slices = mma_slices(g, element_bytes);
  const MmaTileShape wide[] = {MmaTileShape::t128x128, MmaTileShape::t64x128, MmaTileShape::t64x64};
  const MmaTileShape narrow[] = {MmaTileShape::t64x128, MmaTileShape::t64x64};
  const MmaTileShape thin[] = {MmaTileShape::t32x64};
  const MmaTileShape* tiles = g.ocg > 64 ? wide : g.ocg > 32 ? narrow : thin;
  const int count = g.ocg > 64 ? 3 : g.ocg > 32 ? 2 : 1;
  for (int i = 0; i < count; ++i) {
    const std::int64_t blocks = mma_blocks(g, tiles[i]);
    if (blocks >= target) return {tiles[i], 1};
    const std::int64_t splits = (target + blocks - 1) / blocks;
    if (splits <= 4 && splits <= slices / 8 && splits * g.groups <= 65535)
      return {tiles[i], int(splits)};
  }
  const MmaTileShape last = tiles[count - 1];
  return {last, choose_split_k(mma_blocks(g, last), slices, g.groups, int(target), 8, 16)};
}

inline std::string mma_tile_text(MmaTileShape t, int element_bytes) {
  const MmaTileDims d = mma_tile_dims(t);
  const int warps = (d.bm / d.wm) * (d.bn / d.wn);
  return std::to_string(d.bm) + "x" + std::to_string(d.bn) + "x" +
         std::to_string(kMmaSliceBytes / element_bytes) + ", " + std::to_string(warps) +
         " warps of " + std::to_string(d.wm) + "x" + std::to_string(d.wn);
}

}  // namespace conv
