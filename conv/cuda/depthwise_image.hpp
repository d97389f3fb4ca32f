// The nhwc whole-image kernel (sub-variant 8.5 of im2col_gemm_cuda,
// conv/cuda/depthwise_plane_kernels.cu): configuration, index math and the per-item algorithm,
// host and device (MYCONV_HD), shared with the CPU emulation in
// tests/conv/test_depthwise_plane.cpp.
//
// For small nhwc maps (14x14 and 7x7 inputs) a block owns one image and a slice of cw 32-bit
// words of channels (2 fp16/bf16 channels or 1 fp32 channel a word; cw a multiple of 4, so a
// pixel's slice is whole 16-byte vectors) and
//   1. copies the image's slice (every input pixel, cw words each) into shared memory as stored,
//      16-byte loads, 4 in flight per thread;
//   2. a thread owns one word of channels (its 9 taps per channel in registers) and items of P
//      outputs along W of one output row, reads its window words from shared memory (lanes along
//      the words: no bank conflict within a pixel) and stores each output word to global memory
//      directly (lanes along the words: a pixel's slice is one contiguous run per warp).
// Each input byte is read from global memory once; products and sums in FP32, (r, s) order.
//
// Why, and what it should give: MobileNet-v2's small-map layers, batch 32, nhwc; bytes in + out
// once and the HBM floor at 4.3-3.5 TB/s as for nchw (conv/cuda/depthwise_plane_kernels.cu);
// cuDNN's pure GPU median and ours (8.2) on the H200, us, fp32 / fp16 / bf16:
//   layer         MB fp32 / 16-bit  floor us fp32 / 16-bit   cuDNN           8.2
//   b4_1_dw_s2    24.1 / 12.0        5.6-6.9 / 2.8-3.4       5.3 / 7.1 / 7.2   9.0 /  6.8 /  6.9
//   b4_2_dw       19.3 /  9.6        4.5-5.5 / 2.2-2.8       7.5 / 7.4 / 7.3  10.7 / 12.1 / 12.2
//   b5_2_dw       28.9 / 14.5        6.7-8.3 / 3.4-4.1      10.3 / 9.0 / 9.4  15.0 / 17.0 / 17.0
//   b6_1_dw_s2    18.1 /  9.0        4.2-5.2 / 2.1-2.6       5.4 / 6.2 / 6.4   8.0 /  6.4 /  7.1
//   b6_2_dw       12.0 /  6.0        2.8-3.4 / 1.4-1.7       6.5 / 5.6 / 5.6   8.9 /  8.9 /  9.0
// cuDNN's nhwc times sit near (fp32) or above 2x (16-bit) the HBM time: these layers stay in L2.
// 8.2's nhwc threads read each input pixel 9 times (3x3 windows, one-row bands on these maps)
// through L1, with 72 filter registers in 16-bit. Here each input byte crosses L2 once, a thread
// keeps 18 (16-bit) or 9 (fp32) filter registers, reads are 4-byte shared loads, and the block
// shapes are: fp32 16-32 channels x whole 14x14 or 7x7 images (6-24 KB, 224-256 threads, 576-960
// blocks), 16-bit 8-32 channels (3-12 KB, 112-256 threads). 80 registers (no spills) allow 3
// blocks of 256 threads per SM: 18-72 KB in flight while copying in.
// Prediction (not measured): >= 1.0x cuDNN on b4_2, b5_2 and b6_2 in fp32 (from 0.69-0.73), about
// 1.0x in 16-bit (from 0.53-0.62: cuDNN is at twice the HBM rate there); stride 2 about as 8.2 in
// 16-bit (0.91-1.05) and better in fp32 (from 0.59-0.67). If it falls short, the 16-bit blocks'
// few KB in flight (3 blocks per SM by registers) are the first suspect.
#pragma once

#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "conv/cuda/depthwise_plane.hpp"
#include "conv/im2col_index.hpp"
#include "conv/indexing.hpp"

namespace conv {

inline constexpr int kDepthwiseImageMaxThreads = 256;
inline constexpr int kDepthwiseImageBlocks = 3;  // __launch_bounds__: 80 registers
inline constexpr int kDepthwiseImageMaxSmemBytes = 48 * 1024;

struct DepthwiseImageConfig {
  int stride = 0;
  int pixels = 0;           // P
  int strips = 0;           // ceil(OW / P)
  int elems_per_word = 0;   // 4 / elem_bytes
  int cw = 0;               // words of channels per block
  int slices = 0;           // C / elems_per_word / cw
  int lines = 0;            // threads per word: items run in parallel per word
  int threads = 0;          // cw * lines
  int smem_bytes = 0;       // H * W * cw * 4
  std::int64_t blocks = 0;  // N * slices
};

namespace depthwise_image_detail {
inline void fill(const Im2colGeometry& g, int cw, DepthwiseImageConfig& c) {
  c.cw = cw;
  c.slices = g.c / c.elems_per_word / cw;
  const int items = g.oh * c.strips;
  const int most = kDepthwiseImageMaxThreads / cw;
  c.lines = items < most ? items : most;
  c.threads = cw * c.lines;
  c.smem_bytes = g.h * g.w * cw * 4;
  c.blocks = std::int64_t(g.n) * c.slices;
}
}  // namespace depthwise_image_detail

inline std::string depthwise_image_unsupported_reason(const Im2colGeometry& g, int elem_bytes) {
  if (!g.nhwc) return "nhwc only";
  if (const std::string why = depthwise_3x3_unsupported_reason(g); !why.empty()) return why;
  const int epw = 4 / elem_bytes;
  if (g.c % (4 * epw) != 0)
    return "channels " + std::to_string(g.c) + " not a multiple of " + std::to_string(4 * epw) +
           " (16-byte channel vectors)";
  if (std::int64_t(g.h) * g.w * 16 > kDepthwiseImageMaxSmemBytes)
    return "an input map of " + std::to_string(g.h) + "x" + std::to_string(g.w) +
           " pixels x 16 bytes exceeds 48 KB of shared memory";
  return "";
}

// cw: the largest of 32, 16, 8, 4 words dividing the channel words that fits 48 KB and leaves at
// least 4 blocks per SM (else the smallest that fits); cw_override > 0 caps it (tests).
inline DepthwiseImageConfig depthwise_image_config(const Im2colGeometry& g, int elem_bytes,
                                                   int sm_count, int cw_override = 0) {
  DepthwiseImageConfig c;
  c.stride = g.sh;
  c.pixels = depthwise_plane_pixels(g.ow);
  c.strips = (g.ow + c.pixels - 1) / c.pixels;
  c.elems_per_word = 4 / elem_bytes;
  const int words = g.c / c.elems_per_word;
  const int sms = sm_count > 0 ? sm_count : 1;
  int chosen = 4;
  for (int cw : {32, 16, 8, 4}) {
    if (words % cw != 0 || (cw_override > 0 && cw > cw_override)) continue;
    if (std::int64_t(g.h) * g.w * cw * 4 > kDepthwiseImageMaxSmemBytes) continue;
    chosen = cw;
    if (std::int64_t(g.n) * (words / cw) >= 4 * std::int64_t(sms)) break;
  }
  depthwise_image_detail::fill(g, chosen, c);
  return c;
}

inline std::string depthwise_image_config_mismatch(const Im2colGeometry& g, int elem_bytes,
                                                   const DepthwiseImageConfig& c) {
  if (const std::string why = depthwise_image_unsupported_reason(g, elem_bytes); !why.empty())
    return why;
  if (c.stride != g.sh || c.pixels != depthwise_plane_pixels(g.ow) ||
      c.strips != (g.ow + c.pixels - 1) / c.pixels || c.elems_per_word != 4 / elem_bytes)
    return "shape does not match";
  if ((c.cw != 4 && c.cw != 8 && c.cw != 16 && c.cw != 32) || (g.c / c.elems_per_word) % c.cw != 0)
    return "channel words per block";
  DepthwiseImageConfig t = c;
  depthwise_image_detail::fill(g, c.cw, t);
  if (t.slices != c.slices || t.lines != c.lines || t.threads != c.threads ||
      t.smem_bytes != c.smem_bytes || t.blocks != c.blocks)
    return "derived sizes do not match";
  if (c.smem_bytes > kDepthwiseImageMaxSmemBytes) return "shared memory above 48 KB";
  if (c.blocks > INT_MAX) return "blocks";
  return "";
}

inline std::string depthwise_image_config_name(const DepthwiseImageConfig& c) {
  auto num = [](std::int64_t v) { return std::to_string(v); };
  return "3x3 s" + num(c.stride) +
         " whole images in shared memory: " + num(c.cw * c.elems_per_word) +
         " channels per block (" + num(c.smem_bytes / 1024) + " KB, 16-byte copies in), " +
         num(c.pixels) + " outputs along W x " + num(c.elems_per_word) +
         (c.elems_per_word == 1 ? " channel" : " channels") + " per item, block " + num(c.threads) +
         " threads = " + num(c.cw) + " words x " + num(c.lines) + " lines, grid " + num(c.blocks);
}

// Block `block`: image and first channel (slices fastest).
struct DepthwiseImageBlock {
  int n = 0, ch0 = 0;
};
MYCONV_HD DepthwiseImageBlock depthwise_image_block(const DepthwiseImageConfig& c, int block) {
  DepthwiseImageBlock b;
  b.n = block / c.slices;
  b.ch0 = (block % c.slices) * c.cw * c.elems_per_word;
  return b;
}

// The E-channel outputs of one item (P pixels along W of output row oy from ox0) for one word of
// channels: in(iy, ix, x) fills the word's E channels of input pixel (iy, ix) as floats (called
// inside the map only; the padding reads as 0); w[tap][e]; acc[p][e] in (r, s) order with fmaf.
template <int S, int P, int E, class In>
MYCONV_HD void depthwise_image_outputs(const Im2colGeometry& g, const In& in, int oy, int ox0,
                                       const float (&w)[kDepthwiseStripK * kDepthwiseStripK][E],
                                       float (&acc)[P][E]) {
  constexpr int K = kDepthwiseStripK;
  constexpr int C = (P - 1) * S + K;
  const int ix0 = ox0 * S - g.pw;
  // Column by column (one E-channel pixel live at a time): column j feeds output p with tap
  // s = j - p * S, so each output still takes its taps of row r in s order.
  MYCONV_PLANE_UNROLL
  for (int r = 0; r < K; ++r) {
    const int iy = oy * S - g.ph + r;
    const bool row_in = iy >= 0 && iy < g.h;
    MYCONV_PLANE_UNROLL
    for (int j = 0; j < C; ++j) {
      const int ix = ix0 + j;
      float x[E];
      if (row_in && ix >= 0 && ix < g.w) {
        in(iy, ix, x);
      } else {
        MYCONV_PLANE_UNROLL
        for (int e = 0; e < E; ++e) x[e] = 0.0f;
      }
      MYCONV_PLANE_UNROLL
      for (int p = 0; p < P; ++p) {
        const int s = j - p * S;
        if (s < 0 || s >= K) continue;
        MYCONV_PLANE_UNROLL
        for (int e = 0; e < E; ++e) {
          const float a = (r == 0 && s == 0) ? 0.0f : acc[p][e];
          acc[p][e] = fmaf(x[e], w[r * K + s][e], a);
        }
      }
    }
  }
}

}  // namespace conv
