// What the depthwise strip tests (test_depthwise_strip.cpp: support, choice and configurations;
// test_depthwise_strip_emulation.cpp: every thread emulated on the CPU) share: the problem sets
// (fixed edge cases, MobileNet-v2's depthwise layers, randomized 3x3 problems), the forced
// choices of sub-variants 8.2 and 8.3, and the per-output sum every depthwise kernel computes.
#pragma once

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "conv/cuda/depthwise_config.hpp"
#include "conv/cuda/depthwise_strip.hpp"
#include "conv/data.hpp"
#include "conv/im2col_index.hpp"
#include "conv/problem.hpp"
#include "core/dtype.hpp"

namespace conv::testing {

inline constexpr int kH200Sms = 132;

inline std::vector<Problem> parse_all(const std::vector<const char*>& texts) {
  std::vector<Problem> out;
  for (const char* t : texts) out.push_back(parse_problem(t));
  return out;
}

// MobileNet-v2's ten depthwise layers (experiments/shapes/mobilenet_v2.txt).
inline std::vector<Problem> mobilenet_dw(int mb) {
  std::vector<Problem> out = parse_all({
      "g32mb32ic32ih112oc32kh3ph1",
      "g96mb32ic96ih112oc96kh3sh2ph1",
      "g144mb32ic144ih56oc144kh3ph1",
      "g144mb32ic144ih56oc144kh3sh2ph1",
      "g192mb32ic192ih28oc192kh3ph1",
      "g192mb32ic192ih28oc192kh3sh2ph1",
      "g384mb32ic384ih14oc384kh3ph1",
      "g576mb32ic576ih14oc576kh3ph1",
      "g576mb32ic576ih14oc576kh3sh2ph1",
      "g960mb32ic960ih7oc960kh3ph1",
  });
  for (Problem& p : out) p.mb = mb;
  return out;
}

// 3x3 problems for the strips' edges: partial last strips and bands, odd and tiny sizes, rows
// wider than a strip by one, padding 0 and 2 (nhwc only), stride 2 with odd W, one pixel.
inline std::vector<Problem> fixed_problems() {
  return parse_all({
      "g8mb2ic8ih10oc8kh3ph1",
      "g16mb1ic16ih9oc16kh3sh2ph1",
      "g8mb1ic8ih13iw17oc8kh3kw3ph1pw1",
      "g24mb2ic24ih15iw9oc24kh3kw3sh2sw2ph1pw1",
      "g8mb1ic8ih1iw1oc8kh3kw3ph1pw1",
      "g16mb1ic16ih2iw40oc16kh3kw3ph1pw1",
      "g8mb1ic8ih12oc8kh3",                     // no padding (nchw: 8.1)
      "g8mb1ic8ih12oc8kh3ph2",                  // padding 2 (nchw: 8.1)
      "g8mb3ic8ih11iw33oc8kh3kw3sh2sw2ph1pw1",  // odd W at stride 2: element loads
      "g32mb1ic32ih7oc32kh3ph1",
      "g40mb1ic40ih14oc40kh3sh2ph1",
      "g8mb1ic8ih30iw28oc8kh3kw3ph1pw1",  // W = 28: 4-element strips
      "g12mb2ic12ih6iw16oc12kh3kw3ph1pw1",
  });
}

// Random 3x3 problems the strips run (stride 1 or 2, padding 1 in nchw; channels in whole
// 16-byte vectors for nhwc) and some they do not (channels off the vector, other padding).
inline std::vector<Problem> random_problems(std::size_t count, unsigned seed) {
  std::vector<Problem> out;
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  while (out.size() < count) {
    Problem p;
    p.g = pick(0, 3) == 0 ? pick(1, 24) : 8 * pick(1, 4);
    p.ic = p.oc = p.g;
    p.mb = pick(1, 3);
    p.ih = pick(1, 30);
    p.iw = pick(1, 30);
    p.kh = p.kw = 3;
    p.sh = p.sw = pick(1, 2);
    p.ph = pick(0, 4) == 0 ? pick(0, 2) : 1;
    p.pw = pick(0, 4) == 0 ? pick(0, 2) : 1;
    if (p.validate().empty() && p.unsupported_reason().empty()) out.push_back(p);
  }
  return out;
}

inline Im2colGeometry geometry(Problem p, Layout layout) {
  p.layout = layout;
  return make_im2col_geometry(p);
}

inline DepthwiseChoice strips(int pixels = 0, int band = 0) {
  DepthwiseChoice c;
  c.sub_variant = 2;
  c.strip_pixels = pixels;
  c.strip_band = band;
  return c;
}

inline DepthwiseChoice pipe(int band = 0, int strips_per_block = 0) {
  DepthwiseChoice c;
  c.sub_variant = 3;
  c.strip_band = band;
  c.pipe_strips = strips_per_block;
  return c;
}

inline std::vector<Problem> all_problems() {
  std::vector<Problem> out = fixed_problems();
  for (const Problem& p : mobilenet_dw(32)) out.push_back(p);
  for (const Problem& p : random_problems(60, 2024)) out.push_back(p);
  return out;
}

// The forced choices the tests run: bands of 1, 2, 3 (one period of the stride-1 rotation) and
// 5 rows, and every nchw strip width for the stride.
inline std::vector<DepthwiseChoice> forced(const Im2colGeometry& g) {
  std::vector<DepthwiseChoice> out;
  for (int band : {1, 2, 3, 5}) out.push_back(strips(0, band));
  if (!g.nhwc)
    for (const DepthwiseStripShape& shape : kDepthwiseStripNchwShapes)
      if (shape.stride == g.sh) out.push_back(strips(shape.pixels, 2));
  return out;
}

// What every depthwise kernel computes for output (n, oc, oy, ox): fmaf over the taps in (r, s)
// order from 0, padding read as 0, rounded to dt once.
inline float direct(const Im2colGeometry& g, const HostData& data, DataType dt, int n, int oc,
                    int oy, int ox) {
  float acc = 0.0f;
  for (int r = 0; r < g.kh; ++r)
    for (int s = 0; s < g.kw; ++s) {
      const int iy = oy * g.sh - g.ph + r * g.dh, ix = ox * g.sw - g.pw + s * g.dw;
      float x = 0.0f;
      if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w)
        x = data.src[std::size_t(act_offset(g.nhwc, n, oc / g.ocg, iy, ix, g.c, g.h, g.w))];
      const float w = data.wei[std::size_t((oc * g.kh + r) * g.kw + s)];
      acc = std::fma(x, w, r == 0 && s == 0 ? 0.0f : acc);
    }
  return bench::round_to(dt, acc);
}

}  // namespace conv::testing
