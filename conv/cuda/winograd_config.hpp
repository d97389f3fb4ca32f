// Variant 12 of im2col_gemm_cuda: Winograd F(2x2,3x3) (Lavin & Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2016) for 3x3, stride-1, dense, one-group convolutions in FP32 on
// CUDA cores. What the kernels (conv/cuda/winograd_kernels.cu), the instance
// (conv/cuda/winograd.cpp) and the CPU emulation (tests/conv/test_winograd_config.cpp) share: the
// geometry, what the variant takes, and the three transforms, each written once here so that the
// CPU test runs the kernels' own arithmetic in the kernels' order.
//
// The algorithm. The output is cut into 2x2 tiles, tile (ty, tx) of image n reading the 4x4 input
// patch at rows 2*ty - ph .. +3 and columns 2*tx - pw .. +3 (zero outside the image: any padding).
// With P = N * ceil(OH/2) * ceil(OW/2) tiles, p = (n * tiles_h + ty) * tiles_w + tx:
//   U[xi][k][c] = (G g[k][c] G^T)[xi]     the filter transform, 16 x OC x IC;
//   V[xi][c][p] = (B^T d[c][p] B)[xi]     the input transform, 16 x IC x P;
//   M[xi][k][p] = sum_c U[xi][k][c] V[xi][c][p]   16 GEMMs (OC x IC) x (IC x P);
//   Y[k][p] = A^T M[.][k][p] A            the output transform, a 2x2 tile (cut at OH, OW);
// where xi = 4 * i + j indexes the 4x4 transformed tile. 16 multiplies per 2x2 outputs against
// 36 for the direct form: the GEMMs do 2.25x fewer FLOPs than an implicit GEMM of the same layer.
//
//   G = | 1    0    0  |   B^T = | 1  0 -1  0 |   A^T = | 1  1  1  0 |
//       | 1/2  1/2  1/2|         | 0  1  1  0 |         | 0  1 -1 -1 |
//       | 1/2 -1/2  1/2|         | 0 -1  1  0 |
//       | 0    0    1  |         | 0  1  0 -1 |
//
// Host-only where included without CUDA: variant_support.cpp and the CPU tests ask it.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>

#include "conv/im2col_index.hpp"
#include "conv/indexing.hpp"
#include "conv/problem.hpp"
#include "core/dtype.hpp"

namespace conv {

struct WinogradGeometry {
  int n = 0, ic = 0, h = 0, w = 0;  // input: batch, channels, height, width
  int oc = 0, oh = 0, ow = 0;       // output channels, height, width
  int ph = 0, pw = 0;               // top and left padding
  int tiles_h = 0, tiles_w = 0;     // 2x2 output tiles per column and row: ceil(OH/2), ceil(OW/2)
  int p = 0;                        // tiles in all: N * tiles_h * tiles_w (the GEMMs' columns)
  bool nhwc = false;
};

// Empty where variant 12 computes p, else why not. Never throws.
inline std::string winograd_unsupported_reason(const Problem& p) {
  if (p.dtype != DataType::fp32 && p.dtype != DataType::tf32)
    return "variant 12 (Winograd F(2x2,3x3)) computes in FP32 on CUDA cores: fp32 and tf32 "
           "(fp32 storage) only";
  if (p.is_3d() || p.kh != 3 || p.kw != 3)
    return "variant 12 (Winograd F(2x2,3x3)): a 2D 3x3 filter only";
  if (p.sh != 1 || p.sw != 1) return "variant 12 (Winograd F(2x2,3x3)): stride 1 only";
  if (p.dilation_h() != 1 || p.dilation_w() != 1)
    return "variant 12 (Winograd F(2x2,3x3)): no dilation only";
  if (p.g != 1) return "variant 12 (Winograd F(2x2,3x3)): one group only";
  if (p.ic > 65535 || p.oc > 65535)  // the transforms' grid y counts channels
    return "variant 12 (Winograd F(2x2,3x3)): more than 65535 input or output channels";
  // int indices: one image, and the V and M matrices of one transformed element (xi): their
  // GEMM view (conv/cuda/winograd.cpp) is a 1x1 convolution with 16 groups over a 1 x P image.
  const std::int64_t tiles = p.mb * ((p.oh() + 1) / 2) * ((p.ow() + 1) / 2);
  const std::int64_t limit = INT_MAX;
  if (p.ic * p.ih * p.iw > limit || p.oc * p.oh() * p.ow() > limit)
    return "variant 12 (Winograd F(2x2,3x3)): one image exceeds 2^31-1 elements";
  if (16 * tiles * p.ic > limit || 16 * tiles * p.oc > limit)
    return "variant 12 (Winograd F(2x2,3x3)): 16 x channels x tiles (" +
           std::to_string(16 * tiles * std::max(p.ic, p.oc)) + ") exceeds 2^31-1";
  return "";
}

// The geometry of p (winograd_unsupported_reason(p) empty).
inline WinogradGeometry make_winograd_geometry(const Problem& p) {
  WinogradGeometry g;
  g.n = int(p.mb);
  g.ic = int(p.ic);
  g.h = int(p.ih);
  g.w = int(p.iw);
  g.oc = int(p.oc);
  g.oh = int(p.oh());
  g.ow = int(p.ow());
  g.ph = int(p.ph);
  g.pw = int(p.pw);
  g.tiles_h = (g.oh + 1) / 2;
  g.tiles_w = (g.ow + 1) / 2;
  g.p = g.n * g.tiles_h * g.tiles_w;
  g.nhwc = p.layout == Layout::nhwc;
  return g;
}

// --variant auto's rule 3b (conv/cuda/variant_choice.hpp): variant 12 for the fp32 layers it
// takes with at least kWinogradMinChannels input and output channels, the range measured: on an
// H100, ResNet-50's four 3x3 stride-1 layers (64-512 channels, batch 32) ran 1.25-2.49x cuDNN's
// speed in nchw and 0.94-2.49x in nhwc, against 0.44-0.52x for variant 3 on res3_3x3; VGG-16's
// eight such layers (batch 16) 1.03-2.59x (results/h100/20261127_conv_winograd_fp32/). tf32 keeps
// the tensor-core variants.
inline constexpr std::int64_t kWinogradMinChannels = 64;
inline bool winograd_preferred(const Problem& p) {
  return p.dtype == DataType::fp32 && winograd_unsupported_reason(p).empty() &&
         p.ic >= kWinogradMinChannels && p.oc >= kWinogradMinChannels;
}

// Which sub-variant plain `--variant 12` and `--variant auto` run: 12.2 (one fused kernel, one
// 256-thread block per SM, V and M never in memory) for layers of at most 64 input channels and
// many tiles, 12.1 (the separate kernels around the conv SGEMM) otherwise. From one H100 run of
// ResNet-50's four fp32 3x3 stride-1 layers (batch 32) and VGG-16's (batch 16), nchw and nhwc
// (results/h100/20261127_conv_winograd_fp32/): 12.2 faster on the 64-channel layers (res2_3x3
// 170 against 202 us, conv1_2 1321 against 1538; conv2_1, 64 -> 128 channels at 112x112, within
// 2% either way), 12.1 on every layer of 128 channels or more (res3_3x3 147 against 161,
// conv2_2 1096 against 1255, conv4_2 847 against 1190).
inline constexpr int kWinogradFusedMaxChannels = 64;
inline constexpr int kWinogradFusedMinTiles = 12544;
inline int winograd_sub_variant(const WinogradGeometry& g) {
  return g.ic <= kWinogradFusedMaxChannels && g.p >= kWinogradFusedMinTiles ? 2 : 1;
}

// The 16 GEMMs M[xi] = U[xi] V[xi] as the conv SGEMM (conv/cuda/im2col_gemm_kernels.hpp, variant
// 1's GEMM from column matrices) sees them: a 1x1 convolution with 16 groups (one per xi) of IC
// input and OC output channels over one nchw image of 1 x P pixels. Its weights [G][OC/G][K] are
// U, its column matrices col[group][k][m] are V, and its output [1][16 * OC][1][P] is M.
inline Im2colGeometry winograd_gemm_geometry(const WinogradGeometry& w) {
  Im2colGeometry g;
  g.n = 1;
  g.c = 16 * w.ic;
  g.h = 1;
  g.w = w.p;
  g.oc = 16 * w.oc;
  g.kh = g.kw = 1;
  g.oh = 1;
  g.ow = w.p;
  g.groups = 16;
  g.icg = w.ic;
  g.ocg = w.oc;
  g.k = w.ic;
  g.m = w.p;
  g.nhwc = false;
  return g;
}

// Tile p's image and tile coordinates.
struct WinogradTile {
  int n, ty, tx;
};
MYCONV_HD WinogradTile winograd_tile(const WinogradGeometry& g, int p) {
  const int per_image = g.tiles_h * g.tiles_w;
  const int n = p / per_image, rest = p - n * per_image;
  const int ty = rest / g.tiles_w;
  return {n, ty, rest - ty * g.tiles_w};
}

// ---- The transforms (the kernels' arithmetic, in their order) ----------------------------------
// Loops of fixed trip counts in force-inlined functions: nvcc unrolls them without a pragma (the
// kernels' registers: conv/cuda/winograd_kernels.cu), which host compilers would warn about.

// u = G f G^T: f the 3x3 filter row-major, u the 4x4 result row-major (u[4 * i + j]).
MYCONV_HD void winograd_filter_tile(const float f[9], float u[16]) {
  float t[4][3];  // G f: rows of the filter combined
  for (int s = 0; s < 3; ++s) {
    const float a = f[s], b = f[3 + s], c = f[6 + s];
    t[0][s] = a;
    t[1][s] = 0.5f * (a + b + c);
    t[2][s] = 0.5f * (a - b + c);
    t[3][s] = c;
  }
  for (int i = 0; i < 4; ++i) {  // (G f) G^T: columns combined
    const float a = t[i][0], b = t[i][1], c = t[i][2];
    u[4 * i + 0] = a;
    u[4 * i + 1] = 0.5f * (a + b + c);
    u[4 * i + 2] = 0.5f * (a - b + c);
    u[4 * i + 3] = c;
  }
}

// v = B^T d B: d the 4x4 input patch row-major, v row-major.
MYCONV_HD void winograd_input_tile(const float d[16], float v[16]) {
  float t[16];  // B^T d
  for (int j = 0; j < 4; ++j) {
    const float d0 = d[j], d1 = d[4 + j], d2 = d[8 + j], d3 = d[12 + j];
    t[j] = d0 - d2;
    t[4 + j] = d1 + d2;
    t[8 + j] = d2 - d1;
    t[12 + j] = d1 - d3;
  }
  for (int i = 0; i < 4; ++i) {  // (B^T d) B
    const float t0 = t[4 * i], t1 = t[4 * i + 1], t2 = t[4 * i + 2], t3 = t[4 * i + 3];
    v[4 * i + 0] = t0 - t2;
    v[4 * i + 1] = t1 + t2;
    v[4 * i + 2] = t2 - t1;
    v[4 * i + 3] = t1 - t3;
  }
}

// y = A^T m A: m the 4x4 GEMM outputs row-major, y the 2x2 output tile row-major.
MYCONV_HD void winograd_output_tile(const float m[16], float y[4]) {
  float t[2][4];  // A^T m
  for (int j = 0; j < 4; ++j) {
    t[0][j] = m[j] + m[4 + j] + m[8 + j];
    t[1][j] = m[4 + j] - m[8 + j] - m[12 + j];
  }
  for (int i = 0; i < 2; ++i) {  // (A^T m) A
    y[2 * i + 0] = t[i][0] + t[i][1] + t[i][2];
    y[2 * i + 1] = t[i][1] - t[i][2] - t[i][3];
  }
}

}  // namespace conv
