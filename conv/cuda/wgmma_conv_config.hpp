// The plan of the Hopper tensor-core convolution (variant 10, conv/cuda/wgmma_conv.cu): which
// problems it runs, its tile and pipeline depth, and its split-K. Host-only C++ with no CUDA
// dependency, so that the choice is unit-tested everywhere (tests/conv/test_wgmma_conv.cpp).
//
// The kernel is an implicit GEMM on the nhwc input (the problem's own, or variant 6's repack of
// an nchw one): per output tile of BM = 128 pixels x BN output channels, each k slice is 128 bytes
// of channels of one filter tap (64 fp16/bf16 or 32 tf32 values), loaded by the copy engine:
// the pixels' slice by an im2col-mode tensor copy (which applies the stride, the padding and the
// tap offset itself, zero-filling outside the image), the weights' slice by a tiled tensor copy
// of the [OC][KH][KW][C] weights (as [OC][KH*KW][C]). Where C is not a whole number of slices, a
// tap's last slice reaches past C in both tensors and the copies fill it with zeros. Hence the
// conditions below: one group, rows of whole 16-byte units (the tensor copies' strides) and the
// tensor copy's ranges for the corners, offsets and strides.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "conv/im2col_index.hpp"

namespace conv {

inline constexpr int kWgmmaBm = 128;          // output pixels per tile (two warpgroups of 64)
inline constexpr int kWgmmaSliceBytes = 128;  // k slice: one 128-byte swizzle row per pixel/oc
inline constexpr int kWgmmaThreads = 384;     // a producer warpgroup and two consumer warpgroups
inline constexpr int kWgmmaMaxSplits = 8;
// Shared memory a block may opt in to on Hopper (cudaDevAttrMaxSharedMemoryPerBlockOptin).
inline constexpr std::size_t kWgmmaSmemLimit = 232448;

// The epilogue's FP32 staging tile, apart from the stages (the producer already fills them with
// the next tile's slices): pixel rows of BN (+4) channels for nhwc output, channel rows of 128
// (+4) pixels for nchw; the larger of the two.
MYCONV_HD constexpr std::size_t wgmma_staging_bytes(int bn) {
  const std::size_t nhwc = std::size_t(kWgmmaBm) * (bn + 4) * 4;
  const std::size_t nchw = std::size_t(bn) * (kWgmmaBm + 4) * 4;
  return nhwc > nchw ? nhwc : nchw;
}
// The most stages that fit beside the staging tile, the 1024-byte alignment slack and the
// barriers: 4 for BN 128 (32 KB each), 7 for BN 64 (24 KB each).
MYCONV_HD constexpr int wgmma_stages(int bn) {
  const std::size_t stage = std::size_t(kWgmmaBm + bn) * kWgmmaSliceBytes;
  return int((kWgmmaSmemLimit - wgmma_staging_bytes(bn) - 1024 - 256) / stage);
}
MYCONV_HD constexpr std::size_t wgmma_smem_bytes(int bn) {
  return std::size_t(wgmma_stages(bn)) * (kWgmmaBm + bn) * kWgmmaSliceBytes +
         wgmma_staging_bytes(bn) + 1024 + 256;
}
inline constexpr int kWgmmaMinSlicesPerSplit = 4;

struct WgmmaConvPlan {
  int bn = 0;      // output channels per tile: 64 or 128
  int stages = 0;  // shared-memory stages of the copy pipeline
  int bk = 0;      // values per k slice (128 bytes)
  int slices = 0;  // k slices: KH * KW * ceil(C / bk)
  int splits = 1;  // split-K; > 1: FP32 partials summed by a second kernel
  std::int64_t m_tiles = 0, n_tiles = 0;
  int grid = 0;                // persistent blocks: min(work units, SMs)
  std::size_t smem_bytes = 0;  // dynamic shared memory per block
  // Launched with programmatic dependent launch (core/cuda/pdl.cuh; the caller sets it).
  bool pdl = false;

  // Work units (tile and split), taken by the persistent blocks in turn.
  std::int64_t units() const { return m_tiles * n_tiles * splits; }
  std::size_t stage_bytes() const { return std::size_t(kWgmmaBm + bn) * kWgmmaSliceBytes; }
};

// k slices per filter tap: ceil(C / bk) of bk = 128 / element_bytes channels each, the last one
// zero-filled past C where C is not a whole number of slices.
inline int wgmma_slices_per_tap(const Im2colGeometry& g, int element_bytes) {
  const int bk = kWgmmaSliceBytes / element_bytes;
  return (g.icg + bk - 1) / bk;
}

// Empty when the kernel can run g (the geometry of the nhwc tensors it reads: the problem's, or
// variant 6's repacked one) with values of element_bytes bytes, else why not.
inline std::string wgmma_conv_unsupported_reason(const Im2colGeometry& g, int element_bytes) {
  if (element_bytes != 2 && element_bytes != 4) return "tf32, fp16 or bf16 only";
  if (g.groups != 1) return "one group only (the weights' tensor copy has no group offset)";
  if (g.icg * element_bytes % 16 != 0)
    return "input channels must be a multiple of " + std::to_string(16 / element_bytes) +
           " (the tensor copies' 16-byte strides)";
  if (g.ph > 127 || g.pw > 127 || g.ph - (g.kh - 1) * g.dh < -128 ||
      g.pw - (g.kw - 1) * g.dw < -128)
    return "padding or filter extent outside the im2col tensor copy's corner range [-128, 127]";
  if ((g.kh - 1) * g.dh > 255 || (g.kw - 1) * g.dw > 255)
    return "filter extent beyond the im2col tensor copy's 8-bit tap offsets";
  if (g.sh > 8 || g.sw > 8) return "stride above 8 (the tensor copy's traversal stride)";
  if (g.m <= 0 || g.oc <= 0) return "empty problem";
  return "";
}

// Tile, depth, split-K and grid for sm_count SMs: the tile width (BN 64 or 128; 64 only where
// OC <= 64, where a 128-wide tile would compute zeros) and split-K count with the least estimated
// time: waves of blocks, each 1/splits of the K loop, plus, with split-K, the FP32 partials
// written and read back (8 bytes per output per split) at kWgmmaFlopsPerByte, the tensor-core
// rate over the memory bandwidth (H200 leads: about 600 dense fp16 TFLOP/s reached over 3.5 TB/s;
// tf32 at half the rate). Split-K only where the tiles leave SMs idle. A 64-wide tile takes
// kWgmmaBn64Cost of a 128-wide one's time: fewer tiles of 128 lose where OC leaves the last
// n-tile part empty or the waves round up (OC 160 and 192 over 73 m-tiles: 146 tiles for 132
// SMs). The most stages that fit (wgmma_stages).
inline constexpr double kWgmmaFlopsPerByte = 170.0;
// From the H200 sweep of both widths and split-K 1, 2, 4 over the 78 layers of Inception-v3,
// MobileNet-v2, ResNet-50 and VGG-16 that variant 10 takes, fp16 and tf32 nhwc (source 09989d3:
// results/h200/20261128_conv_wgmma_plan_sweep/): a 64-wide tile took 0.65-0.75 of a 128-wide
// one's time on the large layers (10 cases of five or more waves). With 0.8 the choice was
// measured in 151 of 156 cases: the fastest plan or within 6% of it in 144, within 10% in 149
// (lowest 0.86x); against the width-by-OC rule before it 1.05x geomean, up to 1.42x, one case
// 0.94x.
inline constexpr double kWgmmaBn64Cost = 0.8;
// bn and splits > 0 override the choice (tests and experiments; splits at most the slices).
inline WgmmaConvPlan wgmma_conv_plan(const Im2colGeometry& g, int element_bytes, int sm_count,
                                     int bn = 0, int splits = 0) {
  WgmmaConvPlan p;
  p.bk = kWgmmaSliceBytes / element_bytes;
  p.slices = g.kh * g.kw * wgmma_slices_per_tap(g, element_bytes);
  p.m_tiles = (std::int64_t(g.m) + kWgmmaBm - 1) / kWgmmaBm;
  const std::int64_t sms = std::max(sm_count, 1);
  const double flops_per_byte = element_bytes == 4 ? kWgmmaFlopsPerByte / 2 : kWgmmaFlopsPerByte;
  // In flops of the whole GPU: a wave of blocks, each a 128 x 128 tile over the K slices.
  const double wave_flops = 2.0 * kWgmmaBm * 128 * double(p.slices) * p.bk * double(sms);
  const double partial_flops = 8.0 * double(g.m) * double(g.oc) * flops_per_byte;
  const int max_splits = std::max(1, std::min(kWgmmaMaxSplits, p.slices / kWgmmaMinSlicesPerSplit));
  double best = -1;
  for (int width : {64, 128}) {
    if (bn == 64 || bn == 128 ? width != bn : width == 128 && g.oc <= 64) continue;
    const std::int64_t tiles = p.m_tiles * ((std::int64_t(g.oc) + width - 1) / width);
    const double wave = wave_flops * (width == 64 ? kWgmmaBn64Cost : 1.0);
    for (int s = 1; s <= max_splits && (s == 1 || tiles < sms); ++s) {
      const std::int64_t waves = (tiles * s + sms - 1) / sms;
      const double t = double(waves) * wave / s + (s > 1 ? s * partial_flops : 0.0);
      if (best < 0 || t < best) {
        best = t;
        p.bn = width;
        p.splits = s;
      }
    }
  }
  p.n_tiles = (std::int64_t(g.oc) + p.bn - 1) / p.bn;
  p.stages = wgmma_stages(p.bn);
  p.smem_bytes = wgmma_smem_bytes(p.bn);
  if (splits > 0) p.splits = std::max(1, std::min(splits, p.slices));
  p.grid = int(std::min<std::int64_t>(p.units(), sms));
  return p;
}

// Where tf32 operands are rounded to nearest when the layout needs no repack: by a copy before
// the kernel (the repack's, which then also runs in nhwc), or by the kernel in shared memory as
// each stage lands (256 consumer threads, a fence and a barrier per stage: more shared-memory
// traffic beside the MMAs, no pass over the input in memory). The rule, from one H100 run of
// ResNet-50 in nhwc tf32 (results/h100/20261127_conv_tf32_rounding/): in the kernel for 1x1
// filters, where the layer is one pass over its input and the copy is most of the time
// (res2_1x1_up 60 us against cuDNN's 53); by the copy for the others, where each input value
// feeds KH*KW taps and the per-stage rounding made the kernel slower (res3_3x3 72 us, res4_3x3
// 69 us against 62 and 43 in nchw, whose repack rounds). `setting`: MYCONV_TF32_ROUNDING's value
// (null, "" or "auto": the rule; "copy" or "kernel" force one, to time both); anything else
// throws std::invalid_argument.
enum class WgmmaTf32Rounding { copy, in_kernel };
inline WgmmaTf32Rounding wgmma_tf32_rounding(const Im2colGeometry& g, const char* setting) {
  const std::string v = setting ? setting : "";
  if (v == "copy") return WgmmaTf32Rounding::copy;
  if (v == "kernel") return WgmmaTf32Rounding::in_kernel;
  if (!v.empty() && v != "auto")
    throw std::invalid_argument("MYCONV_TF32_ROUNDING='" + v + "': expected auto, copy or kernel");
  return g.kh * g.kw == 1 ? WgmmaTf32Rounding::in_kernel : WgmmaTf32Rounding::copy;
}

// "128x128 tile, 64-value k slices, 4 stages, 104 persistent blocks over 104 tile splits,
// split-K 2 (FP32 partials, ordered sum)": for the algorithm text.
inline std::string wgmma_conv_plan_name(const WgmmaConvPlan& p) {
  return std::to_string(kWgmmaBm) + "x" + std::to_string(p.bn) + " tile, " + std::to_string(p.bk) +
         "-value k slices, " + std::to_string(p.stages) + " stages, " + std::to_string(p.grid) +
         " persistent blocks over " + std::to_string(p.units()) +
         (p.splits > 1 ? " tile splits" : " tiles") +
         (p.splits > 1 ? ", split-K " + std::to_string(p.splits) + " (FP32 partials, ordered sum)"
                       : std::string());
}

}  // namespace conv
