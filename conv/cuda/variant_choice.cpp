#include "conv/cuda/variant_choice.hpp"

#include <cstdint>

#include "conv/cuda/depthwise_config.hpp"
#include "conv/cuda/gemm_1x1_config.hpp"
#include "conv/cuda/mma_index.hpp"
#include "conv/cuda/small_conv_config.hpp"
#include "conv/cuda/thin_1x1_config.hpp"
#include "conv/cuda/wgmma_conv_config.hpp"
#include "conv/cuda/winograd_config.hpp"
#include "conv/im2col_index.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"

namespace conv {

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::im2col_gemm:
      return "v1 im2col + GEMM (column buffer)";
    case Variant::implicit_gemm:
      return "v2 implicit GEMM";
    case Variant::implicit_gemm_precomp:
      return "v3 implicit GEMM, precomputed rows";
    case Variant::mma_implicit_gemm:
      return "v4 implicit GEMM";
    case Variant::mma_im2col_gemm:
      return "v5 im2col (column buffer) + GEMM";
    case Variant::mma_repacked_implicit_gemm:
      return "v6 implicit GEMM";
    case Variant::small_direct:
      return "v7 direct small-OC, FP32 math on CUDA cores";
    case Variant::depthwise:
      return "v8 depthwise direct, FP32 math on CUDA cores";
    case Variant::caffe:
      return "v9 im2col + cuBLASLt GEMM (Caffe-classic)";
    case Variant::wgmma_implicit_gemm:
      return "v10 implicit GEMM";
    case Variant::gemm_1x1:
      return "v11 1x1 GEMM on the Hopper engine";
    case Variant::winograd:
      return "v12 Winograd F(2x2,3x3), FP32 on CUDA cores";
    case Variant::thin_1x1:
      return "v13 thin 1x1 GEMM";
  }
  return "unknown";
}

bool uses_tensor_cores(Variant v) {
  return v == Variant::mma_implicit_gemm || v == Variant::mma_im2col_gemm ||
         v == Variant::mma_repacked_implicit_gemm || v == Variant::wgmma_implicit_gemm ||
         v == Variant::gemm_1x1 || v == Variant::thin_1x1;
}

VariantSetting parse_variant_setting(const std::string& text) {
  VariantSetting s;
  if (text.empty() || text == "auto") return s;
  if (text == "search") {
    s.mode = VariantSetting::Mode::search;
    return s;
  }
  if (text == "8.1" || text == "8.2" || text == "8.3" || text == "8.4" || text == "8.5" ||
      text == "8.6") {
    s.mode = VariantSetting::Mode::fixed;
    s.variant = Variant::depthwise;
    s.sub = text[2] - '0';
    return s;
  }
  if (text == "12.1" || text == "12.2") {
    s.mode = VariantSetting::Mode::fixed;
    s.variant = Variant::winograd;
    s.sub = text[3] - '0';
    return s;
  }
  int n = 0;
  if (text.size() == 1 && text[0] >= '1' && text[0] <= '9') n = text[0] - '0';
  if (text == "10") n = 10;
  if (text == "11") n = 11;
  if (text == "12") n = 12;
  if (text == "13") n = 13;
  if (n == 0)
    throw bench::UsageError(
        "--variant '" + text +
        "': im2col_gemm_cuda takes auto (the heuristic, default), search (time the candidates "
        "once, as compile time) or a variant: 1 (im2col + GEMM), 2 (implicit GEMM), 3 (implicit "
        "GEMM, precomputed rows), 4 (tensor-core implicit GEMM), 5 (im2col + tensor-core GEMM), "
        "6 (nhwc repack + tensor-core implicit GEMM), 7 (direct small-OC kernel), 8 (direct "
        "depthwise kernels; 8.1 the staged ones, 8.2 the strip ones, 8.3 nhwc strips through "
        "shared memory, 8.4 nchw whole planes in shared memory, 8.5 nhwc whole images, 8.6 nhwc "
        "direct), 9 (im2col "
        "+ cuBLASLt GEMM, "
        "Caffe-classic), 10 (Hopper wgmma + TMA "
        "implicit GEMM), 11 (1x1 layers on the Hopper GEMM engine, fp16/bf16), 12 (Winograd "
        "F(2x2,3x3), fp32 3x3 stride 1; 12.1 separate kernels, 12.2 one fused kernel), 13 (nhwc "
        "1x1 layers as one "
        "streaming mma.sync GEMM kernel, tf32/fp16/bf16)");
  s.mode = VariantSetting::Mode::fixed;
  s.variant = Variant(n);
  return s;
}

namespace {

// Rule 2 (variant_choice.hpp): a problem in the small-OC kernel's range (OC/G <= 32), in
// tf32/fp16/bf16 where the mma.sync kernels run, with a 1x1 filter, one group and at least
// kWide1x1Pixels output pixels (GEMM rows M) in all.
constexpr int kWide1x1Pixels = 16384;

bool tensor_core_wide_1x1(const Problem& p, const Im2colGeometry& g, const VariantDevice& device) {
  return p.dtype != DataType::fp32 && device.mma && g.groups == 1 && g.kh == 1 && g.kw == 1 &&
         g.m >= kWide1x1Pixels && small_conv_preferred(g);
}

// Rule 3 (variant_choice.hpp): small_conv_preferred's range (OC/G <= 32) narrowed by the
// --variant search run of every dense layer with OC/G <= 32 of Inception-v3, MobileNet-v2,
// ResNet-50 and the seed grid, every dtype and layout (H200;
// results/h200/20261128_conv_variant_search_models/, search.md). Variant 7 was fastest on the
// seed grid's OC 8 in all 72 cases (1.07-2.4x the best other), but with 16-32 output channels
// slower than the tensor-core variants in every tf32/fp16/bf16 case (1.13-6.8x: v4, v6, v10 or v11
// won). In fp32 against variant 3 (v7's time / v3's): nhwc 1.44-3.0 in all 9 cases; nchw 1x1
// layers 0.91-1.46 (slower on 3 of 5; the rule gives them all to variant 3), 3-channel inputs
// 1.00-1.55, and faster (0.91) on the one filter wider than 1x1 over 8 or more input channels
// (Inception-v3's mb32ic32ih149oc32kh3, which keeps it). Grouped layers keep it: no other variant
// was measured there.
bool small_direct_preferred(const Problem& p, const Im2colGeometry& g,
                            const VariantDevice& device) {
  if (!small_conv_preferred(g)) return false;
  if (g.ocg <= 8 || g.groups > 1) return true;
  if (p.dtype != DataType::fp32) return !device.mma;
  return !g.nhwc && g.kh * g.kw > 1 && g.icg >= 8;
}

// Rule 3a (variant_choice.hpp): fewer than 8 input channels per group (an image's 3) and few
// output channels, where variant 6 pads the channels to whole 16-byte vectors (K 27 -> 72 in
// fp16) and variant 10 cannot run: variant 4 reads them in place. The search run (above): the
// fastest in all 12 tf32/fp16/bf16 cells of the 3-channel first layers with 32 output channels
// (Inception-v3, MobileNet-v2), 1.55-2.4x faster than variant 6; with 64 (ResNet-50, VGG-16)
// variant 6 was as fast (v6 / v4 0.91-1.12), so they keep it.
bool few_input_channels(const Problem& p, const Im2colGeometry& g, const VariantDevice& device) {
  return p.dtype != DataType::fp32 && device.mma && g.groups == 1 && g.icg < 8 && g.ocg <= 32;
}

// Rule 5 (variant_choice.hpp): variant 10 with channels that are not whole 128-byte slices (the
// last slice of each tap zero-filled). From the search run over Inception-v3 and MobileNet-v2
// at 1d95b81 (results/h200/20261128_conv_variant_search_models/part_slices/): on filters wider
// than 1x1 with the slices over half full (62-90%: 48, 80, 96, 160, 288 fp16/bf16 channels; 48,
// 80 tf32) it was faster than every other variant in all 40 cases (1.01-1.82x the best other);
// half full (32 fp16/bf16 channels) in 2 of 8 (0.86-1.04x); on 1x1 filters with more than one
// slice in 11 of 32 (0.55-1.33x).
bool wgmma_part_slices_pay(const Im2colGeometry& r, int bytes) {
  const int slice_channels = wgmma_slices_per_tap(r, bytes) * (kWgmmaSliceBytes / bytes);
  return r.icg == slice_channels || (r.kh * r.kw > 1 && 2 * r.icg > slice_channels);
}

// Where variant 11 beat the rules below it, from the H200 run of the 20 1x1 layers of ResNet-50
// and MobileNet-v2 in fp16 and bf16 (results/h200/20261126_conv_1x1_variant11/, against
// results/h200/20261125_conv_variant_auto_1x1/): in nchw faster on every layer it takes with 24 or
// more output channels (1.1-2.2x), slower with 16 (0.80-0.88x); in nhwc where the GEMM is wide
// and deep enough for its 128-row tiles and 64-deep k blocks: 96 or more output channels over 64
// or more input channels. With its plan by waves of tiles (gemm_1x1_plan) it also beat variant 6
// on MobileNet-v2's b4_2_expand and b5_2_expand (64 and 96 input channels, 1.08-1.15x,
// results/h200/20261128_conv_thin_1x1/); on the rest of nhwc (few output or input channels)
// variants 13, 6 and 10 were as fast or faster.
bool engine_1x1_preferred(const Problem& p) {
  if (p.layout == Layout::nchw) return p.oc >= 24;
  return p.oc >= 96 && p.ic >= 64;
}

}  // namespace

VariantChoice choose_variant(const Problem& p, const VariantDevice& device) {
  const bool indexable = im2col_index_limits(p).empty();
  const Im2colGeometry g = indexable ? make_im2col_geometry(p) : Im2colGeometry{};
  if (indexable && p.g == p.ic && depthwise_supported(g))
    return {Variant::depthwise, "depthwise (groups = input channels, OC/G <= " +
                                    std::to_string(kDepthwiseMaxMultiplier) + ")"};
  if (device.mma && thin_1x1_unsupported_reason(p).empty() && thin_1x1_preferred(p))
    return {Variant::thin_1x1, "an nhwc 1x1 layer of " + std::to_string(p.ic) + " input and " +
                                   std::to_string(p.oc) +
                                   " output channels: one streaming kernel, its time the bytes"};
  if (device.engine && gemm_1x1_unsupported_reason(p).empty() && engine_1x1_preferred(p))
    return {Variant::gemm_1x1,
            "a 1x1 filter, stride 1, one group: the GEMM engine on the tensors as they lie"};
  if (indexable && tensor_core_wide_1x1(p, g, device)) {
    const std::string why =
        "a wide 1x1 GEMM with few output channels: tensor cores with rows "
        "unused beat variant 7's FP32 math";
    return p.layout == Layout::nchw
               ? VariantChoice{Variant::mma_implicit_gemm, why + "; nchw read in place"}
               : VariantChoice{Variant::mma_repacked_implicit_gemm, why};
  }
  if (indexable && small_direct_preferred(p, g, device))
    return {Variant::small_direct, "few output channels per group (" + std::to_string(g.ocg) +
                                       "): a GEMM tile's rows would go unused"};
  if (indexable && few_input_channels(p, g, device))
    return {Variant::mma_implicit_gemm,
            "fewer than 8 input channels: read in place, not padded to 16-byte vectors"};
  if (winograd_preferred(p))
    return {Variant::winograd,
            "fp32 3x3 stride 1, one group, >= " + std::to_string(kWinogradMinChannels) +
                " channels: Winograd F(2x2,3x3), 2.25x fewer multiplies"};
  if (p.dtype == DataType::fp32) return {Variant::implicit_gemm_precomp, "fp32 on CUDA cores"};
  if (indexable && device.wgmma) {
    const int bytes = bench::storage_bytes(p.dtype);
    const Im2colGeometry r = mma_repacked_geometry(g, bytes);
    const std::string why_not = wgmma_conv_unsupported_reason(r, bytes);
    const int slices = wgmma_slices_per_tap(r, bytes);
    const int slice_channels = slices * (kWgmmaSliceBytes / bytes);
    const bool one_slice = g.kh * g.kw == 1 && slices == 1;
    if (why_not.empty() && !one_slice && wgmma_part_slices_pay(r, bytes))
      return {Variant::wgmma_implicit_gemm, "Hopper, one group, " + std::to_string(r.icg) +
                                                " channels in " + std::to_string(slices) +
                                                " 128-byte k slices per tap"};
    if (why_not.empty() && one_slice)
      return {Variant::mma_repacked_implicit_gemm,
              "a 1x1 filter with one k slice: nothing for variant 10's pipeline to overlap"};
    if (why_not.empty())
      return {Variant::mma_repacked_implicit_gemm,
              "not variant 10: " + std::to_string(r.icg) + " channels in " +
                  std::to_string(slice_channels) +
                  " per tap (whole 128-byte k slices), not over half full on a filter wider "
                  "than 1x1"};
    if (device.mma) return {Variant::mma_repacked_implicit_gemm, "not variant 10: " + why_not};
  }
  if (device.mma) return {Variant::mma_repacked_implicit_gemm, "tensor cores (mma.sync)"};
  return {Variant::caffe, "no tensor-core kernel of ours runs here: cuBLASLt's GEMM"};
}

std::vector<Variant> variant_candidates(DataType dt) {
  if (dt == DataType::fp32)
    return {Variant::im2col_gemm,  Variant::implicit_gemm, Variant::implicit_gemm_precomp,
            Variant::small_direct, Variant::depthwise,     Variant::caffe,
            Variant::winograd};
  return {
      Variant::mma_implicit_gemm,   Variant::mma_im2col_gemm, Variant::mma_repacked_implicit_gemm,
      Variant::small_direct,        Variant::depthwise,       Variant::caffe,
      Variant::wgmma_implicit_gemm, Variant::gemm_1x1,        Variant::thin_1x1};
}

}  // namespace conv
