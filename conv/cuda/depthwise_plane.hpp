// The nchw whole-plane kernel (sub-variant 8.4 of im2col_gemm_cuda,
// conv/cuda/depthwise_plane_kernels.cu): configuration, index math and the per-output-strip
// algorithm, host and device (MYCONV_HD), shared with the CPU emulation in
// tests/conv/test_depthwise_plane.cpp.
//
// For small maps (MobileNet-v2's 14x14 and 7x7 layers with 384-960 channels) the strips of 8.2
// are short: a 14-wide row takes 7-output strips of element loads, a band is one row, and every
// input element is loaded three times (once per output row it feeds); 8.1 stages floats and,
// with 64 registers and 224 threads, keeps 4 blocks (25 KB) per SM in flight. Here a block owns
// `planes` consecutive whole planes (n * C + c), which are one contiguous run in nchw, and
//   1. copies the run into shared memory as stored (16-bit stays 16-bit) with 16-byte loads, four
//      per thread in flight, and the planes' 9 taps as floats;
//   2. computes strips of P outputs along W (items: plane, output row, strip) from shared memory,
//      FP32 fmaf in the taps' (r, s) order (bit-identical to the other depthwise kernels), and
//      writes them, rounded, into a shared output run;
//   3. copies the output run out with 16-byte stores.
// Every global access is a 16-byte vector except a run's last few elements (where planes *
// H * W is not a multiple of 16 bytes: the grid's last block), and each input element is read
// from global memory once. `planes` is a multiple of the least count that keeps every block's run
// 16-byte aligned (7x7 fp16: 8 planes), as large as ~2 items per thread of a 128-thread block and
// 48 KB allow (small blocks: 8 per SM interleave their copy and compute phases).
#pragma once

#include <climits>
#include <cmath>
#include <cstdint>
#include <string>

#include "conv/cuda/depthwise_strip_config.hpp"
#include "conv/im2col_index.hpp"
#include "conv/indexing.hpp"

#if defined(__CUDA_ARCH__)
#define MYCONV_PLANE_UNROLL _Pragma("unroll")
#else
#define MYCONV_PLANE_UNROLL
#endif

namespace conv {

inline constexpr int kDepthwisePlaneMaxThreads = 128;
// Blocks per SM the register budget must allow (__launch_bounds__: 64 registers at most).
inline constexpr int kDepthwisePlaneBlocks = 8;
inline constexpr int kDepthwisePlaneItemsPerThread = 2;
inline constexpr int kDepthwisePlaneMaxSmemBytes = 48 * 1024;
// 16-byte vectors a thread loads before it stores any (copy-in batch).
inline constexpr int kDepthwisePlaneCopyBatch = 4;

// P: outputs per item along W; 7 where OW is a multiple of 7 (MobileNet's 14 and 7), else 8.
constexpr int depthwise_plane_pixels(int ow) {
  return ow % 7 == 0 ? 7 : 8;
}

struct DepthwisePlaneConfig {
  int stride = 0;
  int pixels = 0;             // P
  int strips = 0;             // ceil(OW / P)
  int planes = 0;             // per block (the last block may have fewer)
  int threads = 0;            // per block, whole warps
  std::int64_t blocks = 0;    // ceil(N * C / planes)
  int in_elems = 0;           // planes * H * W
  int out_elems = 0;          // planes * OH * OW
  int out_offset_bytes = 0;   // shared output run: after the input run, 16-byte aligned
  int taps_offset_bytes = 0;  // planes * 9 taps as floats, after the output run
  int smem_bytes = 0;
};

// The least planes per block that keep every block's input and output runs 16-byte aligned.
inline int depthwise_plane_align(const Im2colGeometry& g, int elem_bytes) {
  auto need = [](std::int64_t bytes) {
    int f = 1;
    while ((bytes * f) % 16 != 0) f *= 2;
    return f;
  };
  const int a = need(std::int64_t(g.h) * g.w * elem_bytes),
            b = need(std::int64_t(g.oh) * g.ow * elem_bytes);
  return a > b ? a : b;
}

namespace depthwise_plane_detail {

inline int round16(int bytes) {
  return (bytes + 15) / 16 * 16;
}
inline void fill(const Im2colGeometry& g, int elem_bytes, int planes, DepthwisePlaneConfig& c) {
  c.planes = planes;
  c.in_elems = planes * g.h * g.w;
  c.out_elems = planes * g.oh * g.ow;
  c.out_offset_bytes = round16(c.in_elems * elem_bytes);
  c.taps_offset_bytes = c.out_offset_bytes + round16(c.out_elems * elem_bytes);
  c.smem_bytes = c.taps_offset_bytes + round16(planes * kDepthwiseStripK * kDepthwiseStripK * 4);
  const int items = planes * g.oh * c.strips;
  int threads = (items + kDepthwisePlaneItemsPerThread - 1) / kDepthwisePlaneItemsPerThread;
  threads = (threads + 31) / 32 * 32;
  c.threads = threads < kDepthwisePlaneMaxThreads ? threads : kDepthwisePlaneMaxThreads;
  c.blocks = (std::int64_t(g.n) * g.c + planes - 1) / planes;
}

}  // namespace depthwise_plane_detail

// What the whole-plane (8.4), whole-image (8.5) and direct (8.6) kernels ask of a problem beyond
// its layout: depthwise, multiplier 1, 3x3, undilated, stride 1 or 2, padding >= 0, not empty,
// tensors of under 2^31 elements. Empty when g has it, else why not.
inline std::string depthwise_3x3_unsupported_reason(const Im2colGeometry& g) {
  if (g.icg != 1 || g.groups != g.c) return "not depthwise";
  if (g.ocg != 1) return "channel multiplier " + std::to_string(g.ocg) + " (takes 1)";
  if (g.kh != kDepthwiseStripK || g.kw != kDepthwiseStripK) return "not a 3x3 filter";
  if (g.dh != 1 || g.dw != 1) return "dilated";
  if (g.sh != g.sw || (g.sh != 1 && g.sh != 2))
    return "stride other than 1 or 2 in both directions";
  if (g.ph < 0 || g.pw < 0) return "negative padding";
  if (g.n <= 0 || g.oh <= 0 || g.ow <= 0 || g.c <= 0) return "empty problem";
  if (std::int64_t(g.n) * g.c * g.h * g.w > INT_MAX ||
      std::int64_t(g.n) * g.c * g.oh * g.ow > INT_MAX)
    return "more than 2^31-1 elements";
  return "";
}

// Empty when the whole-plane kernel runs g with elem_bytes-byte storage, else why not.
inline std::string depthwise_plane_unsupported_reason(const Im2colGeometry& g, int elem_bytes) {
  if (g.nhwc) return "nchw only";
  if (const std::string why = depthwise_3x3_unsupported_reason(g); !why.empty()) return why;
  DepthwisePlaneConfig c;
  c.strips = (g.ow + depthwise_plane_pixels(g.ow) - 1) / depthwise_plane_pixels(g.ow);
  depthwise_plane_detail::fill(g, elem_bytes, depthwise_plane_align(g, elem_bytes), c);
  if (c.smem_bytes > kDepthwisePlaneMaxSmemBytes)
    return "the least aligned run of whole planes (" + std::to_string(c.planes) +
           ") exceeds 48 KB of shared memory";
  return "";
}

// The configuration for g (check depthwise_plane_unsupported_reason first) on sm_count SMs;
// planes_override > 0 caps the planes per block (rounded down to the alignment, tests).
inline DepthwisePlaneConfig depthwise_plane_config(const Im2colGeometry& g, int elem_bytes,
                                                   int sm_count, int planes_override = 0) {
  DepthwisePlaneConfig c;
  c.stride = g.sh;
  c.pixels = depthwise_plane_pixels(g.ow);
  c.strips = (g.ow + c.pixels - 1) / c.pixels;
  const int f = depthwise_plane_align(g, elem_bytes);
  const std::int64_t total = std::int64_t(g.n) * g.c;
  const int per_plane = g.oh * c.strips;
  // Items for ~2 per thread of a full block, within 48 KB, at least two blocks per SM where the
  // planes allow, and no more planes than there are.
  const int sms = sm_count > 0 ? sm_count : 1;
  int planes = kDepthwisePlaneMaxThreads * kDepthwisePlaneItemsPerThread / per_plane / f * f;
  if (planes < f) planes = f;
  if (planes_override > 0) {
    const int most = planes_override / f * f > f ? planes_override / f * f : f;
    if (planes > most) planes = most;
  }
  while (planes > f) {
    DepthwisePlaneConfig t = c;
    depthwise_plane_detail::fill(g, elem_bytes, planes, t);
    if (t.smem_bytes <= kDepthwisePlaneMaxSmemBytes && t.blocks >= 2 * std::int64_t(sms) &&
        planes <= total)
      break;
    planes -= f;
  }
  depthwise_plane_detail::fill(g, elem_bytes, planes, c);
  return c;
}

inline std::string depthwise_plane_config_mismatch(const Im2colGeometry& g, int elem_bytes,
                                                   const DepthwisePlaneConfig& c) {
  if (const std::string why = depthwise_plane_unsupported_reason(g, elem_bytes); !why.empty())
    return why;
  if (c.stride != g.sh) return "stride does not match";
  if (c.pixels != depthwise_plane_pixels(g.ow) || c.strips != (g.ow + c.pixels - 1) / c.pixels)
    return "strips do not match";
  const int f = depthwise_plane_align(g, elem_bytes);
  if (c.planes < f || c.planes % f != 0) return "planes not a multiple of the alignment";
  DepthwisePlaneConfig t = c;
  depthwise_plane_detail::fill(g, elem_bytes, c.planes, t);
  if (t.threads != c.threads || t.blocks != c.blocks || t.in_elems != c.in_elems ||
      t.out_elems != c.out_elems || t.out_offset_bytes != c.out_offset_bytes ||
      t.taps_offset_bytes != c.taps_offset_bytes || t.smem_bytes != c.smem_bytes)
    return "derived sizes do not match the planes";
  if (c.smem_bytes > kDepthwisePlaneMaxSmemBytes) return "shared memory above 48 KB";
  if (c.blocks > INT_MAX) return "blocks";
  return "";
}

inline std::string depthwise_plane_config_name(const DepthwisePlaneConfig& c) {
  auto num = [](std::int64_t v) { return std::to_string(v); };
  return "3x3 s" + num(c.stride) + " whole planes in shared memory: " + num(c.planes) +
         " planes per block (" + num(c.smem_bytes / 1024) + " KB, 16-byte copies in and out), " +
         num(c.pixels) + " outputs along W per item, " + num(c.strips) +
         (c.strips == 1 ? " strip" : " strips") + " per row, block " + num(c.threads) +
         " threads, grid " + num(c.blocks);
}

// Block `block`: its first plane and how many it has (the last block may have fewer).
struct DepthwisePlaneBlock {
  std::int64_t plane0 = 0;
  int planes = 0;
};
MYCONV_HD DepthwisePlaneBlock depthwise_plane_block(const Im2colGeometry& g,
                                                    const DepthwisePlaneConfig& c, int block) {
  DepthwisePlaneBlock b;
  b.plane0 = std::int64_t(block) * c.planes;
  const std::int64_t left = std::int64_t(g.n) * g.c - b.plane0;
  b.planes = left < c.planes ? int(left) : c.planes;
  return b;
}

// Item `item` of a block (< planes * OH * strips): strips fastest, then rows, then planes.
struct DepthwisePlaneItem {
  int plane = 0;  // within the block
  int oy = 0, ox0 = 0;
};
MYCONV_HD DepthwisePlaneItem depthwise_plane_item(const Im2colGeometry& g,
                                                  const DepthwisePlaneConfig& c, int item) {
  DepthwisePlaneItem it;
  const int strip = item % c.strips;
  item /= c.strips;
  it.oy = item % g.oh;
  it.plane = item / g.oh;
  it.ox0 = strip * c.pixels;
  return it;
}

// The P outputs of an item from its plane: `in(iy, ix)` the stored input as a float (called for
// iy, ix inside the plane only; the padding reads as 0), w the plane's taps, acc[p] output
// (oy, ox0 + p) summed in (r, s) order with fmaf from 0, as every depthwise kernel.
template <int S, int P, class In>
MYCONV_HD void depthwise_plane_outputs(const Im2colGeometry& g, const In& in, int oy, int ox0,
                                       const float (&w)[kDepthwiseStripK * kDepthwiseStripK],
                                       float (&acc)[P]) {
  constexpr int K = kDepthwiseStripK;
  constexpr int C = (P - 1) * S + K;
  const int ix0 = ox0 * S - g.pw;
  MYCONV_PLANE_UNROLL
  for (int r = 0; r < K; ++r) {
    const int iy = oy * S - g.ph + r;
    const bool row_in = iy >= 0 && iy < g.h;
    float x[C];
    MYCONV_PLANE_UNROLL
    for (int j = 0; j < C; ++j) {
      const int ix = ix0 + j;
      x[j] = row_in && ix >= 0 && ix < g.w ? in(iy, ix) : 0.0f;
    }
    MYCONV_PLANE_UNROLL
    for (int s = 0; s < K; ++s) MYCONV_PLANE_UNROLL
    for (int p = 0; p < P; ++p) {
      const float a = (r == 0 && s == 0) ? 0.0f : acc[p];
      acc[p] = fmaf(x[p * S + s], w[r * K + s], a);
    }
  }
}

}  // namespace conv
