// The index math of im2col convolution, shared by the CUDA kernels (conv/cuda/) and the CPU test
// that checks it against the reference (tests/conv/test_im2col_index.cpp).
//
// Per group g the convolution is one GEMM, out[oc][m] = sum_k wei[oc][k] * col[k][m], with
//   k in [0, K), K = IC/G * KH * KW: one (input channel c of the group, kernel tap r, s),
//   m in [0, M), M = N * OH * OW:     one output pixel (n, oy, ox), m = (n * OH + oy) * OW + ox,
//   oc in [0, OC/G):                  one output channel of the group.
// col is the (K x M) column matrix: col[k][m] is the input element that tap k of pixel m reads,
// or 0 where that falls into the padding.
//
// k is numbered in the weights' memory order ((c * KH + r) * KW + s for nchw weights
// [OC][IC/G][KH][KW]; (r * KW + s) * IC/G + c for nhwc weights [OC][KH][KW][IC/G]), so that the
// GEMM's A operand, wei[oc][k], is the weight tensor as it lies in memory, row-major with K
// columns.
//
// The source offset splits into a column part and a row part, which is what lets an implicit GEMM
// decompose m once per thread and k once per tile row:
//   src offset = column(m).base + group_offset(g) + row(k).offset,
//   valid when 0 <= column(m).ih0 + row(k).dy < H and 0 <= column(m).iw0 + row(k).dx < W.
// Index values (m, k, channels, sizes) are int: the caller checks im2col_index_limits() first.
#pragma once

#include <cstdint>
#include <string>

#include "conv/indexing.hpp"

namespace conv {

struct Problem;

struct Im2colGeometry {
  int n = 0, c = 0, h = 0, w = 0;  // input: batch, channels of all groups, height, width
  int oc = 0, kh = 0, kw = 0;      // output channels of all groups, kernel height, width
  int oh = 0, ow = 0;              // output height, width
  int sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int groups = 1;
  int icg = 0, ocg = 0;  // channels per group: input (IC/G) and output (OC/G)
  int k = 0;             // K = icg * kh * kw
  int m = 0;             // M = n * oh * ow
  bool nhwc = false;
};

// Empty when every index of p fits the int arithmetic of these helpers, else the reason.
std::string im2col_index_limits(const Problem& p);
// The geometry of p (check im2col_index_limits(p) first).
Im2colGeometry make_im2col_geometry(const Problem& p);

// Kernel tap of GEMM row k: channel c within the group, kernel row r and column s.
struct Im2colTap {
  int c, r, s;
};
MYCONV_HD Im2colTap im2col_tap(const Im2colGeometry& g, int k) {
  if (g.nhwc) {
    const int rs = k / g.icg;
    return {k - rs * g.icg, rs / g.kw, rs % g.kw};
  }
  const int c = k / (g.kh * g.kw);
  const int rs = k - c * (g.kh * g.kw);
  return {c, rs / g.kw, rs % g.kw};
}

// A row or column coordinate this far outside the image makes every access padding; used for
// rows k >= K and columns m >= M of a partial tile. The sum of two stays inside int.
constexpr int kIm2colOutside = -(1 << 29);

// Row k of the column matrix: its tap's displacement in the input (dy, dx) and its offset from a
// column's base in the input tensor, not counting the group's channel offset.
struct Im2colRow {
  int offset, dy, dx;
};
MYCONV_HD Im2colRow im2col_row(const Im2colGeometry& g, int k) {
  if (k >= g.k) return {0, kIm2colOutside, kIm2colOutside};
  const Im2colTap t = im2col_tap(g, k);
  const int dy = t.r * g.dh, dx = t.s * g.dw;
  const int offset = g.nhwc ? (dy * g.w + dx) * g.c + t.c : (t.c * g.h + dy) * g.w + dx;
  return {offset, dy, dx};
}

// Column m of the column matrix: the top-left input coordinate (ih0, iw0) of output pixel m's
// receptive field (negative in the padding) and the input offset of (n, channel 0, ih0, iw0).
struct Im2colColumn {
  std::int64_t base;
  int ih0, iw0;
};
MYCONV_HD Im2colColumn im2col_column(const Im2colGeometry& g, int m) {
  if (m >= g.m) return {0, kIm2colOutside, kIm2colOutside};
  const int ohw = g.oh * g.ow;
  const int n = m / ohw;
  const int p = m - n * ohw;
  const int oy = p / g.ow, ox = p - oy * g.ow;
  const int ih0 = oy * g.sh - g.ph, iw0 = ox * g.sw - g.pw;
  const std::int64_t image = std::int64_t(n) * g.c * g.h * g.w;
  const std::int64_t base = g.nhwc ? image + (std::int64_t(ih0) * g.w + iw0) * g.c
                                   : image + std::int64_t(ih0) * g.w + iw0;
  return {base, ih0, iw0};
}

// Input offset of channel group * icg (the first channel of the group).
MYCONV_HD std::int64_t im2col_group_offset(const Im2colGeometry& g, int group) {
  const std::int64_t c0 = std::int64_t(group) * g.icg;
  return g.nhwc ? c0 : c0 * g.h * g.w;
}

// Input offset that row `row` of column `col` reads in group `group`, or -1 for padding.
MYCONV_HD std::int64_t im2col_combine(const Im2colGeometry& g, std::int64_t group_offset,
                                      const Im2colColumn& col, const Im2colRow& row) {
  const int ih = col.ih0 + row.dy, iw = col.iw0 + row.dx;
  // One unsigned comparison tests 0 <= x < size.
  if (unsigned(ih) >= unsigned(g.h) || unsigned(iw) >= unsigned(g.w)) return -1;
  return col.base + group_offset + row.offset;
}

// col[k][m] of group `group`: the input offset it holds, or -1 for padding.
MYCONV_HD std::int64_t im2col_src_offset(const Im2colGeometry& g, int group, int k, int m) {
  return im2col_combine(g, im2col_group_offset(g, group), im2col_column(g, m), im2col_row(g, k));
}

// wei[oc][k] of group `group` (oc within the group): row-major, K columns, in both layouts.
MYCONV_HD std::int64_t im2col_wei_offset(const Im2colGeometry& g, int group, int oc, int k) {
  return (std::int64_t(group) * g.ocg + oc) * g.k + k;
}

// Output offset of pixel m, channel 0: dst offset of (m, channel o) is
// im2col_dst_column(g, m) + o * im2col_dst_channel_stride(g), o counted over all groups.
MYCONV_HD std::int64_t im2col_dst_column(const Im2colGeometry& g, int m) {
  if (g.nhwc) return std::int64_t(m) * g.oc;
  const int ohw = g.oh * g.ow;
  const int n = m / ohw;
  return std::int64_t(n) * g.oc * ohw + (m - n * ohw);
}
MYCONV_HD std::int64_t im2col_dst_channel_stride(const Im2colGeometry& g) {
  return g.nhwc ? 1 : std::int64_t(g.oh) * g.ow;
}

// out[oc][m] of group `group` (oc within the group): its offset in the output tensor.
MYCONV_HD std::int64_t im2col_dst_offset(const Im2colGeometry& g, int group, int oc, int m) {
  return im2col_dst_column(g, m) +
         (std::int64_t(group) * g.ocg + oc) * im2col_dst_channel_stride(g);
}

}  // namespace conv
