// The launch configuration of the depthwise strip kernels (conv/cuda/depthwise_strip_kernels.cu,
// sub-variant 8.2 of im2col_gemm_cuda): which problems they run, the shape a thread computes and
// how the threads cover the output. Host-only C++; the index math and the per-thread algorithm are
// conv/cuda/depthwise_strip.hpp (shared with the CPU emulation in
// tests/conv/test_depthwise_config.cpp).
//
// The strip kernels run 3x3 depthwise layers (groups == IC, multiplier 1, dilation 1) at stride 1
// or 2, the shape of MobileNet-v2's ten depthwise layers and most depthwise CNNs. A thread owns
//   - nhwc: one vector of V = 16 / sizeof(T) channels (one 16-byte access: 4 fp32 or 8 fp16/bf16)
//     with the 9 taps of those channels in registers, a strip of P output pixels along W and a
//     band of B output rows;
//   - nchw: one channel (plane), a strip of P outputs along W loaded as aligned vectors of LV
//     elements plus the halo columns, and a band of B output rows.
// Down its band a thread keeps the partial sums of the ceil(3/S) output rows an input row feeds
// in registers, so that it loads (and converts) each input row of its strip once: (B-1)*S + 3
// input rows for B output rows. Products and sums in FP32 in the taps' (r, s) order, as the other
// depthwise kernels: bit-identical outputs.
#pragma once

#include <climits>
#include <cstdint>
#include <string>

#include "conv/im2col_index.hpp"

namespace conv {

// The one kernel size of the strip kernels, and the nchw kernel's padding (its window's halo is
// one column on each side at compile time).
inline constexpr int kDepthwiseStripK = 3;
// Threads per block, and blocks per SM the register budget must allow (__launch_bounds__):
// nhwc fp32 128 x 4 (128 registers), nhwc 16-bit 128 x 3 (168: 72 filter registers), nchw
// 256 x 2 (128). The configuration counts resident threads from these for the waves below.
inline constexpr int kDepthwiseStripNhwcThreads = 128;
inline constexpr int kDepthwiseStripNhwcBlocksFp32 = 4;
inline constexpr int kDepthwiseStripNhwcBlocks16 = 3;
inline constexpr int kDepthwiseStripNchwThreads = 256;
inline constexpr int kDepthwiseStripNchwBlocks = 2;
// Output rows per thread at most, and the waves of resident threads a band must leave: longer
// bands load fewer halo rows and filters but give fewer, longer threads; below this many waves
// the last, partial one costs more than the halo rows save.
inline constexpr int kDepthwiseStripMaxBand = 8;
inline constexpr int kDepthwiseStripMinWaves = 6;

// The strip shapes the kernels are instantiated for: stride S, P outputs per thread along W and,
// in nchw, LV elements per core load (the P*S input columns under the strip; the halo columns
// are single loads). nhwc loads one 16-byte channel vector per input pixel.
struct DepthwiseStripShape {
  int stride = 0, pixels = 0, load_vec = 0;
};
// nchw candidates per stride, in order of preference where the estimate ties; LV = 0 stands for
// 16 bytes (4 fp32, 8 fp16/bf16).
// Every stride-1 W has {1, 7, 1} and every stride-2 W {2, 4, 1} (element loads). Wider strips
// (P = 14, or 7 at stride 2) spill in fp32 with their loads three rows ahead.
inline constexpr DepthwiseStripShape kDepthwiseStripNchwShapes[] = {
    {1, 8, 0}, {1, 4, 4}, {1, 7, 1}, {2, 4, 0}, {2, 4, 2}, {2, 4, 1},
};
// nhwc: P = 2 for fp32 at stride 1 (4 input pixels a row), else 1 (3 input pixels a row): the
// loads of a row in flight and the partial sums fit beside the 9 * V filter registers (72 in
// 16-bit, where P = 2 spills).
constexpr int depthwise_strip_nhwc_pixels(int stride, int elem_bytes) {
  return stride == 1 && elem_bytes == 4 ? 2 : 1;
}

inline int depthwise_strip_vec(int elem_bytes) {
  return 16 / elem_bytes;
}

struct DepthwiseStripConfig {
  int stride = 0;           // S (both directions)
  int pixels = 0;           // P: outputs per thread along W
  int load_vec = 0;         // nchw: LV, elements per core load; nhwc: V, channels per thread
  int store_vec = 0;        // nchw: elements per output store (LV / S, at least 1); nhwc: V
  int band = 0;             // B: output rows per thread
  int bands = 0;            // ceil(OH / B)
  int strips = 0;           // ceil(OW / P)
  int channel_vectors = 0;  // nhwc: C / V; nchw: 1
  std::int64_t work = 0;    // threads with work: nchw N*C*bands*strips, nhwc N*bands*strips*C/V
};

// Empty when the strip kernels run g with elem_bytes-byte storage, else why not.
inline std::string depthwise_strip_unsupported_reason(const Im2colGeometry& g, int elem_bytes) {
  if (g.icg != 1 || g.groups != g.c) return "not depthwise";
  if (g.ocg != 1) return "channel multiplier " + std::to_string(g.ocg) + " (the strips take 1)";
  if (g.kh != kDepthwiseStripK || g.kw != kDepthwiseStripK) return "not a 3x3 filter";
  if (g.dh != 1 || g.dw != 1) return "dilated";
  if (g.sh != g.sw || (g.sh != 1 && g.sh != 2))
    return "stride other than 1 or 2 in both directions";
  if (g.n <= 0 || g.oh <= 0 || g.ow <= 0 || g.c <= 0) return "empty problem";
  if (std::int64_t(g.h) * g.w * g.c > INT_MAX || std::int64_t(g.oh) * g.ow * g.oc > INT_MAX)
    return "one image exceeds 2^31-1 elements";
  if (g.nhwc) {
    const int v = depthwise_strip_vec(elem_bytes);
    if (g.c % v != 0)
      return "channels " + std::to_string(g.c) + " not a multiple of " + std::to_string(v) +
             " (16-byte channel vectors)";
    if (g.ph < 0 || g.pw < 0) return "negative padding";
  } else {
    if (g.pw != (kDepthwiseStripK - 1) / 2)
      return "nchw needs a padding of 1 column (the strip's halo)";
    if (g.ph < 0) return "negative padding";
  }
  return "";
}

namespace depthwise_strip_detail {

inline int lv_of(const DepthwiseStripShape& s, int elem_bytes) {
  return s.load_vec > 0 ? s.load_vec : 16 / elem_bytes;
}

// Whether nchw shape s runs g: every core load aligned (LV divides W and P*S) and the output
// stores of LV / S elements aligned (they divide OW and P).
inline bool nchw_shape_fits(const Im2colGeometry& g, const DepthwiseStripShape& s, int elem_bytes) {
  const int lv = lv_of(s, elem_bytes);
  const int sv = lv / s.stride > 0 ? lv / s.stride : 1;
  return s.stride == g.sh && g.w % lv == 0 && (s.pixels * s.stride) % lv == 0 && g.ow % sv == 0 &&
         s.pixels % sv == 0;
}

// Instructions per output row of a plane, estimated: loads (core vectors and halo elements) of
// the ~3 input rows an output row takes, conversions, 9 FMAs per output and the stores, over
// every strip, idle outputs of the last strip included.
inline double nchw_row_cost(const Im2colGeometry& g, const DepthwiseStripShape& s, int elem_bytes) {
  const int lv = lv_of(s, elem_bytes);
  const int sv = lv / s.stride > 0 ? lv / s.stride : 1;
  const int cols = (s.pixels - 1) * s.stride + kDepthwiseStripK;
  const int loads = s.pixels * s.stride / lv + (cols - s.pixels * s.stride);
  const int strips = (g.ow + s.pixels - 1) / s.pixels;
  return double(strips) * (3.0 * loads + 9.0 * s.pixels + cols + double(s.pixels) / sv);
}

// The band: the longest (up to kDepthwiseStripMaxBand rows, balanced over OH) that leaves
// kDepthwiseStripMinWaves waves of resident threads; 1 where even that leaves fewer.
inline void choose_band(const Im2colGeometry& g, std::int64_t threads_per_row, int resident,
                        int band_override, DepthwiseStripConfig& s) {
  int band = 1;
  if (band_override > 0) {
    band = band_override < g.oh ? band_override : g.oh;
  } else {
    const std::int64_t want = std::int64_t(kDepthwiseStripMinWaves) * resident;
    for (int b = 2; b <= kDepthwiseStripMaxBand && b <= g.oh; ++b) {
      const int bands = (g.oh + b - 1) / b;
      if (threads_per_row * bands >= want) band = b;
    }
  }
  s.bands = (g.oh + band - 1) / band;
  s.band = (g.oh + s.bands - 1) / s.bands;
}

}  // namespace depthwise_strip_detail

// The configuration for g (check depthwise_strip_unsupported_reason first) on sm_count SMs.
// pixels_override (nchw: one of the shapes' P for g's stride that fits g) and band_override
// force P and B, for tests; 0 chooses.
inline DepthwiseStripConfig depthwise_strip_config(const Im2colGeometry& g, int elem_bytes,
                                                   int sm_count, int pixels_override = 0,
                                                   int band_override = 0) {
  using namespace depthwise_strip_detail;
  DepthwiseStripConfig s;
  s.stride = g.sh;
  const int sms = sm_count > 0 ? sm_count : 1;
  if (g.nhwc) {
    s.pixels = depthwise_strip_nhwc_pixels(g.sh, elem_bytes);
    s.load_vec = s.store_vec = depthwise_strip_vec(elem_bytes);
    s.channel_vectors = g.c / s.load_vec;
    s.strips = (g.ow + s.pixels - 1) / s.pixels;
    const int blocks =
        elem_bytes == 4 ? kDepthwiseStripNhwcBlocksFp32 : kDepthwiseStripNhwcBlocks16;
    choose_band(g, std::int64_t(g.n) * s.strips * s.channel_vectors,
                sms * blocks * kDepthwiseStripNhwcThreads, band_override, s);
    s.work = std::int64_t(g.n) * s.bands * s.strips * s.channel_vectors;
    return s;
  }
  double best = -1;
  for (const DepthwiseStripShape& shape : kDepthwiseStripNchwShapes) {
    if (!nchw_shape_fits(g, shape, elem_bytes)) continue;
    if (pixels_override > 0 && shape.pixels != pixels_override) continue;
    const double cost = nchw_row_cost(g, shape, elem_bytes);
    if (best < 0 || cost < best) {
      best = cost;
      s.pixels = shape.pixels;
      s.load_vec = lv_of(shape, elem_bytes);
    }
  }
  if (best < 0) return s;  // no shape: pixels == 0, a mismatch
  s.store_vec = s.load_vec / s.stride > 0 ? s.load_vec / s.stride : 1;
  s.channel_vectors = 1;
  s.strips = (g.ow + s.pixels - 1) / s.pixels;
  choose_band(g, std::int64_t(g.n) * g.c * s.strips,
              sms * kDepthwiseStripNchwBlocks * kDepthwiseStripNchwThreads, band_override, s);
  s.work = std::int64_t(g.n) * g.c * s.bands * s.strips;
  return s;
}

// Empty when s is a configuration the strip kernels run g with, else what does not fit.
inline std::string depthwise_strip_config_mismatch(const Im2colGeometry& g, int elem_bytes,
                                                   const DepthwiseStripConfig& s) {
  if (const std::string why = depthwise_strip_unsupported_reason(g, elem_bytes); !why.empty())
    return why;
  if (s.stride != g.sh) return "stride does not match";
  if (s.band < 1 || s.bands < 1 || std::int64_t(s.band) * s.bands < g.oh ||
      std::int64_t(s.band) * (s.bands - 1) >= g.oh)
    return "bands do not cover the output rows exactly";
  if (s.pixels < 1 || s.strips != (g.ow + s.pixels - 1) / s.pixels)
    return "strips do not cover the output row";
  if (g.nhwc) {
    if (s.pixels != depthwise_strip_nhwc_pixels(g.sh, elem_bytes))
      return "nhwc strip width does not match";
    if (s.load_vec != depthwise_strip_vec(elem_bytes) || s.store_vec != s.load_vec ||
        s.channel_vectors * s.load_vec != g.c)
      return "nhwc channel vectors do not match";
    if (s.work != std::int64_t(g.n) * s.bands * s.strips * s.channel_vectors)
      return "work does not match";
  } else {
    bool known = false;
    for (const DepthwiseStripShape& shape : kDepthwiseStripNchwShapes)
      known = known || (shape.stride == s.stride && shape.pixels == s.pixels &&
                        depthwise_strip_detail::lv_of(shape, elem_bytes) == s.load_vec &&
                        depthwise_strip_detail::nchw_shape_fits(g, shape, elem_bytes));
    if (!known) return "no instantiated nchw strip shape fits";
    if (s.store_vec != (s.load_vec / s.stride > 0 ? s.load_vec / s.stride : 1))
      return "store vector does not match";
    if (s.channel_vectors != 1) return "nchw has no channel vectors";
    if (s.work != std::int64_t(g.n) * g.c * s.bands * s.strips) return "work does not match";
  }
  if (s.work > INT_MAX) return "more than 2^31-1 threads";
  return "";
}

// e.g. "3x3 s1 strips: 8 outputs along W x 1 channel per thread (8-element loads), band of 2
// rows, 14 strips x 56 bands per plane"; "3x3 s2 strips: 2 pixels x 8 channels per thread
// (16-byte vectors), band of 4 rows, ...".
inline std::string depthwise_strip_config_name(const Im2colGeometry& g,
                                               const DepthwiseStripConfig& s) {
  auto num = [](std::int64_t v) { return std::to_string(v); };
  std::string out = "3x3 s" + num(s.stride) + " strips: " + num(s.pixels);
  if (g.nhwc)
    out += " pixels x " + num(s.load_vec) + " channels per thread (one 16-byte vector)";
  else
    out += " outputs along W per thread (" + num(s.load_vec) + "-element loads, " +
           num(s.store_vec) + "-element stores)";
  out += ", band of " + num(s.band) + (s.band == 1 ? " row" : " rows") + " (" +
         num((s.band - 1) * s.stride + kDepthwiseStripK) + " input rows loaded once), " +
         num(s.strips) + " strips x " + num(s.bands) + " bands" +
         (g.nhwc ? " x " + num(s.channel_vectors) + " channel vectors" : "") + " per " +
         (g.nhwc ? "image" : "plane");
  return out;
}

}  // namespace conv
