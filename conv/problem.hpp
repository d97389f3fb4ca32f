// The convolution problem: one type that prints and parses itself (benchdnn style) and owns
// every derived number (output size, FLOPs, bytes, the im2col GEMM shape). No backend
// recomputes them.
#pragma once

#include <cstdint>
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

// Dilation follows PyTorch: 1 means a dense kernel (benchdnn's "dh" counts the gaps instead).
struct Problem {
  std::int64_t mb = 2, ic = 0, ih = 0, iw = 0, oc = 0, kh = 0, kw = 0;
  std::int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, g = 1;
  DataType dtype = DataType::fp32;
  Layout layout = Layout::nchw;
  std::string name;  // optional label (shape files); not part of the descriptor's identity

  std::int64_t oh() const { return (ih + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  std::int64_t ow() const { return (iw + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
  std::int64_t src_elements() const { return mb * ic * ih * iw; }
  std::int64_t wei_elements() const { return oc * (ic / g) * kh * kw; }
  std::int64_t dst_elements() const { return mb * oc * oh() * ow(); }
  // Reduction length of one output element: IC/G * KH * KW.
  std::int64_t reduction_length() const { return (ic / g) * kh * kw; }
  // Multiply-adds counted as 2 FLOPs.
  double flops() const;
  // Fewest bytes one call moves: src and weights read once, dst written once, in dtype.
  double bytes() const;
  GemmShape gemm() const;

  // Shapes in memory order (for .npy files and framework tensors).
  std::vector<std::int64_t> src_shape() const;
  std::vector<std::int64_t> wei_shape() const;
  std::vector<std::int64_t> dst_shape() const;

  // Canonical descriptor, defaults left out, e.g. "mb2ic4ih64oc8kh5",
  // "mb32ic3ih224oc64kh7sh2ph3", "g32mb1ic32ih112oc32kh3ph1dtbf16nhwc".
  std::string str() const;
  // str() with the benchdnn-style name suffix n"label" when a name is set.
  std::string str_with_name() const;
  // Problem fields as a flat JSON object (for result records).
  nlohmann::ordered_json params() const;

  // Empty when the problem is valid, else a one-line reason naming the field.
  std::string validate() const;
};

bool operator==(const Problem& a, const Problem& b);
inline bool operator!=(const Problem& a, const Problem& b) {
  return !(a == b);
}

// Parses a descriptor. Fields absent from the text keep their value in `defaults` (iw, kw, sw,
// pw, dw follow ih, kh, sh, ph, dh when absent). Tokens: g mb ic ih iw oc kh kw sh sw ph pw dh dw
// (each followed by a positive integer; ph/pw may be 0), dt<fp32|tf32|fp16|bf16>, nchw|nhwc, and
// an optional name n"label". Throws bench::UsageError on malformed text or an invalid problem.
Problem parse_problem(const std::string& text, const Problem& defaults = Problem());

}  // namespace conv
