// The kernel variants of our CUDA backend (im2col_gemm_cuda, conv/cuda/im2col_gemm_cuda.cpp) and
// how one is chosen: a fixed one (--variant N), the reasoned heuristic (--variant auto, the
// default) that states its choice and why, or a search (--variant search) that times the
// candidates once, in the case's compile step, as cuDNN's search does. Host-only C++ with no
// CUDA dependency, so that the heuristic is unit-tested everywhere
// (tests/conv/test_variant_choice.cpp).
#pragma once

#include <string>
#include <vector>

#include "conv/problem.hpp"

namespace conv {

enum class Variant {
  im2col_gemm = 1,                 // fp32: im2col kernel + tiled SGEMM
  implicit_gemm = 2,               // fp32: implicit GEMM, rows computed on the fly
  implicit_gemm_precomp = 3,       // fp32: implicit GEMM, row table
  mma_implicit_gemm = 4,           // tensor cores (mma.sync): implicit GEMM, row table
  mma_im2col_gemm = 5,             // tensor cores: im2col kernel + GEMM
  mma_repacked_implicit_gemm = 6,  // tensor cores: nhwc repack + pipelined implicit GEMM
  small_direct = 7,                // any dtype: direct small-OC kernel
  depthwise = 8,                   // any dtype: direct depthwise kernel
  caffe = 9,                       // any dtype: our im2col + cuBLASLt GEMM
  wgmma_implicit_gemm = 10,        // tf32/fp16/bf16 on Hopper: wgmma + TMA implicit GEMM
  gemm_1x1 = 11,                   // fp16/bf16 on Hopper: 1x1 layers on the GEMM engine
  winograd = 12,                   // fp32 (tf32): 3x3 stride 1, Winograd F(2x2,3x3)
  thin_1x1 = 13,                   // tf32/fp16/bf16 nhwc 1x1: one streaming mma.sync GEMM kernel
};

// "v10 implicit GEMM" etc.: the first words of the algorithm text.
const char* variant_name(Variant v);
bool uses_tensor_cores(Variant v);  // 4, 5, 6, 10, 11, 13

// --variant: "" or "auto" (the heuristic), "search", a variant number 1-13, or one of variant 8's
// sub-variants "8.1" (the staged depthwise kernels), "8.2" (the strip kernels), "8.3" (the
// nhwc strips through shared memory) and "8.4" (nchw whole planes in shared memory), "8.5" (nhwc
// whole images), "8.6" (nhwc direct); plain 8 picks among them; or one of variant 12's: "12.1"
// (transforms and GEMMs as separate kernels) and "12.2" (one fused kernel after the filter
// transform); plain 12 is 12.1 until the GPU measurement of both decides (search times both).
// Throws bench::UsageError for anything else.
struct VariantSetting {
  enum class Mode { automatic, search, fixed };
  Mode mode = Mode::automatic;
  Variant variant = Variant::implicit_gemm_precomp;  // Mode::fixed
  int sub = 0;  // sub-variant: variant 8 1-5, variant 12 1-2 fixed; 0 the variant's own
};
VariantSetting parse_variant_setting(const std::string& text);

// What the heuristic needs to know of the device.
struct VariantDevice {
  bool mma = false;     // the mma.sync variants (4-6) run here: sm_80 or newer, built for it
  bool wgmma = false;   // variant 10 runs here: compute capability 9.0 and the sm_90a build
  bool engine = false;  // variant 11 runs here: the GEMM engine's device question (the same)
};

struct VariantChoice {
  Variant variant;
  std::string why;  // e.g. "Hopper, one group, channels in 128-byte k slices"
};

// The heuristic, in order, each rule from H200 measurements (variant_choice.cpp names the runs;
// the one over every layer of the model grids:
// results/h200/20261128_conv_variant_search_models/):
//   1. depthwise (groups = IC, OC/G <= 4): variant 8;
//   1a. tf32/fp16/bf16 where the mma.sync kernels run, nhwc, a 1x1 filter, stride 1, no padding,
//      one group, rows of whole 16-byte vectors of at most 512 bytes (thin_1x1_unsupported_reason)
//      and where it measured faster (thin_1x1_preferred: fp16/bf16 with IC <= 144 or OC <= 32,
//      tf32 with OC <= 2 IC): variant 13, one streaming kernel whose time is the bytes it moves;
//   1b. fp16/bf16 where the GEMM engine runs, a 1x1 filter, stride 1, no padding, one group and
//      the engine's 16-byte rows (gemm_1x1_unsupported_reason: nchw H*W, nhwc OC, and IC multiples
//      of 8), where it measured faster (engine_1x1_preferred: nchw from 24 output channels, nhwc
//      with 96 or more output channels over 64 or more input channels): variant 11, the engine's
//      GEMM on the tensors as they lie;
//   2. tf32/fp16/bf16 where the mma.sync kernels run, a 1x1 filter, one group, OC/G <= 32 and
//      N*OH*OW >= 16384: variant 4 in nchw, 6 in nhwc. MobileNet-v2's
//      five project layers with 16-32 output channels measured, with --variant search (us, real
//      timing, fp16; results/h200/20261125_conv_variant_search_1x1/): nchw v4 20-50 against
//      v7 33-77, nhwc v6 13-49 against v7 41-127; variant 7 computes in FP32 on CUDA cores;
//   3. few output channels per group (small_direct_preferred): variant 7, the direct kernel,
//      where OC/G <= 8, for grouped layers with OC/G <= 32, in fp32 for nchw filters wider than
//      1x1 over 8 or more input channels with OC/G <= 32, and in tf32/fp16/bf16 where the
//      mma.sync kernels do not run;
//   3a. tf32/fp16/bf16 with mma.sync, one group, fewer than 8 input channels and OC/G <= 32:
//      variant 4 (in place; variant 6 would pad the channels);
//   3b. fp32, a 3x3 stride-1 undilated filter, one group, >= 64 input and output channels
//      (winograd_preferred, conv/cuda/winograd_config.hpp, with its H100 measurements): variant
//      12, Winograd F(2x2,3x3); 12.2 for <= 64 input channels over >= 12544 2x2 output tiles,
//      else 12.1;
//   4. fp32: variant 3 (with its split-K where the grid is short), short grids included: variant
//      7 is slower there (ResNet-50's res3/res4/res5 3x3 layers: small_conv_preferred's comment);
//   5. tf32/fp16/bf16 where variant 10 runs (Hopper, one group, channel rows of whole 16-byte
//      units) and the filter is not 1x1 with a single k slice: variant 10, where the channels are
//      whole 128-byte k slices, or on filters wider than 1x1 fill over half of them (the last
//      slice of a tap zero-filled past C: wgmma_part_slices_pay);
//   6. tf32/fp16/bf16 otherwise: variant 6 (variant 9 where the mma.sync kernels cannot run).
VariantChoice choose_variant(const Problem& p, const VariantDevice& device);

// The variants --variant search times for a dtype: every one that takes it (variant 12 for fp32
// only, both its sub-variants: tf32 runs it on --variant 12 alone, its FP32 math no faster than
// fp32's).
std::vector<Variant> variant_candidates(DataType dt);

}  // namespace conv
