// The nhwc pipelined strip kernel (sub-variant 8.3 of im2col_gemm_cuda,
// conv/cuda/depthwise_strip_kernels.cu): configuration and index math, host and device (MYCONV_HD
// helpers), shared with the CPU emulation in tests/conv/test_depthwise_strip_emulation.cpp.
//
// The same threads and per-thread algorithm as the nhwc strip kernel (8.2: a 16-byte channel
// vector, a strip of P output pixels, a band of output rows, each input row used once for every
// output row it feeds; conv/cuda/depthwise_strip.hpp), but the input rows reach the threads
// through shared memory: a block owns a tile of cvb channel vectors x spb strips and one band,
// and copies each input row of its tile (the strips' columns and their halo, cvb vectors per
// column) with cp.async, 16 bytes per copy, zero-filled in the padding, into a ring of
// ring_rows rows, ceil(3/S) output rows ahead of their use. The bytes in flight then cost no
// registers (8.2's nhwc threads carry 72 filter registers in 16-bit and can hold only one row
// ahead), and a halo column is read from global memory once per block instead of once per strip.
#pragma once

#include <climits>
#include <cstdint>
#include <string>

#include "conv/cuda/depthwise_strip.hpp"
#include "conv/cuda/depthwise_strip_config.hpp"
#include "conv/im2col_index.hpp"
#include "conv/indexing.hpp"

namespace conv {

inline constexpr int kDepthwisePipeMaxThreads = 128;
inline constexpr int kDepthwisePipeMaxCvb = 32;  // channel vectors per block: a warp's 512 bytes
// P: 2 output pixels per thread in fp32, 1 in 16-bit (beside 72 filter registers, P = 2 spills).
constexpr int depthwise_pipe_pixels(int elem_bytes) {
  return elem_bytes == 4 ? 2 : 1;
}
inline constexpr int kDepthwisePipeMaxSmemBytes = 48 * 1024;  // no opt-in needed
// Blocks per SM the register budget allows (__launch_bounds__, as 8.2's nhwc kernel).
inline constexpr int kDepthwisePipeBlocksFp32 = 4;
inline constexpr int kDepthwisePipeBlocks16 = 3;

// Output rows the copies run ahead (the per-thread algorithm's A = L = ceil(3/S)), and the ring:
// at a copy's issue every thread has passed the barrier of the newest row it converted, so the
// rows from that one to the newest copied, and at the band's start the K - S rows before output
// row 0's last S, must have slots: (K - S) + A * S + 1 = 6 at stride 1 and 2.
constexpr int depthwise_pipe_ahead(int stride) {
  return (kDepthwiseStripK + stride - 1) / stride;
}
constexpr int depthwise_pipe_ring_rows(int stride) {
  return (kDepthwiseStripK - stride) + depthwise_pipe_ahead(stride) * stride + 1;
}
// Copies per thread per row at most: ceil(tile_cols / spb) = ceil(((P * spb - 1) * S + 3) / spb),
// at most 4 at stride 1 and 5 at stride 2.
inline constexpr int kDepthwisePipeMaxCopies = 5;

struct DepthwisePipeConfig {
  int stride = 0;
  int pixels = 0;     // P
  int vec = 0;        // V: channels per 16-byte vector
  int cvb = 0;        // channel vectors per block (divides C / V)
  int spb = 0;        // strips per block
  int ch_tiles = 0;   // C / V / cvb
  int col_tiles = 0;  // ceil(strips / spb)
  int strips = 0;     // ceil(OW / P)
  int tile_cols = 0;  // input columns of a tile: (spb * P - 1) * S + 3
  int ring_rows = 0;
  int copies = 0;   // per thread per row: ceil(tile_cols * cvb / threads)
  int threads = 0;  // cvb * spb
  int smem_bytes = 0;
  int band = 0, bands = 0;
  std::int64_t blocks = 0;  // N * bands * col_tiles * ch_tiles
};

inline std::string depthwise_pipe_unsupported_reason(const Im2colGeometry& g, int elem_bytes) {
  if (!g.nhwc) return "nhwc only";
  return depthwise_strip_unsupported_reason(g, elem_bytes);
}

namespace depthwise_pipe_detail {

inline int largest_divisor_at_most(int n, int most) {
  for (int d = most < n ? most : n; d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

inline void fill(int spb, DepthwisePipeConfig& c) {
  c.spb = spb;
  c.col_tiles = (c.strips + spb - 1) / spb;
  c.tile_cols = (spb * c.pixels - 1) * c.stride + kDepthwiseStripK;
  c.threads = c.cvb * spb;
  c.copies = (c.tile_cols * c.cvb + c.threads - 1) / c.threads;
  c.smem_bytes = c.ring_rows * c.tile_cols * c.cvb * 16;
}

}  // namespace depthwise_pipe_detail

// The configuration for g (check depthwise_pipe_unsupported_reason first) on sm_count SMs;
// band_override > 0 forces the band, spb_override > 0 caps the strips per block (tests).
inline DepthwisePipeConfig depthwise_pipe_config(const Im2colGeometry& g, int elem_bytes,
                                                 int sm_count, int band_override = 0,
                                                 int spb_override = 0) {
  using depthwise_pipe_detail::fill;
  DepthwisePipeConfig c;
  c.stride = g.sh;
  c.pixels = depthwise_pipe_pixels(elem_bytes);
  c.vec = depthwise_strip_vec(elem_bytes);
  const int cv = g.c / c.vec;
  c.cvb = depthwise_pipe_detail::largest_divisor_at_most(cv, kDepthwisePipeMaxCvb);
  c.ch_tiles = cv / c.cvb;
  c.strips = (g.ow + c.pixels - 1) / c.pixels;
  c.ring_rows = depthwise_pipe_ring_rows(c.stride);
  // As many strips as the threads allow, balanced over the column tiles; fewer while the ring
  // or the copies per thread do not fit.
  int spb = kDepthwisePipeMaxThreads / c.cvb;
  if (spb > c.strips) spb = c.strips;
  if (spb_override > 0 && spb > spb_override) spb = spb_override;
  const int tiles = (c.strips + spb - 1) / spb;
  spb = (c.strips + tiles - 1) / tiles;
  fill(spb, c);
  while (c.spb > 1 &&
         (c.smem_bytes > kDepthwisePipeMaxSmemBytes || c.copies > kDepthwisePipeMaxCopies))
    fill(c.spb - 1, c);
  const int sms = sm_count > 0 ? sm_count : 1;
  const int per_sm = elem_bytes == 4 ? kDepthwisePipeBlocksFp32 : kDepthwisePipeBlocks16;
  DepthwiseStripConfig band;
  depthwise_strip_detail::choose_band(g, std::int64_t(g.n) * c.col_tiles * c.ch_tiles * c.threads,
                                      sms * per_sm * kDepthwisePipeMaxThreads, band_override, band);
  c.band = band.band;
  c.bands = band.bands;
  c.blocks = std::int64_t(g.n) * c.bands * c.col_tiles * c.ch_tiles;
  return c;
}

inline std::string depthwise_pipe_config_mismatch(const Im2colGeometry& g, int elem_bytes,
                                                  const DepthwisePipeConfig& c) {
  if (const std::string why = depthwise_pipe_unsupported_reason(g, elem_bytes); !why.empty())
    return why;
  if (c.stride != g.sh || c.vec != depthwise_strip_vec(elem_bytes) ||
      c.pixels != depthwise_pipe_pixels(elem_bytes))
    return "shape does not match";
  const int cv = g.c / c.vec;
  if (c.cvb < 1 || cv % c.cvb != 0 || c.ch_tiles * c.cvb != cv) return "channel tiles";
  if (c.strips != (g.ow + c.pixels - 1) / c.pixels || c.spb < 1 ||
      c.col_tiles != (c.strips + c.spb - 1) / c.spb)
    return "column tiles";
  if (c.tile_cols != (c.spb * c.pixels - 1) * c.stride + kDepthwiseStripK) return "tile columns";
  if (c.ring_rows != depthwise_pipe_ring_rows(c.stride)) return "ring rows";
  if (c.threads != c.cvb * c.spb || c.threads > kDepthwisePipeMaxThreads) return "threads";
  if (c.copies != (c.tile_cols * c.cvb + c.threads - 1) / c.threads ||
      c.copies > kDepthwisePipeMaxCopies)
    return "copies per thread";
  if (c.smem_bytes != c.ring_rows * c.tile_cols * c.cvb * 16 ||
      c.smem_bytes > kDepthwisePipeMaxSmemBytes)
    return "shared memory";
  if (c.band < 1 || c.bands < 1 || std::int64_t(c.band) * c.bands < g.oh ||
      std::int64_t(c.band) * (c.bands - 1) >= g.oh)
    return "bands do not cover the output rows exactly";
  if (c.blocks != std::int64_t(g.n) * c.bands * c.col_tiles * c.ch_tiles || c.blocks > INT_MAX)
    return "blocks";
  return "";
}

inline std::string depthwise_pipe_config_name(const DepthwisePipeConfig& c) {
  auto num = [](std::int64_t v) { return std::to_string(v); };
  return "3x3 s" + num(c.stride) + " strips through shared memory: " + num(c.pixels) +
         (c.pixels == 1 ? " pixel x " : " pixels x ") + num(c.vec) +
         " channels per thread, block " + num(c.threads) + " threads = " + num(c.cvb) +
         " channel vectors x " + num(c.spb) + " strips, cp.async ring of " + num(c.ring_rows) +
         " rows x " + num(c.tile_cols) + " columns (" + num(c.smem_bytes / 1024) +
         " KB), band of " + num(c.band) + (c.band == 1 ? " row" : " rows") + ", grid " +
         num(c.blocks);
}

// Where block `block` works: image, band, column and channel tiles (channel tiles fastest, so
// that the blocks of one band and column tile run together).
struct DepthwisePipeBlock {
  int n = 0, oy0 = 0, rows = 0;
  int ox0 = 0;  // first output column of the tile
  int ch0 = 0;  // first channel of the tile
  int ix0 = 0;  // input column of tile column 0 (< 0: padding)
};
MYCONV_HD DepthwisePipeBlock depthwise_pipe_block(const Im2colGeometry& g,
                                                  const DepthwisePipeConfig& c, int block) {
  DepthwisePipeBlock b;
  const int ch_tile = block % c.ch_tiles;
  block /= c.ch_tiles;
  const int col_tile = block % c.col_tiles;
  block /= c.col_tiles;
  const int band = block % c.bands;
  b.n = block / c.bands;
  b.oy0 = band * c.band;
  b.rows = g.oh - b.oy0 < c.band ? g.oh - b.oy0 : c.band;
  b.ox0 = col_tile * c.spb * c.pixels;
  b.ch0 = ch_tile * c.cvb * c.vec;
  b.ix0 = b.ox0 * g.sw - g.pw;
  return b;
}

// Thread `tid` of the block: as an 8.2 strip thread (channel vectors fastest, then strips), and
// the tile column of its window's column 0. Threads whose strip starts past OW still copy and
// wait with the others, and store nothing.
struct DepthwisePipeThread {
  DepthwiseStripThread t;
  int cv = 0;        // channel vector within the tile
  int tile_col = 0;  // tile column of window column 0
  bool stores = false;
};
MYCONV_HD DepthwisePipeThread depthwise_pipe_thread(const Im2colGeometry& g,
                                                    const DepthwisePipeConfig& c,
                                                    const DepthwisePipeBlock& b, int tid) {
  DepthwisePipeThread r;
  r.cv = tid % c.cvb;
  const int strip = tid / c.cvb;
  r.t.image = b.n;
  r.t.channel = b.ch0 + r.cv * c.vec;
  r.t.oy0 = b.oy0;
  r.t.rows = b.rows;
  r.t.ox0 = b.ox0 + strip * c.pixels;
  r.tile_col = strip * c.pixels * g.sw;
  r.stores = r.t.ox0 < g.ow;
  return r;
}

// Copy k (< c.copies) of thread tid, each row: tile vector i = tid + k * threads (valid while
// i < tile_cols * cvb), column i / cvb, channel vector i % cvb.
struct DepthwisePipeCopy {
  bool valid = false;
  int col = 0, cv = 0;
};
MYCONV_HD DepthwisePipeCopy depthwise_pipe_copy(const DepthwisePipeConfig& c, int tid, int k) {
  DepthwisePipeCopy r;
  const int i = tid + k * c.threads;
  r.valid = i < c.tile_cols * c.cvb;
  r.col = i / c.cvb;
  r.cv = i - r.col * c.cvb;
  return r;
}

}  // namespace conv
