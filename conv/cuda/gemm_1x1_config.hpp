// Variant 11 of im2col_gemm_cuda: a 1x1 convolution (stride 1, no padding, one group) as one call
// of the Hopper GEMM engine (core/cuda/gemm/), fp16 and bf16, no repack, no column buffer:
//   nchw: Y[n][OC][H*W] = W[OC][IC] X[n][IC][H*W], a batch of N GEMMs m = OC, n = H*W, k = IC:
//         A the weights, one matrix every image reads (GemmShape::a_shared), B the image;
//   nhwc: Y[N*H*W][OC] = X[N*H*W][IC] W[OC][IC]^T, one GEMM m = N*H*W, n = OC, k = IC: A the
//         input, B the weights read K-major ([n][k] storage: GemmShape::b_k_major).
// Its plan (gemm_1x1_plan) is the engine's, with the tile width and split-K chosen for conv's
// shapes by a cost model of waves of tiles. Host-only, no CUDA
// dependency, so that the variant choice (conv/cuda/variant_choice.cpp) asks it and
// tests/conv/test_variant_choice.cpp checks it on the CPU.
#pragma once

#include <string>

#include "conv/problem.hpp"
#include "core/cuda/gemm/gemm_config.hpp"
#include "core/dtype.hpp"

namespace conv {

// The engine's GEMM of p (meaningful where gemm_1x1_unsupported_reason(p) is empty).
inline bench::gemm::GemmShape gemm_1x1_shape(const Problem& p) {
  bench::gemm::GemmShape s;
  if (p.layout == Layout::nchw) {
    s.batch = p.mb;
    s.m = p.oc;
    s.n = p.ih * p.iw;
    s.a_shared = true;
  } else {
    s.m = p.mb * p.ih * p.iw;
    s.n = p.oc;
    s.b_k_major = true;
  }
  s.k = p.ic;
  return s;
}

// Empty where variant 11 computes p (on a device where the engine runs: that is the caller's
// question), else why not. Never throws.
inline std::string gemm_1x1_unsupported_reason(const Problem& p) {
  if (p.dtype != DataType::fp16 && p.dtype != DataType::bf16)
    return "fp16 and bf16 only (tf32 1x1 layers stay with variant 10, which rounds its operands)";
  if (p.is_3d() || p.kh != 1 || p.kw != 1 || p.g != 1) return "a 2D 1x1 filter with one group only";
  if (p.sh != 1 || p.sw != 1 || p.ph != 0 || p.pw != 0 || p.oh() != p.ih || p.ow() != p.iw)
    return "stride 1 and no padding only (the input is the GEMM's operand as it lies)";
  const std::string why = bench::gemm::gemm_unsupported_reason(gemm_1x1_shape(p), 2);
  if (why.empty()) return "";
  return (p.layout == Layout::nchw ? "nchw as a GEMM m = OC, n = H*W, k = IC: "
                                   : "nhwc as a GEMM m = N*H*W, n = OC, k = IC: ") +
         why;
}

// The engine's plan for the GEMM s on sm_count SMs: of the 128- and 256-wide tiles the one with
// the fewer waves of tiles (ceil(tiles / SMs)), a 256-wide tile's wave costing
// kGemm1x1Bn256Cost of two 128-wide ones; ping-pong where 128-wide tiles make 16 waves or more
// (gemm_auto_plan's rule); split-K where the tiles fill at most half the SMs and k is at least
// kGemm1x1SplitFromBlocks k blocks, into as many splits as fill the SMs, each at least
// kGemm1x1MinSplitBlocks long. From the H200 run of every plan over the 1x1 layers of the model
// grids, fp16 nchw and nhwc (results/h200/20261128_conv_thin_1x1/v11_plans/): gemm_auto_plan took
// the 256-wide tile wherever its tiles filled the SMs, also where n was 64 (Inception-v3's Mixed_5
// layers in nhwc: 1.48-1.56x the 128-wide tile's time) or where it left a second wave near empty
// (MobileNet-v2's b5_2_expand, 147 tiles: 1.42x); its split-K rule (the partials' bytes at most the
// operands') split none of these layers, where 2-4 splits of k = 2048 on 32-64 tiles
// measured 1.01-1.30x faster and 2 of k = 1280 0.86-0.98x (one layer 1.04x). The splits are
// summed by the engine's second kernel: summed in the GEMM's kernel by each tile's last unit
// (GemmPlan::reduce_in_kernel, MYCONV_GEMM_1X1_REDUCE=kernel) measured slower on every layer
// and split count, fp16 nhwc, in one call (results/h200/20261128_conv_split_in_kernel/).
inline constexpr double kGemm1x1Bn256Cost = 1.7;
inline constexpr int kGemm1x1SplitFromBlocks = 32;
inline constexpr int kGemm1x1MinSplitBlocks = 8;
inline bench::gemm::GemmPlan gemm_1x1_plan(const bench::gemm::GemmShape& s, int sm_count) {
  namespace gemm = bench::gemm;
  const std::int64_t sms = sm_count > 0 ? sm_count : 1;
  const auto tiles = [&](int bn) {
    return (s.m + gemm::kBm - 1) / gemm::kBm * ((s.n + bn - 1) / bn) * s.batch;
  };
  const auto waves = [&](int bn) { return (tiles(bn) + sms - 1) / sms; };
  const int bn = double(waves(256)) * kGemm1x1Bn256Cost < double(waves(128)) ? 256 : 128;
  if (bn == 128 && tiles(128) >= 16 * sms)
    return gemm::gemm_plan(s, sm_count, 128, 1, gemm::GemmSchedule::pingpong);
  int splits = 1;
  const int k_blocks =
      int((s.k + gemm::block_k(s.element_bytes) - 1) / gemm::block_k(s.element_bytes));
  if (tiles(bn) * 2 <= sms && k_blocks >= kGemm1x1SplitFromBlocks) {
    std::int64_t want = sms / tiles(bn);
    if (want > k_blocks / kGemm1x1MinSplitBlocks) want = k_blocks / kGemm1x1MinSplitBlocks;
    if (want > gemm::kMaxSplits) want = gemm::kMaxSplits;
    if (want >= 2) splits = int(want);
  }
  return gemm::gemm_plan(s, sm_count, bn, splits);
}

}  // namespace conv
