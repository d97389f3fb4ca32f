// The plan of the Hopper GEMM engine (core/cuda/gemm/gemm_sm90.cu): which problems it takes, its
// tile and pipeline depth, the shared-memory layout of a stage, the operand addresses the MMAs
// read, and the order in which the persistent blocks walk the output tiles. Host and device code
// with no CUDA dependency, so that tests/core/test_gemm_config.cpp checks it on the CPU.
//
// The GEMM: C[b][m][n] = epilogue(sum_k A[b][m][k] B[b][k][n]), A and B row-major and contiguous
// (A K-major, B MN-major), fp16 or bf16, FP32 accumulation; or B stored [b][n][k] (K-major, the
// natural wgmma "TN" layout: a 1x1 convolution's weights in nhwc), and A one matrix that every
// batch reads (a 1x1 convolution's weights in nchw). A tile is kBm x BN of C (BN 128 or 256), k
// in blocks of kBk = 64 values (128 bytes: one swizzle row). A stage holds A's block (kBm rows of
// 128 bytes, one tensor copy) and B's (BN / 64 boxes, each one tensor copy of kBk * 128 bytes: 64
// k rows x 64 n, or with K-major B 64 n rows x 64 k), all 128-byte swizzled
// (core/cuda/wgmma_desc.hpp). tf32 (FP32 storage, B K-major only: wgmma reads 32-bit operands
// K-major) keeps every byte offset: a block is 32 k values of 4 bytes, a k step 8 values (32
// bytes, as 16 values of 2), with the same tiles and schedules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/cuda/mma_index.hpp"  // BENCH_HD
#include "core/cuda/wgmma_desc.hpp"

namespace bench::gemm {

inline constexpr int kBm = 128;          // tile rows: two consumer warpgroups of 64
inline constexpr int kBk = 64;           // k values per stage: one 128-byte row of 16-bit values
inline constexpr int kBlockBytes = 128;  // bytes of k per stage and row, any type
inline constexpr int kBoxN = 64;         // n values per box of B: one 128-byte row
inline constexpr int kStepK = 16;        // k of one wgmma (16-bit types)
inline constexpr int kThreads = 384;     // a producer warpgroup and two consumer warpgroups
inline constexpr int kElementBytes = 2;
inline constexpr int kMaxStages = 6;
inline constexpr int kGroupRows = 8;  // tile order: groups of 8 tile rows (see gemm_tile)
// Shared memory a block may opt in to on Hopper (cudaDevAttrMaxSharedMemoryPerBlockOptin).
inline constexpr std::size_t kSmemLimit = 232448;
inline constexpr std::size_t kAlignSlack = 1024;   // the swizzled tiles need 1024-byte alignment
inline constexpr std::size_t kBarrierBytes = 256;  // full and empty barriers, 8 bytes each

// kBm rows by default; the 64-row tile (gemm_plan's bm 64: one consumer warpgroup) halves A.
BENCH_HD constexpr int a_block_bytes(int bm = kBm) {
  return bm * kBk * kElementBytes;
}  // 16 KB
BENCH_HD constexpr int b_box_bytes() {
  return kBk * kBoxN * kElementBytes;
}  // 8 KB
BENCH_HD constexpr int stage_bytes(int bn, int bm = kBm) {
  return a_block_bytes(bm) + bn / kBoxN * b_box_bytes();
}
// The most stages that fit beside the alignment slack and the barriers, at most kMaxStages:
// 4 for BN 256 (48 KB each), 6 for BN 128 (32 KB each); the 64 x 64 tile (16 KB a stage) up to
// kMaxStagesSmall, 14, as cuBLASLt's 64 x 64 kernels keep 13: one warpgroup's k blocks are
// short, so more of them must be in flight to cover the copies' latency.
inline constexpr int kMaxStagesSmall = 14;
BENCH_HD constexpr int gemm_stages(int bn, int bm = kBm) {
  const int fit =
      int((kSmemLimit - kAlignSlack - kBarrierBytes) / std::size_t(stage_bytes(bn, bm)));
  const int cap = bm == kBm ? kMaxStages : kMaxStagesSmall;
  return fit < cap ? fit : cap;
}
BENCH_HD constexpr std::size_t gemm_smem_bytes(int bn, int bm = kBm) {
  return std::size_t(gemm_stages(bn, bm)) * std::size_t(stage_bytes(bn, bm)) + kAlignSlack +
         kBarrierBytes;
}

// Byte offsets inside a stage (1024-byte aligned) of what the copies write and the MMAs read.
// B's box j (n0 + 64 j .. + 63, all kBk k rows) follows A's block.
BENCH_HD constexpr int b_box_offset(int j, int bm = kBm) {
  return a_block_bytes(bm) + j * b_box_bytes();
}
// Consumer warpgroup `half` (0 or 1) multiplies rows 64 half .. 64 half + 63 of A's block; k step
// `step` (0..3) starts 32 bytes further along the 128-byte rows (K-major: inside the swizzle row).
BENCH_HD constexpr int a_operand_offset(int half, int step) {
  return half * 64 * int(sm90::kSw128RowBytes) + step * kStepK * kElementBytes;
}
// B (MN-major): k step `step` starts 16 k rows further down every box (two 8-row groups), and
// the operand's 64-wide column blocks are the boxes, b_box_bytes() apart (the descriptor's LBO).
BENCH_HD constexpr int b_operand_offset(int step, int bm = kBm) {
  return b_box_offset(0, bm) + step * kStepK * int(sm90::kSw128RowBytes);
}
// B K-major: the boxes are 64 n rows of 128 bytes each, so B's BN rows follow each other, 8-row
// groups 1024 bytes apart (the descriptor's SBO) across the boxes as inside one; k step `step`
// starts 32 bytes further along the rows, as A's does.
BENCH_HD constexpr int b_k_major_operand_offset(int step, int bm = kBm) {
  return b_box_offset(0, bm) + step * kStepK * kElementBytes;
}

// The epilogue's transpose inside a quad of lanes (q = lane % 4), in 4 rounds r: lane q holds
// pair q of column blocks 0..3 and ends with pairs 0..3 of block q. In round r lane q reads lane
// quad_source_lane(q, r), which sends its pair of block quad_send_block(source, r), i.e. of block
// q; what lane q gets is its pair number `source`.
BENCH_HD constexpr int quad_source_lane(int q, int r) {
  return (q + r) & 3;
}
BENCH_HD constexpr int quad_send_block(int q, int r) {
  return (q - r) & 3;
}

// The problem in the engine's terms.
struct GemmShape {
  std::int64_t batch = 1, m = 0, n = 0, k = 0;
  bool a_shared = false;   // A is one [m][k] matrix that every batch reads (batch stride 0)
  bool b_k_major = false;  // B stored [batch][n][k] (K-major) instead of [batch][k][n]
  int element_bytes = 2;   // 2: fp16, bf16; 4: tf32 (FP32 storage; B K-major)
};

// k values per block (a stage's 128-byte rows): 64 of 16-bit types, 32 of tf32.
BENCH_HD constexpr int block_k(int element_bytes) {
  return kBlockBytes / element_bytes;
}

// Empty when the engine runs s (16-bit values of element_bytes bytes), else why not. The
// tensor copies need every global stride a multiple of 16 bytes (rows of A: k values; of B: n
// values, or k where B is K-major; of C: n values) and below 2^40 bytes; coordinates are int.
inline std::string gemm_unsupported_reason(const GemmShape& s, int element_bytes) {
  if (element_bytes != 2 && element_bytes != 4) return "fp16, bf16 or tf32 only";
  if (element_bytes != s.element_bytes) return "the shape's element size is not the type's";
  if (element_bytes == 4 && !s.b_k_major)
    return "tf32 reads B K-major ([n][k] storage) only: wgmma transposes 16-bit operands only";
  if (s.batch < 1 || s.m < 1 || s.n < 1 || s.k < 1) return "empty problem";
  if (s.k % 8 != 0)
    return "k must be a multiple of 8 (rows of A in whole 16-byte units for the tensor copy)";
  if (s.n % 8 != 0) return "n must be a multiple of 8 (rows of C in whole 16-byte units)";
  constexpr std::int64_t kMaxInt = 2147483647 - 1024;
  if (s.m > kMaxInt || s.n > kMaxInt || s.k > kMaxInt || s.batch > kMaxInt)
    return "a dimension beyond the int coordinates of the tensor copies";
  constexpr double kMaxStride = 1099511627776.0;  // 2^40 bytes
  if (double(s.m) * double(s.k) * element_bytes >= kMaxStride ||
      double(s.k) * double(s.n) * element_bytes >= kMaxStride)
    return "a matrix of 2^40 bytes or more (the tensor copy's stride limit)";
  return "";
}

// How the two consumer warpgroups share the work. cooperative: both on every tile, 64 rows each
// (128 x BN), the epilogue after the tile's mainloop on both. pingpong (CUTLASS's name): each
// warpgroup owns every other tile of the block, all 128 x 128 of it (two m64 MMAs per k step),
// and the mainloops take turns through two named barriers, so that one warpgroup's epilogue runs
// while the other's MMAs do; 128x128 tiles only (its accumulators: 128 a thread).
enum class GemmSchedule { cooperative, pingpong };

struct GemmPlan {
  GemmSchedule schedule = GemmSchedule::cooperative;
  int bm = kBm;      // tile rows: 128 (two consumer warpgroups), or 64 (one; 64 x 64 tiles)
  int bn = 0;        // tile columns: 128 or 256, or 64 with bm 64
  int bk = kBk;      // k values per block: block_k(element bytes), 64 or 32 (tf32)
  int stages = 0;    // shared-memory stages of the copy pipeline
  int k_blocks = 0;  // k blocks of bk values, the last one zero-filled past k
  int tiles_m = 0, tiles_n = 0;
  std::int64_t tiles = 0;  // over the whole batch
  // Split-K: each tile's k blocks in `splits` runs of split_k_blocks (the last run shorter, none
  // empty); a work unit is (tile, split). With splits > 1 every unit writes its FP32 partial tile
  // to the workspace; the splits are then summed in split order (the same sum on every run),
  // through the epilogue: by a second kernel, or with reduce_in_kernel by each tile's last unit
  // in the GEMM's kernel (a counter a tile in the workspace says which unit is last: one launch,
  // no second pass over the partials; gemm_can_sum_in_kernel's plans only).
  int splits = 1;
  int split_k_blocks = 0;
  bool reduce_in_kernel = false;
  std::int64_t units = 0;  // tiles * splits
  int grid = 0;            // persistent blocks: min(units, SMs)
  std::size_t smem_bytes = 0;
  // Launched with programmatic dependent launch (core/cuda/pdl.cuh): each kernel may start while
  // the stream's kernel before it ends, and touches global memory only once that one is done.
  bool pdl = false;
};

inline constexpr int kMaxSplits = 16;

// Whether the kernel sums p's splits itself where asked (GemmPlan::reduce_in_kernel): cooperative
// tiles of 64 or 128 columns (the 256-wide tile's 128 accumulators a thread leave no registers
// for the sum's loads; a ping-pong warpgroup owns a whole tile).
BENCH_HD constexpr bool gemm_can_sum_in_kernel(GemmSchedule schedule, int bn) {
  return schedule == GemmSchedule::cooperative && bn <= 128;
}
inline constexpr int kMinSplitKBlocks = 4;  // k blocks a split keeps at least (pipeline fill)

// Split-K's rule: split where the tiles fill at most half the SMs, into as many splits as fill
// them (sm_count / tiles), each at least kMinSplitKBlocks k blocks long, at most kMaxSplits, and
// only where the partials' traffic (written and read back in FP32) is at most the operands'
// bytes. Written from one measurement: m8 n4096 k4096 on 32 tiles of 128x128 (of 132
// SMs) took 2.4x cuBLASLt's time, where the time is the B operand's 32 MB read; b8 m512 n512 k512
// (64 tiles) stays unsplit, since its partials would move four times its operands' bytes.
inline int gemm_split_rule(const GemmShape& s, std::int64_t tiles, int k_blocks, std::int64_t sms) {
  if (tiles * 2 > sms) return 1;
  std::int64_t splits = sms / tiles;
  if (splits > k_blocks / kMinSplitKBlocks) splits = k_blocks / kMinSplitKBlocks;
  if (splits > kMaxSplits) splits = kMaxSplits;
  if (splits < 2) return 1;
  const double partial_bytes = double(splits) * double(s.batch) * double(s.m) * double(s.n) * 4 * 2;
  const double operand_bytes = double(s.batch) * (double(s.m) + double(s.n)) * double(s.k) * 2;
  return partial_bytes <= operand_bytes ? int(splits) : 1;
}

// Tile and grid for sm_count SMs. The rule: 128x256 (twice the MMA work per byte of A staged)
// wherever its tiles give every SM at least one, else 128x128 (twice the tiles; a small problem
// leaves fewer SMs idle); then split-K by gemm_split_rule. A tile rule to be replaced by
// measurements: variants 7 and 8 of the op suite's matmul force each tile to time them.
// bn 128 or 256 overrides the tile; splits 1 turns split-K off, splits > 1 forces that many
// (at most k_blocks; fewer where the last runs would be empty), 0 leaves it to the rule. The
// ping-pong schedule (gemm_auto_plan chooses it) takes the 128x128 tile. bm 64 asks for the
// 64 x 64 tile (bn is then 64; cooperative, bf16: gemm_sm90 checks), for problems of few
// 128-row tiles.
inline GemmPlan gemm_plan(const GemmShape& s, int sm_count, int bn = 0, int splits = 0,
                          GemmSchedule schedule = GemmSchedule::cooperative, int bm = kBm) {
  GemmPlan p;
  p.schedule = schedule;
  p.bm = bm == 64 ? 64 : kBm;
  const std::int64_t sms = sm_count > 0 ? sm_count : 1;
  const auto tiles_of = [&](int w) {
    return (s.m + p.bm - 1) / p.bm * ((s.n + w - 1) / w) * s.batch;
  };
  p.bn = p.bm == 64                           ? 64
         : schedule == GemmSchedule::pingpong ? 128
         : bn == 128 || bn == 256             ? bn
         : tiles_of(256) >= sms               ? 256
                                              : 128;
  p.stages = gemm_stages(p.bn, p.bm);
  p.smem_bytes = gemm_smem_bytes(p.bn, p.bm);
  p.bk = block_k(s.element_bytes);
  p.k_blocks = int((s.k + p.bk - 1) / p.bk);
  p.tiles_m = int((s.m + p.bm - 1) / p.bm);
  p.tiles_n = int((s.n + p.bn - 1) / p.bn);
  p.tiles = tiles_of(p.bn);
  int want = splits > 0 ? splits : gemm_split_rule(s, p.tiles, p.k_blocks, sms);
  if (want > p.k_blocks) want = p.k_blocks;
  if (want < 1) want = 1;
  p.split_k_blocks = (p.k_blocks + want - 1) / want;
  p.splits = (p.k_blocks + p.split_k_blocks - 1) / p.split_k_blocks;  // no empty split
  p.units = p.tiles * p.splits;
  p.grid = int(p.units < sms ? p.units : sms);
  return p;
}

// The automatic choice (myops matmul variant 4), from two H200 runs of variants 4-9 (the second
// committed: results/h200/20261126_gemm_engine_variants/, speed against cuBLASLt's). Split-K on
// the 128x256 tile where that gives more splits than 128x128: m8 n4096 k4096 0.64-0.65 (fp16)
// and 0.61-0.62 (bf16) against 0.55-0.56 and 0.53 in both runs. The ping-pong schedule where
// 128x128 tiles make 16 waves or more: it measured 1.14 of cuBLASLt on m4096 n11008 k4096 bf16
// in both runs, where the cooperative schedule measured 0.98; elsewhere the two schedules differ
// by less than the spread between separate runs of one plan (up to 15%: the variants after 4 run
// in later processes than cuBLASLt's), so the rule is provisional until both are timed in one
// process. Else gemm_plan's rule.
inline GemmPlan gemm_auto_plan(const GemmShape& s, int sm_count) {
  const std::int64_t sms = sm_count > 0 ? sm_count : 1;
  const std::int64_t tiles128 = (s.m + kBm - 1) / kBm * ((s.n + 127) / 128) * s.batch;
  if (tiles128 >= 16 * sms) return gemm_plan(s, sm_count, 128, 0, GemmSchedule::pingpong);
  const GemmPlan rule = gemm_plan(s, sm_count);
  if (rule.splits > 1 && rule.bn == 128) {
    const GemmPlan wide = gemm_plan(s, sm_count, 256);
    if (wide.splits > rule.splits) return wide;
  }
  return rule;
}

// Bytes of FP32 partials the plan needs (0 without split-K): splits x batch x m x n floats.
inline std::size_t gemm_partial_bytes(const GemmShape& s, const GemmPlan& p) {
  if (p.splits <= 1) return 0;
  return std::size_t(p.splits) * std::size_t(s.batch) * std::size_t(s.m) * std::size_t(s.n) * 4;
}
// Bytes of the tiles' counters after the partials (reduce_in_kernel with split-K: one 32-bit
// counter a tile, rounded up to 16 bytes), else 0.
inline std::size_t gemm_counter_bytes(const GemmPlan& p) {
  if (p.splits <= 1 || !p.reduce_in_kernel) return 0;
  return (std::size_t(p.tiles) * 4 + 15) / 16 * 16;
}
// The workspace: the partials, then the counters.
inline std::size_t gemm_workspace_bytes(const GemmShape& s, const GemmPlan& p) {
  return gemm_partial_bytes(s, p) + gemm_counter_bytes(p);
}

// The k blocks [begin, end) of split `split` (0 <= split < splits).
struct KRange {
  int begin, end;
};
BENCH_HD KRange gemm_split_range(int split, int split_k_blocks, int k_blocks) {
  const int begin = split * split_k_blocks;
  const int end = begin + split_k_blocks < k_blocks ? begin + split_k_blocks : k_blocks;
  return {begin, end};
}

// "128x256x64 tile, 4 stages, 132 persistent blocks over 512 tiles[ x 4 k splits]".
inline std::string gemm_plan_name(const GemmPlan& p) {
  return std::to_string(p.bm) + "x" + std::to_string(p.bn) + "x" + std::to_string(p.bk) +
         " tile, " + std::to_string(p.stages) + " stages, " +
         (p.schedule == GemmSchedule::pingpong ? "ping-pong warpgroups, " : "") +
         std::to_string(p.grid) + " persistent blocks over " + std::to_string(p.tiles) + " tiles" +
         (p.splits > 1
              ? " x " + std::to_string(p.splits) + " k splits of " +
                    std::to_string(p.split_k_blocks) +
                    (p.reduce_in_kernel ? " blocks (FP32 partials, summed in split order by each "
                                          "tile's last unit)"
                                        : " blocks (FP32 partials, reduced in split order)")
              : "");
}

// Tile t (0 <= t < tiles_m * tiles_n * batches) of the persistent walk: batch after batch; inside
// a batch, groups of kGroupRows tile rows, each walked column by column (down a column of the
// group, then the next column), so that the blocks running at once share A's rows and B's
// columns in L2 (CUTLASS's and Triton's grouped order).
struct TileCoord {
  int batch, tm, tn;
};
BENCH_HD TileCoord gemm_tile(std::int64_t t, int tiles_m, int tiles_n) {
  const std::int64_t per_batch = std::int64_t(tiles_m) * tiles_n;
  TileCoord c;
  c.batch = int(t / per_batch);
  const std::int64_t r = t - std::int64_t(c.batch) * per_batch;
  const std::int64_t per_group = std::int64_t(kGroupRows) * tiles_n;
  const int group = int(r / per_group);
  const int first = group * kGroupRows;
  const int rows = tiles_m - first < kGroupRows ? tiles_m - first : kGroupRows;
  const int within = int(r - std::int64_t(group) * per_group);
  c.tm = first + within % rows;
  c.tn = within / rows;
  return c;
}

}  // namespace bench::gemm
