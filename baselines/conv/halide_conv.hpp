// The convolution as a Halide algorithm, shared by the Halide backends. Only the algorithm (the
// pure definition) lives here; each backend writes its own schedules for its target (x86 CPU in
// halide_cpu.cpp; a CUDA variant schedules the same Funcs for a host-cuda target).
//
// Dimension order of every Halide tensor here, innermost index first (Halide's convention):
//   src, dst  (x, y, c, n)      = (w, h, channel, image)
//   weights   (s, r, icg, c)    = (kw, kh, input channel within the group, output channel)
// The memory layout (nchw/nhwc, oihw/ohwi) is only a matter of strides, which the ImageParams and
// the output buffer are constrained to, so the same algorithm reads and writes either layout.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <Halide.h>

#include "conv/problem.hpp"

namespace conv {

// Halide::get_host_target() without the features this CPU lacks. Halide 14 takes a CPU with
// AVX512-BF16 and VNNI for a Sapphire Rapids (AMD Zen 4 and 5 have both), and LLVM's
// sapphirerapids CPU then emits AVX512-FP16 instructions, which those CPUs do not have: JIT code
// died with SIGILL (seen on an AMD EPYC with avx512_bf16, no avx512_fp16). Every Halide target of
// this project starts from this one.
Halide::Target halide_host_target();

// Halide type of a dtype's storage: Float(32) for fp32 and tf32, Float(16), BFloat(16) (UInt(16)
// with bf16_as_bits, see HalideConvOptions).
Halide::Type halide_storage_type(DataType dt, bool bf16_as_bits = false);

// Extents and strides (in elements) of p's host buffers in the dimension order above, for
// Halide::Buffer's halide_dimension_t constructor and the ImageParam/output constraints.
std::vector<halide_dimension_t> halide_src_dims(const Problem& p);
std::vector<halide_dimension_t> halide_wei_dims(const Problem& p);
std::vector<halide_dimension_t> halide_dst_dims(const Problem& p);

// Empty when p's buffers fit Halide's 32-bit indexing, else the reason.
std::string halide_size_limit(const Problem& p);

// The Funcs of one convolution problem; a schedule refers to them by these members.
struct HalideConv {
  Problem problem;
  Halide::Type storage;                        // element type of src, wei and output
  Halide::ImageParam src, wei;                 // inputs; sizes and strides fixed to the problem's
  Halide::Var x{"x"}, y{"y"}, c{"c"}, n{"n"};  // output column, row, channel, image
  // Weight column, row, input channel within the group (with c). No Var is named like another
  // plus "i" or "o": the autoschedulers name split vars that way (Adams2019 failed on "ci").
  Halide::Var s{"s"}, r{"r"}, icg{"icg"};
  Halide::Func src_padded;  // src as fp32 (x, y, c, n), zero outside the image if p pads
  Halide::Func weight;      // wei as fp32 (s, r, icg, c)
  Halide::RDom k;           // reduction: k.x over KW, k.y over KH, k.z over IC/G
  Halide::Func acc;         // fp32 sum: acc = 0, then acc += src_padded * weight over k
  Halide::Func output;      // acc rounded to the storage type; output buffer constrained
                            // to the problem's layout
};

struct HalideConvOptions {
  // Clamp every read of src and wei into its buffer. Needed by schedules that compute outside the
  // output (the autoschedulers split by factors wider than small extents, e.g. 32 fp16 lanes over
  // 4 channels, and shift the split inwards past 0): without the clamp those lanes read outside
  // the inputs, which Halide rejects at run time. The values computed there are discarded; for
  // the output's own elements the clamp changes nothing. Off for the manual schedules, whose
  // splits stay inside every extent, so that their inner loops carry no clamps.
  bool clamp_reads = false;
  // bf16 tensors as their bits (UInt(16) buffers), widened to fp32 by a shift and rounded back to
  // nearest even with integer arithmetic, instead of Halide's BFloat(16) type: for targets whose
  // code generator fails on BFloat(16) (Halide 14's CUDA backend aborts in LLVM on bf16 loads).
  bool bf16_as_bits = false;
};

// Split arithmetic the schedules share: the split factor `want`, clamped to [1, extent] (a split
// is never wider than the extent it splits); the number of tiles of b that cover a.
inline int halide_fit(int want, std::int64_t extent) {
  return static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(want, extent)));
}
inline std::int64_t halide_ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

// Builds the algorithm for p and sets the estimates the autoschedulers need (the problem's exact
// sizes). Everything is left unscheduled (inlined, acc computed at root by default).
HalideConv make_halide_conv(const Problem& p, const HalideConvOptions& options = {});

}  // namespace conv
