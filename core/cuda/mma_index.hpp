// Index math of the warp-level tensor-core kernels (mma.sync) that the suites share, host and
// device, so that tests/conv/test_mma_index.cpp checks it on the CPU. The device code that uses it
// is core/cuda/mma.cuh; its users are conv's im2col GEMM (conv/cuda/im2col_gemm_mma.cu, whose
// conv-specific index math is conv/cuda/mma_index.hpp) and the op suite's matmul
// (ops/cuda/matmul.cu).
//   - which matrix element each lane holds in each register of mma.sync fragments (PTX ISA
//     "Matrix Fragments for mma.m16n8k16 with floating point type" and "... mma.m16n8k8");
//   - the row addresses that make ldmatrix (and ldmatrix.trans) deliver exactly those fragments
//     (PTX ISA "Warp-level matrix load instruction: ldmatrix");
//   - the padded shared-memory strides that keep those loads free of bank conflicts;
//   - how a k slice is split into 16-byte vectors, how split-K divides the slices, and the order
//     of output tiles.
//
// Operand tiles with k contiguous (A always; B where its rows are n, as conv's column tile) are
// row-major, a k slice of a row 64 bytes (32 fp16/bf16 or 16 fp32 values) at a padded stride of
// 80 bytes. One mma k step covers 32 bytes of a row in every data type (k16 of 16-bit values, k8
// of tf32 values), split into two 16-byte chunks; an 8x8 ldmatrix matrix is 8 rows x one 16-byte
// chunk. With 32-bit (tf32) values the same chunk holds 4 values, and ldmatrix's .b16
// distribution (lane l gets the 4-byte word l%4 of row l/4) lands each lane the tf32 element it
// needs, so one addressing scheme serves all three types.
// A B tile whose rows are k (n contiguous: the matmul's row-major B[k][n]) is read with
// ldmatrix.trans for 16-bit values; 32-bit values have no transposing ldmatrix, so each lane
// reads its two tf32 elements per n8 tile with 4-byte shared loads.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define BENCH_HD __host__ __device__ __forceinline__
#else
#define BENCH_HD inline
#endif

namespace bench {

// Operand types of the tensor-core kernels: tf32 = fp32 storage, operands rounded to tf32 (mma
// m16n8k8); fp16 and bf16 = 16-bit storage (mma m16n8k16). FP32 accumulation throughout.
enum class MmaDtype { tf32, fp16, bf16 };
BENCH_HD constexpr int mma_dtype_bytes(MmaDtype t) {
  return t == MmaDtype::tf32 ? 4 : 2;
}

// One element of a matrix fragment: row and column in the MMA's matrix (A: M x K, B: K x N,
// C: M x N).
struct MmaCoord {
  int row, col;
};

// mma.m16n8k16 with .f16/.bf16 operands: A element i (0..7; register i/2, half i%2) of a lane.
BENCH_HD MmaCoord mma_m16n8k16_a(int lane, int i) {
  const int group = lane >> 2, tig = lane & 3;
  return {group + ((i & 2) ? 8 : 0), tig * 2 + (i & 1) + ((i & 4) ? 8 : 0)};
}
// B element i (0..3; register i/2, half i%2): row is k, column is n.
BENCH_HD MmaCoord mma_m16n8k16_b(int lane, int i) {
  const int group = lane >> 2, tig = lane & 3;
  return {tig * 2 + (i & 1) + ((i & 2) ? 8 : 0), group};
}
// Accumulator element i (0..3) of m16n8k16 and m16n8k8 alike (f32 C/D).
BENCH_HD MmaCoord mma_m16n8_c(int lane, int i) {
  const int group = lane >> 2, tig = lane & 3;
  return {group + ((i & 2) ? 8 : 0), tig * 2 + (i & 1)};
}
// mma.m16n8k8 with .tf32 operands: A element i (0..3, one register each).
BENCH_HD MmaCoord mma_m16n8k8_tf32_a(int lane, int i) {
  const int group = lane >> 2, tig = lane & 3;
  return {group + ((i & 1) ? 8 : 0), tig + ((i & 2) ? 4 : 0)};
}
// B element i (0..1): row is k, column is n.
BENCH_HD MmaCoord mma_m16n8k8_tf32_b(int lane, int i) {
  const int group = lane >> 2, tig = lane & 3;
  return {tig + (i ? 4 : 0), group};
}

// The shared-memory row a lane addresses in ldmatrix.x4, and which 16-byte chunk. ldmatrix.x4:
// lanes 8j..8j+7 give the row addresses of matrix j, which lands in register j; lane l receives
// row l/4 of each matrix, bytes 4*(l%4)..+3 (with .trans: the 16-bit values (2*(l%4), l/4) and
// (2*(l%4)+1, l/4) of the matrix as stored).
struct LdmatrixRow {
  int row, chunk;
};
// A operand, one 16-row tile, k contiguous (chunk: which half of the 32-byte k step): matrices
// (rows 0-7, chunk 0), (8-15, 0), (0-7, 1), (8-15, 1), i.e. registers a0..a3 of both the
// f16/bf16 m16n8k16 and the tf32 m16n8k8 fragment.
BENCH_HD LdmatrixRow ldmatrix_a_row(int lane) {
  return {lane & 15, lane >> 4};
}
// B operand stored with rows n and k contiguous, two 8-column tiles n0 = rows 0-7 and n1 = rows
// 8-15: matrices (n0, chunk 0), (n0, chunk 1), (n1, chunk 0), (n1, chunk 1), i.e. registers b0,
// b1 of tile n0 then b0, b1 of tile n1.
BENCH_HD LdmatrixRow ldmatrix_b_row(int lane) {
  return {(lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1};
}
// B operand stored with rows k and n contiguous (16-bit values, ldmatrix.x4.trans), one k16 step
// of two 8-column tiles (chunk: which 16 bytes = 8 columns): matrices (k 0-7, n0), (k 8-15, n0),
// (k 0-7, n1), (k 8-15, n1), i.e. registers b0, b1 of tile n0 then b0, b1 of tile n1.
BENCH_HD LdmatrixRow ldmatrix_trans_b_row(int lane) {
  return {lane & 15, lane >> 4};
}

// Geometry of k-contiguous operand tiles, the same in bytes for every data type.
constexpr int kMmaSliceBytes = 64;  // one k slice of one row
constexpr int kMmaRowStride = 80;  // padded: 8 rows of one 16-byte column hit 8 distinct bank quads
constexpr int kMmaVecBytes = 16;   // one vector: the unit of global loads and shared stores
constexpr int kMmaVecsPerRow = kMmaSliceBytes / kMmaVecBytes;  // 4
constexpr int kMmaStepBytes = 32;                              // one mma k step

// Elements per 16-byte vector: 8 for 16-bit storage, 4 for fp32 (tf32) storage.
BENCH_HD constexpr int mma_vec_elements(int element_bytes) {
  return kMmaVecBytes / element_bytes;
}
// k values of one slice (a tile's BK): 32 for 16-bit values, 16 for tf32.
BENCH_HD constexpr int mma_slice_k(int element_bytes) {
  return kMmaSliceBytes / element_bytes;
}
// k values of one mma step: 16 (m16n8k16) or 8 (tf32 m16n8k8).
BENCH_HD constexpr int mma_step_k(int element_bytes) {
  return kMmaStepBytes / element_bytes;
}

// Row stride in bytes of a B tile with rows k and `bn` columns n contiguous: padded by 16 bytes
// for 16-bit values (the 8 rows of an ldmatrix.trans matrix, 16 bytes each, start in 8 distinct
// bank quads: stride/16 odd) and by 8 words for 32-bit ones (the 4-byte loads of lanes (k = tig,
// n = group) hit 32 distinct banks: stride = 8 mod 32 words). 16-byte aligned rows either way.
BENCH_HD constexpr int mma_k_rows_stride(int bn, int element_bytes) {
  return element_bytes == 2 ? bn * 2 + 16 : (bn + 8) * 4;
}

// Row stride in elements of a shared tile of `cols` output columns staged row-major by the
// epilogue (the fragment pairs of a warp hit distinct banks; rows stay 16-byte aligned).
BENCH_HD constexpr int mma_staging_stride(int cols) {
  return cols + 8;
}

// A vector of a k slice: its column kv within the row's 4 (k = kv * vector length) and its row.
struct MmaVecSlot {
  int kv;    // vector within the row slice, 0..3
  int mrow;  // row in the tile
};
// Vector `id` of a k-contiguous tile's slice (rows x 4 vectors), row-major: id = row * 4 + kv, so
// that the 4 consecutive threads of a row read its 64 contiguous bytes.
BENCH_HD MmaVecSlot mma_a_slot(int id) {
  return {id % kMmaVecsPerRow, id / kMmaVecsPerRow};
}

// A warp tiling of a BM x BN block tile into warps of WM x WN outputs (MI x NI mma tiles of 16x8).
struct MmaTileDims {
  int bm, bn, wm, wn;
};
constexpr int mma_warps(const MmaTileDims& d) {
  return (d.bm / d.wm) * (d.bn / d.wn);
}

// Output tile t of a tiles_m x tiles_n grid -> (tile row tm, tile column tn), in groups of
// kGroupRows tile rows taken column-major, so that the blocks running at once share A's and B's
// tiles in L2 (a bijection onto the grid).
template <int kGroupRows>
BENCH_HD void grouped_tile_coords(int t, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int per_group = kGroupRows * tiles_n;
  const int group = t / per_group, first = group * kGroupRows;
  const int rows = tiles_m - first < kGroupRows ? tiles_m - first : kGroupRows;
  const int r = t - group * per_group;
  tm = first + r % rows;
  tn = r / rows;
}

// Split-K: split s of `splits` takes slices [mma_split_begin(s), mma_split_begin(s + 1)) of
// `slices`: balanced to within one slice, none empty while splits <= slices.
BENCH_HD int mma_split_begin(int slices, int splits, int s) {
  return int(std::int64_t(slices) * s / splits);
}

// Split-K of a grid of `blocks` blocks (over `groups` groups, each split a grid z index) whose K
// has `slices` slices: 1 where the grid has target_blocks or more, else enough splits to reach
// target_blocks, but each split min_slices long or more, at most max_splits, and
// groups * splits <= 65535 (grid z).
inline int choose_split_k(std::int64_t blocks, int slices, int groups, int target_blocks,
                          int min_slices, int max_splits) {
  if (blocks <= 0 || blocks >= target_blocks) return 1;
  std::int64_t splits = (target_blocks + blocks - 1) / blocks;
  if (splits > slices / min_slices) splits = slices / min_slices;
  if (splits > max_splits) splits = max_splits;
  if (splits > 65535 / groups) splits = 65535 / groups;
  return splits > 1 ? int(splits) : 1;
}

}  // namespace bench
