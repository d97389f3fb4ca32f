// Index math of the tensor-core kernels (variants 4 and 5 in conv/cuda/im2col_gemm_kernels.cu),
// shared by host and device so that tests/test_mma_index.cpp checks it on the CPU:
//   - which matrix element each lane holds in each register of mma.sync fragments (PTX ISA
//     "Matrix Fragments for mma.m16n8k16 with floating point type" and "... mma.m16n8k8"), and
//     the ldmatrix row addresses the kernels give so that ldmatrix delivers exactly those
//     fragments (PTX ISA "Warp-level matrix load instruction: ldmatrix");
//   - how a k slice of the operand tiles is split into 16-byte vectors and dealt to threads;
//   - the row-major column buffer of variant 5, col[group][m][k], k padded to whole vectors.
//
// Shared-memory operand tiles are row-major with k contiguous: row r of the weight tile is an
// output channel, row r of the column tile is an output pixel, and a k slice of a row is 64 bytes
// (32 fp16/bf16 values or 16 fp32 values) stored at a padded stride of 80 bytes. One mma k step
// covers 32 bytes of a row in every data type (k16 of 16-bit values, k8 of tf32 values), split
// into two 16-byte chunks; an 8x8 ldmatrix matrix is 8 rows x one 16-byte chunk. With 32-bit
// (tf32) values the same 16-byte chunk holds 4 values, and ldmatrix's .b16 distribution (lane l
// gets the 4-byte word l%4 of row l/4) lands each lane the tf32 fragment element it needs, so one
// addressing scheme serves all three types.
#pragma once

#include <cstdint>
#include <string>

#include "conv/im2col_index.hpp"

namespace conv {

// One element of a matrix fragment: row and column in the MMA's matrix (A: M x K, B: K x N,
// C: M x N).
struct MmaCoord {
  int row, col;
};

// mma.m16n8k16 with .f16/.bf16 operands: A element i (0..7; register i/2, half i%2) of a lane.
MYCONV_HD MmaCoord mma_m16n8k16_a(int lane, int i) {
  const int group = lane >> 2, tig = lane & 3;
  return {group + ((i & 2) ? 8 : 0), tig * 2 + (i & 1) + ((i & 4) ? 8 : 0)};
}
// B element i (0..3; register i/2, half i%2): row is k, column is n.
MYCONV_HD MmaCoord mma_m16n8k16_b(int lane, int i) {
  const int group = lane >> 2, tig = lane & 3;
  return {tig * 2 + (i & 1) + ((i & 2) ? 8 : 0), group};
}
// Accumulator element i (0..3) of m16n8k16 and m16n8k8 alike (f32 C/D).
MYCONV_HD MmaCoord mma_m16n8_c(int lane, int i) {
  const int group = lane >> 2, tig = lane & 3;
  return {group + ((i & 2) ? 8 : 0), tig * 2 + (i & 1)};
}
// mma.m16n8k8 with .tf32 operands: A element i (0..3, one register each).
MYCONV_HD MmaCoord mma_m16n8k8_tf32_a(int lane, int i) {
  const int group = lane >> 2, tig = lane & 3;
  return {group + ((i & 1) ? 8 : 0), tig + ((i & 2) ? 4 : 0)};
}
// B element i (0..1): row is k, column is n.
MYCONV_HD MmaCoord mma_m16n8k8_tf32_b(int lane, int i) {
  const int group = lane >> 2, tig = lane & 3;
  return {tig + (i ? 4 : 0), group};
}

// The shared-memory row a lane addresses in ldmatrix.x4, and which 16-byte chunk of the
// 32-byte k step. ldmatrix.x4: lanes 8j..8j+7 give the row addresses of matrix j, which lands in
// register j; lane l receives row l/4 of each matrix, bytes 4*(l%4)..+3.
struct LdmatrixRow {
  int row, chunk;
};
// A operand, one 16-row tile: matrices (rows 0-7, chunk 0), (8-15, 0), (0-7, 1), (8-15, 1), i.e.
// registers a0..a3 of both the f16/bf16 m16n8k16 and the tf32 m16n8k8 fragment.
MYCONV_HD LdmatrixRow ldmatrix_a_row(int lane) {
  return {lane & 15, lane >> 4};
}
// B operand, two 8-column tiles n0 = rows 0-7 and n1 = rows 8-15 (rows of the tile are n):
// matrices (n0, chunk 0), (n0, chunk 1), (n1, chunk 0), (n1, chunk 1), i.e. registers b0, b1 of
// tile n0 then b0, b1 of tile n1.
MYCONV_HD LdmatrixRow ldmatrix_b_row(int lane) {
  return {(lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1};
}

// Geometry of the shared-memory operand tiles, the same in bytes for every data type.
constexpr int kMmaSliceBytes = 64;  // one k slice of one row
constexpr int kMmaRowStride = 80;  // padded: 8 rows of one 16-byte column hit 8 distinct bank quads
constexpr int kMmaVecBytes = 16;   // one vector: the unit of global loads and shared stores
constexpr int kMmaVecsPerRow = kMmaSliceBytes / kMmaVecBytes;  // 4
constexpr int kMmaStepBytes = 32;                              // one mma k step

// Elements per 16-byte vector: 8 for 16-bit storage, 4 for fp32 (tf32) storage.
MYCONV_HD int mma_vec_elements(int element_bytes) {
  return kMmaVecBytes / element_bytes;
}

// The vectors of one k slice of the column tile (BN rows x 4 vectors) dealt to `threads` threads:
// each thread keeps one vector column kv (its 4..8 k values, hence its rows of the im2col table,
// are the same for all its pixels) and takes pixels mrow, mrow + threads/4, ... Along k (nhwc
// gathers and the column buffer: the 4 lanes of a pixel read its 64 contiguous bytes) or along m
// (nchw gathers: 32 lanes read 32 neighbouring pixels of one channel plane).
struct MmaVecSlot {
  int kv;    // vector within the row slice, 0..3
  int mrow;  // first row (pixel) of the thread; the j-th is mrow + j * threads / 4
};
MYCONV_HD MmaVecSlot mma_b_slot(int tid, int threads, bool along_k) {
  const int lanes_along_m = threads / kMmaVecsPerRow;
  if (along_k) return {tid % kMmaVecsPerRow, tid / kMmaVecsPerRow};
  return {tid / lanes_along_m, tid % lanes_along_m};
}
// Vector `id` of the weight tile's slice (BM rows x 4 vectors), row-major: id = row * 4 + kv.
MYCONV_HD MmaVecSlot mma_a_slot(int id) {
  return {id % kMmaVecsPerRow, id / kMmaVecsPerRow};
}

// The epilogue stages the output tile in shared memory, in the order in which it is stored:
// nchw, channel rows of BN pixels (pixels contiguous in the output); nhwc, pixel rows of BM
// channels (channels contiguous). Row strides are padded so that the fragment stores spread over
// the banks and every row stays 16-byte aligned.
MYCONV_HD constexpr int mma_out_stride(bool nhwc, int bm, int bn, int element_bytes) {
  return nhwc ? bm + (element_bytes == 4 ? 4 : 8) : bn + 8;
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
struct MmaTileDims {
  int bm, bn, wm, wn;
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
MYCONV_HD int mma_split_begin(int slices, int splits, int s) {
  return int(std::int64_t(slices) * s / splits);
}
inline int mma_slices(const Im2colGeometry& g, int element_bytes) {
  const int slice_k = kMmaSliceBytes / element_bytes;
  return (g.k + slice_k - 1) / slice_k;
}

// Split-K of a grid of `blocks` blocks (over `groups` groups) whose K has `slices` slices: 1
// where the grid has target_blocks or more, else enough splits to reach target_blocks, but each
// split min_slices long or more, at most max_splits, and groups * splits <= 65535 (grid z).
// Used by the tensor-core plans and by the FP32 CUDA-core kernels (variants 1-3).
inline int choose_split_k(std::int64_t blocks, int slices, int groups, int target_blocks,
                          int min_slices, int max_splits) {
  if (blocks <= 0 || blocks >= target_blocks) return 1;
  std::int64_t splits = (target_blocks + blocks - 1) / blocks;
  if (splits > slices / min_slices) splits = slices / min_slices;
  if (splits > max_splits) splits = max_splits;
  if (splits > 65535 / groups) splits = 65535 / groups;
  return splits > 1 ? int(splits) : 1;
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
