// The nhwc direct depthwise kernel (sub-variant 8.6 of im2col_gemm_cuda,
// conv/cuda/depthwise_direct_kernels.cu): configuration, index math and the per-item algorithm,
// host and device (MYCONV_HD), shared with the CPU emulation in
// tests/conv/test_depthwise_direct.cpp.
//
// A thread owns one vector of E consecutive channels (16 or 8 bytes: fp32 4, fp16/bf16 8 or 4)
// and an item of R x P output pixels (R rows, P along W). It reads its ((R-1)*S + 3) x
// ((P-1)*S + 3) window vectors straight from global memory (__ldg: the neighbours' reads hit L1),
// one input row at a time, each tap of the row once for all the outputs it feeds; it sums each
// output's taps in (r, s) order with fmaf in FP32 (bit-identical to every depthwise kernel here)
// and stores each output pixel's vector once. The filter taps of the block's channels sit in
// shared memory as floats, [tap][channel]: a lane reads its E taps as 16-byte loads, the lanes of
// one channel vector share them (broadcast), so a thread holds no filter registers.
// A block is W channel vectors (tid % W) x threads / W items (tid / W) in raster order of one
// image, so that a warp stores whole 128-byte runs of W*E channels of adjacent pixels and a
// block's items cover a band of rows whose input rows L1 keeps for each other.
//
// Why: the other nhwc kernels (8.2/8.3 strips with 9 x E filter registers, 8.5 whole images in
// shared memory) ran MobileNet-v2's 14x14/28x28 layers at 1 eligible warp per scheduler or
// less (114-141 registers, or 576-768 blocks of 256 threads that copy before they compute), 17-21
// us against cuDNN's 11-14 us under ncu. cuDNN's own nhwc kernel there (conv2d_c1_k1_nhwc) is a
// thread per output pixel and 16-byte channel vector at 42 registers, 81% L1 hits
// (results/h200/20261128_conv_depthwise_nhwc_direct/ncu/).
#pragma once

#include <climits>
#include <cstdint>
#include <string>

#include "conv/cuda/depthwise_plane.hpp"
#include "conv/im2col_index.hpp"
#include "conv/indexing.hpp"

namespace conv {

inline constexpr int kDepthwiseDirectThreads = 256;
inline constexpr int kDepthwiseDirectK = 3;
inline constexpr int kDepthwiseDirectTaps = kDepthwiseDirectK * kDepthwiseDirectK;

struct DepthwiseDirectConfig {
  int stride = 0;
  int pixels = 0;           // P: outputs along W per item (2 or 4)
  int rows = 0;             // R: output rows per item (1, or 2 with P = 2)
  int vec = 0;              // E: channels per thread (fp32 4; 16-bit 8 or 4)
  int words = 0;            // W: channel vectors per block (8, 16 or 32)
  int items_per_block = 0;  // threads / W
  int threads = 0;
  int channel_vectors = 0;  // C / E
  int slices = 0;           // ceil(C / E / W): a block's channels
  int strips = 0;           // ceil(OW / P)
  int items = 0;            // ceil(OH / R) * strips per image
  int item_blocks = 0;      // ceil(items / items_per_block)
  std::int64_t blocks = 0;  // N * item_blocks * slices
  int smem_bytes = 0;       // taps x W x E floats
  int min_blocks = 0;       // __launch_bounds__'s blocks per SM: 0 none (ptxas keeps about 64
                            // registers at E = 4), 2 (up to 128: more loads in flight per
                            // thread; E = 4 only)
};

// Overrides (0, and -1 for min_blocks: the automatic choice).
struct DepthwiseDirectChoice {
  int pixels = 0, vec = 0, words = 0, min_blocks = -1, rows = 0;
};

inline std::string depthwise_direct_unsupported_reason(const Im2colGeometry& g, int elem_bytes) {
  if (!g.nhwc) return "nhwc only";
  if (const std::string why = depthwise_3x3_unsupported_reason(g); !why.empty()) return why;
  if (elem_bytes != 4 && elem_bytes != 2) return "element size";
  if (g.c % 4 != 0)
    return "channels " + std::to_string(g.c) + " not a multiple of 4 (channel vectors)";
  return "";
}

namespace depthwise_direct_detail {
inline void fill(const Im2colGeometry& g, int pixels, int rows, int vec, int words, int min_blocks,
                 DepthwiseDirectConfig& c) {
  c.rows = rows;
  c.min_blocks = min_blocks;
  c.stride = g.sh;
  c.pixels = pixels;
  c.vec = vec;
  c.words = words;
  c.threads = kDepthwiseDirectThreads;
  c.items_per_block = c.threads / words;
  c.channel_vectors = g.c / vec;
  c.slices = (c.channel_vectors + words - 1) / words;
  c.strips = (g.ow + pixels - 1) / pixels;
  c.items = (g.oh + rows - 1) / rows * c.strips;
  c.item_blocks = (c.items + c.items_per_block - 1) / c.items_per_block;
  c.blocks = std::int64_t(g.n) * c.item_blocks * c.slices;
  c.smem_bytes = kDepthwiseDirectTaps * words * vec * 4;
}
}  // namespace depthwise_direct_detail

// The automatic shape, from MobileNet-v2's nhwc layers with output maps of 28x28 or less on an
// H200 (results/h200/20261128_conv_depthwise_nhwc_direct/sweep_table.txt, each shape beside
// cuDNN): E = 4 channels per thread (8 in 16-bit was slower in 49 of 60 cases: 77-197
// registers); items of 1 x 4 outputs at stride 2 and in fp32, 2 x 2 at stride 1 in 16-bit
// (0.85-0.95 of cuDNN on the 14x14 and 28x28 layers, against 0.78-0.87 for 1 x 4); fp32 at stride 2
// on output maps wider than 14 (b3_1) 2 x 2 with 2 blocks per SM asked (0.90 against 0.73); else no
// blocks per SM asked (ptxas keeps about 64-80 registers; 2 asked was slower in 80 of 90). W:
// the smallest of 8, 16, 32 that divides the channel vectors and leaves at most a quarter of the
// block grid's item slots idle (more items per block: a taller band of rows shared in L1; 7x7 maps
// take 16: 14 items of 1 x 4 fill 16, not 32), else the one of them leaving the fewest idle (8
// where none divides). Overrides replace each part that fits.
inline int depthwise_direct_words(const Im2colGeometry& g, int pixels, int rows, int vec) {
  DepthwiseDirectConfig probe;
  int best = 0;
  double best_idle = 2.0;
  for (int w : {8, 16, 32}) {
    if ((g.c / vec) % w != 0) continue;
    depthwise_direct_detail::fill(g, pixels, rows, vec, w, 0, probe);
    const double slots = double(probe.item_blocks) * probe.items_per_block;
    const double idle = (slots - probe.items) / slots;
    if (idle <= 0.25) return w;
    if (idle < best_idle) {
      best = w;
      best_idle = idle;
    }
  }
  return best > 0 ? best : 8;
}

inline DepthwiseDirectConfig depthwise_direct_config(const Im2colGeometry& g, int elem_bytes,
                                                     const DepthwiseDirectChoice& choice = {}) {
  int vec = 4;
  if (choice.vec == 8 && elem_bytes == 2 && g.c % 8 == 0) vec = 8;
  int rows = 1, pixels = 4, min_blocks = 0;
  if (g.sh == 1 && elem_bytes == 2) {
    rows = 2;
    pixels = 2;
  } else if (g.sh == 2 && elem_bytes == 4 && g.ow > 14) {
    rows = 2;
    pixels = 2;
    min_blocks = 2;
  }
  if (choice.pixels == 2 || choice.pixels == 4) pixels = choice.pixels;
  if (choice.rows == 1 || choice.rows == 2) rows = choice.rows;
  if (rows == 2) pixels = 2;  // items of 1 x 2, 1 x 4 or 2 x 2 outputs
  if (choice.min_blocks == 0 || choice.min_blocks == 2) min_blocks = choice.min_blocks;
  if (vec == 8) min_blocks = 0;  // 16-bit x 8 channels: above 128 registers at P = 4
  int words = depthwise_direct_words(g, pixels, rows, vec);
  if (choice.words == 8 || choice.words == 16 || choice.words == 32) words = choice.words;
  DepthwiseDirectConfig c;
  depthwise_direct_detail::fill(g, pixels, rows, vec, words, min_blocks, c);
  return c;
}

inline std::string depthwise_direct_config_mismatch(const Im2colGeometry& g, int elem_bytes,
                                                    const DepthwiseDirectConfig& c) {
  if (const std::string why = depthwise_direct_unsupported_reason(g, elem_bytes); !why.empty())
    return why;
  if (c.pixels != 2 && c.pixels != 4) return "outputs per item";
  if (c.rows != 1 && (c.rows != 2 || c.pixels != 2)) return "rows per item";
  if (c.min_blocks != 0 && (c.min_blocks != 2 || c.vec != 4)) return "blocks per SM";
  if (c.vec != 4 && !(c.vec == 8 && elem_bytes == 2)) return "channels per thread";
  if (g.c % c.vec != 0) return "channels not whole vectors";
  if (c.words != 8 && c.words != 16 && c.words != 32) return "channel vectors per block";
  DepthwiseDirectConfig t;
  depthwise_direct_detail::fill(g, c.pixels, c.rows, c.vec, c.words, c.min_blocks, t);
  if (t.stride != c.stride || t.threads != c.threads || t.items_per_block != c.items_per_block ||
      t.channel_vectors != c.channel_vectors || t.slices != c.slices || t.strips != c.strips ||
      t.items != c.items || t.item_blocks != c.item_blocks || t.blocks != c.blocks ||
      t.smem_bytes != c.smem_bytes)
    return "derived sizes do not match";
  if (c.blocks > INT_MAX) return "blocks";
  return "";
}

inline std::string depthwise_direct_config_name(const DepthwiseDirectConfig& c) {
  auto num = [](std::int64_t v) { return std::to_string(v); };
  return "3x3 s" + num(c.stride) + ", " + num(c.rows) + "x" + num(c.pixels) + " outputs x " +
         num(c.vec) + " channels per thread, taps in shared memory (" + num(c.smem_bytes / 1024) +
         " KB), block " + num(c.threads) + " threads = " + num(c.words) + " channel vectors x " +
         num(c.items_per_block) + " items, grid " + num(c.blocks) +
         (c.min_blocks > 0 ? ", at least " + num(c.min_blocks) + " blocks per SM" : "");
}

// Thread tid of block `block`: its image, channel vector (may be >= channel_vectors: idle) and
// item (may be >= items: idle).
struct DepthwiseDirectThread {
  int n = 0, cv = 0, cv_local = 0, item = 0;
};
MYCONV_HD DepthwiseDirectThread depthwise_direct_thread(const DepthwiseDirectConfig& c, int block,
                                                        int tid) {
  DepthwiseDirectThread t;
  const int slice = block % c.slices;
  const int rest = block / c.slices;
  t.n = rest / c.item_blocks;
  t.cv_local = tid % c.words;
  t.cv = slice * c.words + t.cv_local;
  t.item = (rest % c.item_blocks) * c.items_per_block + tid / c.words;
  return t;
}

// The E-channel outputs of one item (R rows from oy0 x P pixels along W from ox0): in(iy, ix, x)
// fills input pixel (iy, ix)'s E channels as floats (called inside the map only; the padding
// reads as 0), tap(t, w) the E channels' tap t; acc[q][p][e] summed in (r, s) order with fmaf.
// Input row by input row: the row's window columns, then each of its taps once for every output
// it feeds (input row iy0 + i is filter row r = i - q*S of output row q).
template <int S, int R, int P, int E, class In, class Tap>
MYCONV_HD void depthwise_direct_outputs(const Im2colGeometry& g, const In& in, const Tap& tap,
                                        int oy0, int ox0, float (&acc)[R][P][E]) {
  constexpr int K = kDepthwiseDirectK;
  constexpr int C = (P - 1) * S + K;  // window columns
  constexpr int H = (R - 1) * S + K;  // window rows
  const int ix0 = ox0 * S - g.pw, iy0 = oy0 * S - g.ph;
  MYCONV_PLANE_UNROLL
  for (int i = 0; i < H; ++i) {
    const int iy = iy0 + i;
    const bool row_in = iy >= 0 && iy < g.h;
    float x[C][E];
    MYCONV_PLANE_UNROLL
    for (int j = 0; j < C; ++j) {
      const int ix = ix0 + j;
      if (row_in && ix >= 0 && ix < g.w) {
        in(iy, ix, x[j]);
      } else {
        MYCONV_PLANE_UNROLL
        for (int e = 0; e < E; ++e) x[j][e] = 0.0f;
      }
    }
    MYCONV_PLANE_UNROLL
    for (int q = 0; q < R; ++q) {
      const int r = i - q * S;
      if (r < 0 || r >= K) continue;
      MYCONV_PLANE_UNROLL
      for (int s = 0; s < K; ++s) {
        float w[E];
        tap(r * K + s, w);
        MYCONV_PLANE_UNROLL
        for (int p = 0; p < P; ++p) MYCONV_PLANE_UNROLL
        for (int e = 0; e < E; ++e) {
          const float a = (r == 0 && s == 0) ? 0.0f : acc[q][p][e];
          acc[q][p][e] = fmaf(x[p * S + s][e], w[e], a);
        }
      }
    }
  }
}

}  // namespace conv
