// Variant 13 of im2col_gemm_cuda: a 1x1 convolution in nhwc (stride 1, no padding, one group) as
// one streaming GEMM Y[N*H*W][OC] = X[N*H*W][IC] W[OC][IC]^T on mma.sync, for the layers whose
// time is their bytes: few input or output channels over many pixels (MobileNet-v2's project and
// expand layers, Inception-v3's branch 1x1s). One kernel, no repack, no shared-memory staging of
// the input:
//   - each warp owns 16-row groups of the input (pixels); every lane reads its share of a row
//     straight from global memory into the registers of the MMA's A fragment, 16 bytes at a time,
//     so a quad of lanes reads 64 contiguous bytes of a row (one "chunk" of k);
//   - that works because the sum over k does not care about its order: lane t of a quad holds
//     logical k (2t, 2t+1, 2t+8, 2t+9) of an m16n8k16 step (t, t+4 of a tf32 m16n8k8 step), and
//     the kernel gives those the physical k 8t+4s .. 8t+4s+3 of step s in the chunk (4t+2s,
//     4t+2s+1 in tf32); the weights' fragments take the same order, so each lane reads its B
//     registers of both steps as one 16-byte shared-memory load;
//   - the block's weights sit in shared memory, tf32 rounded there once; the input is rounded in
//     the registers (cvt.rna), so tf32 needs no rounding copy;
//   - FP32 accumulators in runs of column tiles of 8 (4 in 16-bit types, 2 in tf32), whose columns
//     are permuted so that a lane holds the run's outputs of a row contiguous, 16 bytes
//     (thin_1x1_output_column), converted and stored straight to global memory: a quad of lanes
//     writes 64 contiguous bytes of a row, one store each;
//   - a warp's next rows are loaded before it multiplies the current ones (thin_1x1_prefetch).
// Host-only, no CUDA dependency: the variant choice (conv/cuda/variant_choice.cpp) and
// tests/conv/test_variant_choice.cpp ask it on the CPU. Kernels: conv/cuda/thin_1x1_kernels.cu.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "conv/indexing.hpp"  // MYCONV_HD
#include "conv/problem.hpp"
#include "core/dtype.hpp"

namespace conv {

inline constexpr int kThinChunkBytes = 64;  // k bytes per row a quad reads at once (16 a lane)
inline constexpr int kThinMaxChunks = 8;    // IC * bytes <= 512: the A fragments of a warp
inline constexpr int kThinThreads = 256;    // 8 warps a block
inline constexpr int kThinRowsPerGroup = 16;
// The block's weights in shared memory: OC rows of the padded chunks (thin_1x1_row_vectors).
inline constexpr std::size_t kThinMaxSharedBytes = 64 * 1024;

// 16-byte vectors per weight row in shared memory: 4 a chunk, the chunk count made odd so that a
// row is 4 vectors past a multiple of 8 (128 bytes). A warp's 16-byte loads (rows g = 0..7 of a
// column tile, vectors t = 0..3) are served 8 lanes a phase; rows g and g + 1 then fall on
// disjoint halves of the 32 banks.
MYCONV_HD constexpr int thin_1x1_row_vectors(int chunks) {
  return 4 * (chunks | 1);
}

// The kernel's compiled chunk capacities (template instances): a problem runs on the smallest
// that holds its chunks.
MYCONV_HD constexpr int thin_1x1_chunk_capacity(int chunks) {
  return chunks <= 1 ? 1 : chunks <= 2 ? 2 : chunks <= 4 ? 4 : 8;
}
// A warp takes one 16-row group at a time. Two (twice the bytes in flight; compiled up to 2
// chunks, forced by MYCONV_THIN_1X1_GROUPS=2) measured slower on the H200
// (results/h200/20261128_conv_thin_1x1/, v13_groups1 and v13_groups2 files): 1.01-1.26x the time
// on 2-chunk layers (their registers leave fewer warps), 0.99-1.05x on 1-chunk ones.
inline constexpr int kThinGroupsPerWarp = 1;
// The compiled (capacity, groups) pairs.
MYCONV_HD constexpr bool thin_1x1_groups_allowed(int capacity, int groups) {
  return groups == 1 || (groups == 2 && capacity <= 2);
}

// Whether a warp loads its next task's rows before it multiplies the current ones (twice the A
// registers: not in the 8-chunk kernel).
MYCONV_HD constexpr bool thin_1x1_prefetch(int capacity) {
  return capacity <= 4;
}

// The output channel of the MMA's column g (0..7) of tile e in a run of q tiles (1, 2 or 4) from
// column n0: lane t's accumulators of the run (columns 2t, 2t + 1 of each tile) are then the 2q
// contiguous outputs n0 + 2qt .. n0 + 2qt + 2q - 1, one store (16 bytes where q = 4 in 16-bit
// types). The weights' rows follow the same map.
MYCONV_HD constexpr int thin_1x1_output_column(int n0, int q, int e, int g) {
  return n0 + 2 * q * (g / 2) + 2 * e + g % 2;
}

// 64-byte k chunks of a row of p's input (the last one zero-filled past IC).
inline int thin_1x1_chunks(const Problem& p) {
  return (p.ic * bench::storage_bytes(p.dtype) + kThinChunkBytes - 1) / kThinChunkBytes;
}
// Shared memory of the block's weights: OC rows at thin_1x1_row_vectors' pitch.
inline std::size_t thin_1x1_smem_bytes(int oc, int chunks) {
  return std::size_t(oc) * std::size_t(thin_1x1_row_vectors(chunks)) * 16;
}

struct Thin1x1Plan {
  std::int64_t m = 0;  // GEMM rows: N*H*W pixels
  int n = 0, k = 0;    // OC, IC
  int chunks = 0;      // 64-byte k chunks of a row (the last one zero-filled past IC)
  int capacity = 0;    // the kernel instance's chunks (thin_1x1_chunk_capacity)
  int groups_per_warp = 0;
  std::int64_t warp_tasks = 0;  // tasks of groups_per_warp 16-row groups
  int blocks = 0;               // grid: min(blocks the tasks fill, resident blocks)
  std::size_t smem_bytes = 0;
  // Launched with programmatic dependent launch (core/cuda/pdl.cuh; the caller sets it).
  bool pdl = false;
};

// Empty where variant 13 computes p (on an sm_80+ device with the mma.sync build: that is the
// caller's question), else why not. Never throws.
inline std::string thin_1x1_unsupported_reason(const Problem& p) {
  if (p.dtype == DataType::fp32) return "tf32, fp16 and bf16 only (mma.sync)";
  if (p.layout != Layout::nhwc) return "nhwc only (its pixels are the GEMM's rows as they lie)";
  if (p.is_3d() || p.kh != 1 || p.kw != 1 || p.g != 1) return "a 2D 1x1 filter with one group only";
  if (p.sh != 1 || p.sw != 1 || p.ph != 0 || p.pw != 0 || p.oh() != p.ih || p.ow() != p.iw)
    return "stride 1 and no padding only (the input is the GEMM's operand as it lies)";
  const int bytes = bench::storage_bytes(p.dtype);
  if (p.ic * bytes % 16 != 0) return "IC in whole 16-byte vectors only (a lane's load)";
  if (p.oc % 8 != 0) return "OC a multiple of 8 only (the MMA's column tile)";
  if (std::int64_t(p.ic) * bytes > std::int64_t(kThinMaxChunks) * kThinChunkBytes)
    return "IC of at most " + std::to_string(kThinMaxChunks * kThinChunkBytes / bytes) +
           " values (" + std::to_string(kThinMaxChunks * kThinChunkBytes) +
           " bytes a row: the A fragments a warp holds)";
  const std::size_t smem = thin_1x1_smem_bytes(p.oc, thin_1x1_chunks(p));
  if (smem > kThinMaxSharedBytes)
    return "the weights need " + std::to_string(smem) + " bytes of shared memory (at most " +
           std::to_string(kThinMaxSharedBytes) + ")";
  const std::int64_t pixels = std::int64_t(p.mb) * p.ih * p.iw;
  if (pixels > 2147483647 - 64) return "more than 2^31 pixels";
  return "";
}

// Where --variant auto takes variant 13 (variant_choice.hpp's rule 1a), from the H200 runs of
// every stride-1 unpadded 1x1 layer of the model grids in nhwc, variant 13 beside the variants
// auto ran there before (results/h200/20261128_conv_thin_1x1/, thin.md): in fp16/bf16 it was
// faster than the best of variants 6, 10 and 11 on every layer with IC <= 144 (1.27-4.2x) or
// OC <= 32 (1.23-1.35x), and on the five others (IC >= 192, OC >= 48) slower on four (0.70-0.92x)
// and 1.03x on one; in tf32, where OC <= 2 IC, 1.45-2.7x faster than the best of variants 6 and
// 10; on the expands (OC 6x IC) 0.47-0.92x, its FP32 outputs twice the 16-bit bytes.
inline bool thin_1x1_preferred(const Problem& p) {
  if (p.dtype == DataType::tf32) return p.oc <= 2 * p.ic;
  return p.ic <= 144 || p.oc <= 32;
}

// The plan for p (thin_1x1_unsupported_reason(p) empty) with `resident` blocks of the instance
// on the whole device (SMs x blocks per SM; the caller asks the occupancy calculator); groups 1
// or 2 forces the 16-row groups a warp takes (where compiled: thin_1x1_groups_allowed), 0 the
// rule's.
inline Thin1x1Plan thin_1x1_plan(const Problem& p, std::int64_t resident, int groups = 0) {
  Thin1x1Plan t;
  t.m = std::int64_t(p.mb) * p.ih * p.iw;
  t.n = p.oc;
  t.k = p.ic;
  t.chunks = thin_1x1_chunks(p);
  t.capacity = thin_1x1_chunk_capacity(t.chunks);
  t.groups_per_warp = thin_1x1_groups_allowed(t.capacity, groups) ? groups : kThinGroupsPerWarp;
  const std::int64_t rows = std::int64_t(kThinRowsPerGroup) * t.groups_per_warp;
  t.warp_tasks = (t.m + rows - 1) / rows;
  const int warps = kThinThreads / 32;
  const std::int64_t fill = (t.warp_tasks + warps - 1) / warps;
  const std::int64_t most = resident > 0 ? resident : 1;
  t.blocks = int(fill < most ? fill : most);
  t.smem_bytes = thin_1x1_smem_bytes(p.oc, t.chunks);
  return t;
}

// "m401408 n16 k32: 1 chunk of 64 bytes, 2 groups of 16 rows a warp, 1056 blocks of 256".
inline std::string thin_1x1_plan_name(const Thin1x1Plan& t) {
  return "m" + std::to_string(t.m) + " n" + std::to_string(t.n) + " k" + std::to_string(t.k) +
         ": " + std::to_string(t.chunks) + (t.chunks == 1 ? " chunk" : " chunks") +
         " of 64 bytes, " + std::to_string(t.groups_per_warp) +
         (t.groups_per_warp == 1 ? " group" : " groups") + " of 16 rows a warp, " +
         std::to_string(t.blocks) + " blocks of " + std::to_string(kThinThreads);
}

}  // namespace conv
