// The launch configuration of the small-OC direct convolution kernel
// (conv/cuda/small_conv_kernels.cu): which instantiation, how many threads share a pixel's
// reduction, how the blocks are shaped. Host-only C++ with no CUDA dependency, so that the choice
// and the heuristics are unit-tested everywhere (tests/conv/test_small_conv.cpp).
//
// The kernel's work decomposition, in the GEMM view of conv/im2col_index.hpp
// (per group out[oc][m] = sum_k wei[oc][k] * col[k][m]):
//   - a thread owns `p` consecutive output pixels of one output row (a "segment") and `mt`
//     output channels of one group (an oc tile; mt = the smallest power of two >= OC/G, at most
//     16: wider tiles spilled), and accumulates all p * mt outputs in registers;
//   - the reduction over k is cut into units: one (input channel, kernel row) pair with all kw
//     taps of the row when the row is unrolled (`kw` > 0: kernel width 3, 5 or 7 at stride 1 and
//     dilation 1, so that the p pixels' windows overlap and p + kw - 1 loads serve p * kw taps),
//     else one tap (c, r, s) per unit (`kw` == 0: any width, stride and dilation);
//   - `splits` threads (blockDim.y) share each segment, each taking a contiguous range of the
//     units (split-K), and their partial sums are added in a fixed order through shared memory;
//   - a block is `px` segments (blockDim.x, a power of two >= 32, so that a warp is 32 segments
//     of one split: its weight reads are warp-uniform broadcasts) times `splits`;
//   - the weights of the block's oc tile are staged in shared memory as [tap][mt] floats,
//     `chunk_units` units at a time (one chunk unless K * mt exceeds kSmallConvWeightFloats).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "conv/im2col_index.hpp"

namespace conv {

// Output channels per thread: the instantiated tile heights.
inline constexpr int kSmallConvMaxMt = 16;
// Most threads sharing one segment's reduction (blockDim.y), and most threads per block.
inline constexpr int kSmallConvMaxSplits = 8;
inline constexpr int kSmallConvMaxThreads = 256;
// Weights staged in shared memory at once (32 KB of floats).
inline constexpr int kSmallConvWeightFloats = 8192;
// Warps per SM that the wide pixel count must still reach (with up to 8 splits) to be chosen,
// and that the split count aims for. Measured on the H200 seed grid (mb2, IC 4 -> OC 8, 32..128
// pixels, 3x3..7x7): one pixel per thread was fastest up to 64x64 maps, four from 128x128; and
// the most splits (8) were fastest, or within 4% of it, on all nine cells.
inline constexpr int kSmallConvWideWarpsPerSm = 8;
inline constexpr int kSmallConvSplitWarpsPerSm = 16;
// The largest grid.y (groups * oc tiles).
inline constexpr int kSmallConvMaxGridY = 65535;

struct SmallConvConfig {
  int mt = 0;               // output channels per thread (1, 2, 4, 8 or 16)
  int p = 0;                // output pixels per thread, consecutive in one output row (1, 2 or 4)
  int kw = 0;               // kernel width unrolled per unit (3, 5, 7; stride 1, dilation 1), or 0
  int splits = 0;           // threads per segment (split-K), blockDim.y
  int px = 0;               // segments per block, blockDim.x
  int units = 0;            // reduction units: IC/G * KH (kw > 0) or IC/G * KH * KW (kw == 0)
  int chunk_units = 0;      // units whose weights are staged in shared memory at once
  int oc_tiles = 0;         // ceil(OC/G / mt)
  int segs_per_row = 0;     // ceil(OW / p)
  std::int64_t segs = 0;    // N * OH * segs_per_row
  std::int64_t grid_x = 0;  // ceil(segs / px)
  std::int64_t grid_y = 0;  // groups * oc_tiles
  std::size_t smem_bytes = 0;  // dynamic shared memory: weights of a chunk or the partial sums

  int threads() const { return px * splits; }
  int taps_per_unit() const { return kw > 0 ? kw : 1; }
};

// Overrides for tests and experiments: 0 (or true) keeps the automatic choice.
struct SmallConvChoice {
  int p = 0;                   // 1, or the tile's wide p (4 for mt <= 8, 2 for mt == 16)
  int splits = 0;              // 1 .. kSmallConvMaxSplits
  int chunk_units = 0;         // >= 1: stage the weights this many units at a time
  bool allow_unrolled = true;  // false: one tap per unit even where a row could be unrolled
};

// The smallest instantiated tile height >= OC/G (16 when OC/G > 16: more oc tiles).
inline int small_conv_mt(int ocg) {
  int mt = 1;
  while (mt < ocg && mt < kSmallConvMaxMt) mt *= 2;
  return mt;
}

// The wide pixel count of a tile height: p * mt <= 32 accumulators.
inline int small_conv_wide_p(int mt) {
  return mt <= 8 ? 4 : 2;
}

// Empty when the kernel can run g, else why not. Any OC/G runs (oc tiles of 16 beyond 16); the
// only limit is grid.y = groups * ceil(OC/G / mt).
inline std::string small_conv_unsupported_reason(const Im2colGeometry& g) {
  if (g.m <= 0 || g.k <= 0 || g.ocg <= 0 || g.groups <= 0) return "empty problem";
  const int mt = small_conv_mt(g.ocg);
  const std::int64_t grid_y = std::int64_t(g.groups) * ((g.ocg + mt - 1) / mt);
  if (grid_y > kSmallConvMaxGridY)
    return "groups * oc tiles = " + std::to_string(grid_y) + " exceeds the grid's 65535";
  return "";
}
inline bool small_conv_supported(const Im2colGeometry& g) {
  return small_conv_unsupported_reason(g).empty();
}

// Whether kw can be unrolled with overlapping windows.
inline bool small_conv_unrollable(const Im2colGeometry& g) {
  return g.sw == 1 && g.dw == 1 && (g.kw == 3 || g.kw == 5 || g.kw == 7);
}

// The configuration for g on a GPU with sm_count SMs (check small_conv_supported(g) first).
//   p: the wide p (fewer loads and weight reads per FMA) when its segments, split up to 8 ways,
//      still give kSmallConvWideWarpsPerSm warps per SM; else 1 (4x the threads for small maps).
//   splits: enough for kSmallConvSplitWarpsPerSm warps per SM, at most 8 and at most the units
//      of a chunk.
//   px: 128 / splits segments (at least 32, a power of two, no more than the segments need).
inline SmallConvConfig small_conv_config(const Im2colGeometry& g, int sm_count,
                                         const SmallConvChoice& choice = {}) {
  SmallConvConfig c;
  c.mt = small_conv_mt(g.ocg);
  c.oc_tiles = (g.ocg + c.mt - 1) / c.mt;
  c.kw = choice.allow_unrolled && small_conv_unrollable(g) ? g.kw : 0;
  c.units = c.kw > 0 ? g.icg * g.kh : g.icg * g.kh * g.kw;
  c.chunk_units =
      std::min(c.units, std::max(1, kSmallConvWeightFloats / (c.taps_per_unit() * c.mt)));
  if (choice.chunk_units > 0) c.chunk_units = std::min(c.units, choice.chunk_units);

  const std::int64_t sms = std::max(sm_count, 1);
  const int max_splits = std::max(1, std::min(kSmallConvMaxSplits, c.chunk_units));
  auto segs_for = [&](int p) { return std::int64_t(g.n) * g.oh * ((g.ow + p - 1) / p); };

  const int wide = small_conv_wide_p(c.mt);
  if (choice.p > 0)
    c.p = choice.p == wide ? wide : 1;
  else
    c.p = segs_for(wide) * max_splits >= sms * kSmallConvWideWarpsPerSm * 32 ? wide : 1;
  c.segs_per_row = (g.ow + c.p - 1) / c.p;
  c.segs = segs_for(c.p);

  if (choice.splits > 0) {
    c.splits = std::min(choice.splits, kSmallConvMaxSplits);
  } else {
    const std::int64_t target = sms * kSmallConvSplitWarpsPerSm * 32;
    const std::int64_t want = (target + c.segs - 1) / std::max<std::int64_t>(c.segs, 1);
    c.splits = int(std::clamp<std::int64_t>(want, 1, max_splits));
  }
  c.px = 32;
  while (c.px * c.splits * 2 <= 128 && c.px < c.segs) c.px *= 2;

  c.grid_x = (c.segs + c.px - 1) / c.px;
  c.grid_y = std::int64_t(g.groups) * c.oc_tiles;
  const std::size_t weights = std::size_t(c.chunk_units) * c.taps_per_unit() * c.mt;
  const std::size_t partials = std::size_t(c.splits) * c.mt * (std::size_t(c.px) * c.p + 4);
  c.smem_bytes = std::max(weights, partials) * sizeof(float);
  return c;
}

// "8 oc x 4 px per thread, kw 7 unrolled, split-K 8, block 32x8, grid 237x1, 28 units in 1
// chunk": for the result's algorithm field.
inline std::string small_conv_config_name(const SmallConvConfig& c) {
  const int chunks = (c.units + c.chunk_units - 1) / std::max(c.chunk_units, 1);
  return std::to_string(c.mt) + " oc x " + std::to_string(c.p) + " px per thread, " +
         (c.kw > 0 ? "kw " + std::to_string(c.kw) + " unrolled" : std::string("one tap per unit")) +
         ", split-K " + std::to_string(c.splits) + ", block " + std::to_string(c.px) + "x" +
         std::to_string(c.splits) + ", grid " + std::to_string(c.grid_x) + "x" +
         std::to_string(c.grid_y) + ", " + std::to_string(c.units) + " units in " +
         std::to_string(chunks) + (chunks == 1 ? " chunk" : " chunks");
}

// Empty when c is a configuration the kernel can run g with (as small_conv_config(g, ...) makes),
// else what does not fit.
inline std::string small_conv_config_mismatch(const Im2colGeometry& g, const SmallConvConfig& c) {
  if (const std::string why = small_conv_unsupported_reason(g); !why.empty()) return why;
  const bool mt_ok = c.mt == 1 || c.mt == 2 || c.mt == 4 || c.mt == 8 || c.mt == 16;
  if (!mt_ok) return "mt " + std::to_string(c.mt) + " is not instantiated";
  if (c.p != 1 && c.p != small_conv_wide_p(c.mt))
    return "p " + std::to_string(c.p) + " is not instantiated for mt " + std::to_string(c.mt);
  if (c.kw != 0 && !(small_conv_unrollable(g) && c.kw == g.kw))
    return "kw " + std::to_string(c.kw) +
           " unrolled needs that kernel width at stride 1, dilation 1";
  if (c.oc_tiles != (g.ocg + c.mt - 1) / c.mt) return "oc_tiles does not match OC/G";
  if (c.units != (c.kw > 0 ? g.icg * g.kh : g.icg * g.kh * g.kw)) return "units do not match";
  if (c.chunk_units < 1 || c.chunk_units > c.units ||
      std::int64_t(c.chunk_units) * c.taps_per_unit() * c.mt > kSmallConvWeightFloats)
    return "chunk_units out of range";
  if (c.splits < 1 || c.splits > kSmallConvMaxSplits) return "splits out of range";
  if (c.px < 32 || c.px > 128 || (c.px & (c.px - 1)) != 0 || c.threads() > kSmallConvMaxThreads)
    return "px must be a power of two in [32, 128], px * splits <= 256";
  if (c.segs_per_row != (g.ow + c.p - 1) / c.p ||
      c.segs != std::int64_t(g.n) * g.oh * c.segs_per_row)
    return "segments do not match";
  if (c.grid_x != (c.segs + c.px - 1) / c.px || c.grid_y != std::int64_t(g.groups) * c.oc_tiles)
    return "grid does not match";
  const std::size_t weights = std::size_t(c.chunk_units) * c.taps_per_unit() * c.mt;
  const std::size_t partials = std::size_t(c.splits) * c.mt * (std::size_t(c.px) * c.p + 4);
  if (c.smem_bytes < std::max(weights, partials) * sizeof(float) || c.smem_bytes > 48 * 1024)
    return "smem_bytes does not match";
  return "";
}

// The range where the small-OC kernel can beat the tiled implicit GEMM (variant 3; its thread-block
// tile is 32, 64 or 128 channels x 128 pixels by OC/G; conv/cuda/im2col_gemm_kernels.hpp): where
// OC/G <= 32. The 32-row tile computes zeros below OC/G and syncs per 8-deep k slice; this kernel
// wastes no row up to 16 (two oc tiles of 16 up to 32) and syncs once per weight chunk. Measured
// on the H200 (us, this / v3): the nine seed-grid cells 2.8-7.2 / 5.6-26.5;
// mb32ic32ih56oc32kh3ph1 77 / 100; mb32ic64ih56oc16kh3ph1 82 / 172; g32mb32ic32ih56oc32kh3ph1
// 60 / 198.
// Above 32 channels variant 3 keeps the problem, short grids included: with its split-K
// (choose_fp32_splits) it takes ResNet-50's res3/res4/res5 3x3 layers in 278/318/329 us
// (H200, pure timing; results/h200/20261125_conv_preset_fp32/) where this kernel took
// 339/467/463 us (the same kernels, source 93bd803; that run's files are in git history, under
// results/h200/ at commit 5de5be6). Against variant 3 without its split-K (res5 703 us) this
// kernel looks better on grids of under two blocks per SM than it is.
// choose_variant narrows the range by dtype, layout and filter (conv/cuda/variant_choice.cpp:
// small_direct_preferred, from the search run over the model grids).
inline bool small_conv_preferred(const Im2colGeometry& g) {
  return small_conv_supported(g) && g.ocg <= 32;
}

}  // namespace conv
