// The convolution problem: one type that prints and parses itself in benchdnn's descriptor
// grammar (oneDNN tests/benchdnn/conv/conv_aux.cpp, str2desc) and owns every derived number
// (output size, FLOPs, bytes, the im2col GEMM shape). No backend recomputes them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"

namespace conv {

using bench::DataType;

// Memory layout of activations and weights.
//   nchw: src/dst [N][C][H][W], weights [OC][IC/G][KH][KW]  (PyTorch's default)
//   nhwc: src/dst [N][H][W][C], weights [OC][KH][KW][IC/G]  (PyTorch channels_last, cuDNN KRSC)
enum class Layout { nchw, nhwc };

std::string to_string(Layout l);
Layout parse_layout(const std::string& text);  // throws bench::UsageError

// The GEMM an im2col convolution performs per group: C[M][N] = A[M][K] * B[K][N] with
// M = N*OH*OW, N = OC/G, K = IC*KH*KW/G.
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0, groups = 1;
};

// Fields and meanings are benchdnn's: dh/dw (dd) count the gaps between kernel taps, 0 = a dense
// kernel (PyTorch's dilation is dh + 1: dilation_h()). A 1D problem (width only) is a 2D one of
// height 1. The suite runs 2D problems with symmetric padding; the others are kept as read so that
// their cases can be recorded as unsupported (unsupported_reason()).
struct Problem {
  std::int64_t mb = 2, ic = 0, ih = 0, iw = 0, oc = 0, kh = 0, kw = 0;
  std::int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 0, dw = 0, g = 1;
  // Depth of a 3D problem; id == 0 means 2D (kd, sd, pd, dd are then unused).
  std::int64_t id = 0, kd = 1, sd = 1, pd = 0, dd = 0;
  // Output size written in the descriptor where it differs from what symmetric padding gives:
  // benchdnn then derives the bottom/right padding from it (asymmetric padding). 0 = derived.
  std::int64_t out_h = 0, out_w = 0, out_d = 0;
  DataType dtype = DataType::fp32;
  Layout layout = Layout::nchw;
  std::string name;  // optional label (n"..."); not part of the descriptor's identity

  // PyTorch's (cuDNN's, Halide's) dilation: 1 = dense.
  std::int64_t dilation_h() const { return dh + 1; }
  std::int64_t dilation_w() const { return dw + 1; }
  bool is_3d() const { return id > 0; }
  // Output size with symmetric padding (ph on both sides).
  std::int64_t symmetric_oh() const;
  std::int64_t symmetric_ow() const;
  std::int64_t oh() const { return out_h ? out_h : symmetric_oh(); }
  std::int64_t ow() const { return out_w ? out_w : symmetric_ow(); }
  std::int64_t od() const;  // 1 for a 2D problem
  // Bottom/right padding as benchdnn derives it: (o - 1) * s - i + ((k - 1) * (d + 1) + 1) - p.
  // With symmetric padding it may be below ph where the last stride step leaves rows unused.
  std::int64_t ph_r() const;
  std::int64_t pw_r() const;

  std::int64_t src_elements() const { return mb * ic * std::max<std::int64_t>(id, 1) * ih * iw; }
  std::int64_t wei_elements() const { return oc * (ic / g) * (is_3d() ? kd : 1) * kh * kw; }
  std::int64_t dst_elements() const { return mb * oc * od() * oh() * ow(); }
  // Reduction length of one output element: IC/G * KD * KH * KW.
  std::int64_t reduction_length() const { return (ic / g) * (is_3d() ? kd : 1) * kh * kw; }
  // Multiply-adds counted as 2 FLOPs.
  double flops() const;
  // Fewest bytes one call moves: src and weights read once, dst written once, in dtype.
  double bytes() const;
  GemmShape gemm() const;

  // Shapes in memory order (for .npy files and framework tensors); 2D problems only.
  std::vector<std::int64_t> src_shape() const;
  std::vector<std::int64_t> wei_shape() const;
  std::vector<std::int64_t> dst_shape() const;

  // Canonical descriptor in benchdnn's grammar, defaults left out, e.g. "mb2ic4ih64oc8kh5",
  // "mb32ic3ih224oc64kh7sh2ph3", "g32mb1ic32ih112oc32kh3ph1dtbf16nhwc". Width fields appear only
  // where they differ from the height ones (then all of them: benchdnn copies the height's
  // only when no width field is written). dt<type> and the layout are this suite's additions.
  std::string str() const;
  // str() with the name suffix n"label" when a name is set.
  std::string str_with_name() const;
  // Problem fields as a flat JSON object (for result records). dh/dw are benchdnn's (0 = dense),
  // dilation_h/dilation_w PyTorch's (1 = dense).
  nlohmann::ordered_json params() const;

  // Empty when the problem is valid, else a one-line reason naming the field.
  std::string validate() const;
  // Empty when this suite's backends can run the problem (2D, symmetric padding), else why not:
  // its cases are then recorded as unsupported.
  std::string unsupported_reason() const;
};

bool operator==(const Problem& a, const Problem& b);
inline bool operator!=(const Problem& a, const Problem& b) {
  return !(a == b);
}

// Parses a descriptor in benchdnn's grammar:
//   tokens g mb ic id ih iw oc od oh ow kd kh kw sd sh sw pd ph pw dd dh dw, each followed by a
//   number, in any order, each at most once, with an optional '_' after any token; then
//   optionally n"name" (any characters but '"' inside the quotes) or an unquoted name nNAME to the
//   end. This suite adds dt<fp32|tf32|fp16|bf16> and nchw|nhwc (before the name).
// Rules as benchdnn's: mb 2 unless given; a spatial axis none of whose fields is written is absent
// (width absent: a copy of the height; height and width absent with a depth: copies of the depth;
// only a width: a 1D problem, run as 2D with height 1); stride 1, dilation 0 (dense); padding 0,
// or, where the output size is written and the padding is not, ((o - 1) * s - i + ((k - 1) *
// (d + 1) + 1)) / 2; output size derived where not written. dtype, layout and mb come from
// `defaults` where the text does not give them. Throws bench::UsageError on malformed text or an
// invalid problem, with the reason.
Problem parse_problem(const std::string& text, const Problem& defaults = Problem());

// "== PROBLEM: dtype layout, input, weights and output shapes, MFLOP, GEMM shape ==" after a
// blank line (the shapes only where this suite runs the problem).
void print_problem(std::ostream& os, const Problem& p);

}  // namespace conv
