// Variant 12's host side (conv/cuda/winograd_config.hpp), on the CPU, in test_variant_choice's
// binary: what it takes and why not; the tile geometry; the GEMM mapping onto the conv SGEMM's
// geometry; the transforms exact on integers; and the whole algorithm emulated in float in the
// kernels' order (their transform functions, the GEMM accumulating over the input channels in
// order with fmaf, as 12.2's fused kernel and 12.1's SGEMM without split-K do) against the
// float64 reference at IC = 512,
// within the backend's fp32 tolerance (bench::dot_tolerance), beside the direct form's error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "conv/cuda/winograd_config.hpp"
#include "conv/data.hpp"
#include "conv/indexing.hpp"
#include "core/compare.hpp"
#include "tests/conv/typed_problem.hpp"

namespace conv {
namespace {

using testing::typed_problem;

TEST(WinogradConfig, TakesFp32ThreeByThreeStrideOneAndSaysWhyNot) {
  for (const char* text : {"mb32ic64ih56oc64kh3ph1", "mb32ic128ih28oc128kh3ph1",
                           "mb32ic256ih14oc256kh3ph1", "mb32ic512ih7oc512kh3ph1", "mb1ic3ih5oc7kh3",
                           "mb3ic5ih9iw13oc11kh3kw3ph2pw2", "mb1ic1ih1oc1kh3ph1"})
    for (DataType dt : {DataType::fp32, DataType::tf32})
      for (Layout layout : {Layout::nchw, Layout::nhwc})
        EXPECT_EQ(winograd_unsupported_reason(typed_problem(text, dt, layout)), "") << text;
  struct No {
    Problem p;
    const char* why;
  };
  const std::vector<No> no = {
      {typed_problem("mb2ic8ih9oc8kh3ph1", DataType::fp16), "fp32 and tf32"},
      {typed_problem("mb2ic8ih9oc8kh3ph1", DataType::bf16), "fp32 and tf32"},
      {typed_problem("mb2ic8ih9oc8kh5ph2"), "3x3 filter"},
      {typed_problem("mb2ic8ih9iw9oc8kh3kw1"), "3x3 filter"},
      {typed_problem("mb2ic8ih9oc8kh1"), "3x3 filter"},
      {typed_problem("mb2ic8ih9oc8kh3sh2ph1"), "stride 1"},
      {typed_problem("mb2ic8ih9iw9oc8kh3kw3sh1sw2ph1pw1"), "stride 1"},
      {typed_problem("mb2ic8ih9oc8kh3ph2dh1"), "no dilation"},
      {typed_problem("g2mb2ic8ih9oc8kh3ph1"), "one group"},
      {typed_problem("g8mb2ic8ih9oc8kh3ph1"), "one group"},
      {typed_problem("mb2ic70000ih3oc8kh3ph1"), "65535"},
      {typed_problem("mb1024ic2048ih64oc64kh3ph1"), "exceeds 2^31-1"},
  };
  for (const No& n : no) {
    const std::string why = winograd_unsupported_reason(n.p);
    EXPECT_NE(why.find(n.why), std::string::npos) << n.p.str() << ": " << why;
    EXPECT_EQ(why.rfind("variant 12 (Winograd F(2x2,3x3))", 0), 0u) << why;
  }
}

TEST(WinogradConfig, TilesCoverTheOutput) {
  const WinogradGeometry res3 = make_winograd_geometry(typed_problem("mb32ic128ih28oc128kh3ph1"));
  EXPECT_EQ(res3.oh, 28);
  EXPECT_EQ(res3.tiles_h, 14);
  EXPECT_EQ(res3.tiles_w, 14);
  EXPECT_EQ(res3.p, 32 * 14 * 14);
  // Odd output sizes: the last tile row and column are half used.
  const WinogradGeometry odd = make_winograd_geometry(
      typed_problem("mb3ic5ih9iw14oc11kh3kw3ph2pw2", DataType::fp32, Layout::nhwc));
  EXPECT_EQ(odd.oh, 11);
  EXPECT_EQ(odd.ow, 16);
  EXPECT_EQ(odd.tiles_h, 6);
  EXPECT_EQ(odd.tiles_w, 8);
  EXPECT_EQ(odd.p, 3 * 48);
  EXPECT_TRUE(odd.nhwc);
  int p = 0;
  for (int n = 0; n < odd.n; ++n)
    for (int ty = 0; ty < odd.tiles_h; ++ty)
      for (int tx = 0; tx < odd.tiles_w; ++tx, ++p) {
        const WinogradTile t = winograd_tile(odd, p);
        ASSERT_EQ(t.n, n);
        ASSERT_EQ(t.ty, ty);
        ASSERT_EQ(t.tx, tx);
      }
}

// The conv SGEMM's view (winograd_gemm_geometry): its weights are U[xi][k][c], its column
// matrices V[xi][c][p] and its output M[xi][k][p], element for element.
TEST(WinogradConfig, GemmGeometryAddressesUVAndM) {
  const WinogradGeometry w = make_winograd_geometry(typed_problem("mb3ic5ih9iw13oc11kh3kw3ph2pw2"));
  const Im2colGeometry g = winograd_gemm_geometry(w);
  for (int xi = 0; xi < 16; ++xi)
    for (int c = 0; c < w.ic; ++c)
      for (int k = 0; k < w.oc; ++k) {
        ASSERT_EQ(im2col_wei_offset(g, xi, k, c), (std::int64_t(xi) * w.oc + k) * w.ic + c);
        for (int p = 0; p < w.p; p += 7) {
          ASSERT_EQ(im2col_src_offset(g, xi, c, p), (std::int64_t(xi) * w.ic + c) * w.p + p);
          ASSERT_EQ(im2col_dst_offset(g, xi, k, p), (std::int64_t(xi) * w.oc + k) * w.p + p);
        }
      }
  EXPECT_EQ(g.m, w.p);
  EXPECT_EQ(g.k, w.ic);
  EXPECT_EQ(g.ocg, w.oc);
}

// A^T [(G f G^T) . (B^T d B)] A is the 2x2 correlation of the 4x4 patch d with the 3x3 filter f:
// exactly so in float on small integers (even ones for f: G's halves stay integers).
TEST(WinogradConfig, TransformsComputeTheCorrelationExactly) {
  std::mt19937 rng(32);
  std::uniform_int_distribution<int> value(-8, 8);
  for (int trial = 0; trial < 200; ++trial) {
    float f[9], d[16], u[16], v[16], m[16], y[4];
    for (float& x : f) x = float(2 * value(rng));
    for (float& x : d) x = float(value(rng));
    winograd_filter_tile(f, u);
    winograd_input_tile(d, v);
    for (int xi = 0; xi < 16; ++xi) m[xi] = u[xi] * v[xi];
    winograd_output_tile(m, y);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j) {
        float direct = 0;
        for (int r = 0; r < 3; ++r)
          for (int s = 0; s < 3; ++s) direct += f[3 * r + s] * d[4 * (i + r) + j + s];
        ASSERT_EQ(y[2 * i + j], direct) << "trial " << trial << " output " << i << "," << j;
      }
  }
}

// ---- Emulation in float -------------------------------------------------------------------------

// Variant 12 on the CPU: the kernels' transforms and loads (zeros outside the image), the GEMMs
// over c in order with fmaf, the 2x2 tiles cut at the output's edge; the output in p's layout.
std::vector<float> emulate_winograd(const Problem& prob, const HostData& data) {
  const WinogradGeometry g = make_winograd_geometry(prob);
  const std::size_t plane_u = std::size_t(g.oc) * g.ic, plane_v = std::size_t(g.ic) * g.p,
                    plane_m = std::size_t(g.oc) * g.p;
  std::vector<float> u(16 * plane_u), v(16 * plane_v), m(16 * plane_m);
  for (int k = 0; k < g.oc; ++k)
    for (int c = 0; c < g.ic; ++c) {
      float f[9], t[16];
      for (int r = 0; r < 3; ++r)
        for (int s = 0; s < 3; ++s)
          f[3 * r + s] = data.wei[std::size_t(wei_offset(g.nhwc, k, c, r, s, g.ic, 3, 3))];
      winograd_filter_tile(f, t);
      for (int xi = 0; xi < 16; ++xi) u[xi * plane_u + std::size_t(k) * g.ic + c] = t[xi];
    }
  for (int c = 0; c < g.ic; ++c)
    for (int p = 0; p < g.p; ++p) {
      const WinogradTile t = winograd_tile(g, p);
      float d[16], x[16];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const int y = 2 * t.ty - g.ph + i, xx = 2 * t.tx - g.pw + j;
          const bool inside = y >= 0 && y < g.h && xx >= 0 && xx < g.w;
          d[4 * i + j] =
              inside ? data.src[std::size_t(act_offset(g.nhwc, t.n, c, y, xx, g.ic, g.h, g.w))]
                     : 0.0f;
        }
      winograd_input_tile(d, x);
      for (int xi = 0; xi < 16; ++xi) v[xi * plane_v + std::size_t(c) * g.p + p] = x[xi];
    }
  for (int xi = 0; xi < 16; ++xi)
    for (int k = 0; k < g.oc; ++k) {
      float* acc = &m[xi * plane_m + std::size_t(k) * g.p];
      for (int c = 0; c < g.ic; ++c) {
        const float a = u[xi * plane_u + std::size_t(k) * g.ic + c];
        const float* b = &v[xi * plane_v + std::size_t(c) * g.p];
        for (int p = 0; p < g.p; ++p) acc[p] = std::fma(a, b[p], acc[p]);
      }
    }
  std::vector<float> out(std::size_t(prob.dst_elements()));
  for (int k = 0; k < g.oc; ++k)
    for (int p = 0; p < g.p; ++p) {
      float t[16], y[4];
      for (int xi = 0; xi < 16; ++xi) t[xi] = m[xi * plane_m + std::size_t(k) * g.p + p];
      winograd_output_tile(t, y);
      const WinogradTile tile = winograd_tile(g, p);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
          const int oy = 2 * tile.ty + i, ox = 2 * tile.tx + j;
          if (oy < g.oh && ox < g.ow)
            out[std::size_t(act_offset(g.nhwc, tile.n, k, oy, ox, g.oc, g.oh, g.ow))] =
                y[2 * i + j];
        }
    }
  return out;
}

// The direct form in float, for comparison: each output the fmaf sum over (c, r, s) in the weights'
// order, zeros in the padding (what the implicit-GEMM variants accumulate without split-K).
std::vector<float> emulate_direct(const Problem& prob, const HostData& data) {
  const WinogradGeometry g = make_winograd_geometry(prob);
  std::vector<float> out(std::size_t(prob.dst_elements()));
  for (int n = 0; n < g.n; ++n)
    for (int k = 0; k < g.oc; ++k)
      for (int oy = 0; oy < g.oh; ++oy)
        for (int ox = 0; ox < g.ow; ++ox) {
          float acc = 0;
          for (int c = 0; c < g.ic; ++c)
            for (int r = 0; r < 3; ++r)
              for (int s = 0; s < 3; ++s) {
                const int y = oy - g.ph + r, x = ox - g.pw + s;
                if (y < 0 || y >= g.h || x < 0 || x >= g.w) continue;
                acc = std::fma(
                    data.wei[std::size_t(wei_offset(g.nhwc, k, c, r, s, g.ic, 3, 3))],
                    data.src[std::size_t(act_offset(g.nhwc, n, c, y, x, g.ic, g.h, g.w))], acc);
              }
          out[std::size_t(act_offset(g.nhwc, n, k, oy, ox, g.oc, g.oh, g.ow))] = acc;
        }
  return out;
}

bench::Correctness check(const Problem& p, const HostData& data, const std::vector<float>& out) {
  const bench::Tolerance tol = bench::dot_tolerance(p.dtype, p.reduction_length(), data.ref_rms);
  return bench::compare(out.data(), data.ref.data(), out.size(), tol);
}

// The figure in docs/myconv.md (variant 12's numerical error): IC = 512 (K = 4608), odd output
// sizes, nchw and nhwc. Fails above the fp32 tolerance; the printed ratio is the largest error
// over atol (the bound where |ref| is small), Winograd's and the direct form's.
TEST(WinogradEmulation, ErrorAtIc512IsWithinTheFp32Tolerance) {
  for (Layout layout : {Layout::nchw, Layout::nhwc}) {
    const Problem p = typed_problem("mb1ic512ih15iw14oc24kh3kw3ph1pw1", DataType::fp32, layout);
    const HostData data = make_host_data(p, 32);
    const bench::Correctness wino = check(p, data, emulate_winograd(p, data));
    const bench::Correctness direct = check(p, data, emulate_direct(p, data));
    std::cout << "[ figure   ] " << p.str() << ": Winograd F(2x2,3x3) max |err| "
              << wino.max_abs_err << " = " << wino.max_abs_err / wino.tolerance.atol
              << " x atol, rel l2 " << wino.rel_l2_err << "; direct max |err| "
              << direct.max_abs_err << " = " << direct.max_abs_err / direct.tolerance.atol
              << " x atol, rel l2 " << direct.rel_l2_err << "; atol " << wino.tolerance.atol
              << " (ref rms " << data.ref_rms << ")\n";
    EXPECT_TRUE(wino.passed) << p.str() << ": " << wino.message;
    EXPECT_TRUE(direct.passed) << p.str() << ": " << direct.message;
    EXPECT_LT(wino.max_abs_err, wino.tolerance.atol);
  }
}

// The emulation on the edge cases of the GPU test set (padding 0, 1 and 2, odd and tiny images,
// channels filling no tile): passes the check, and a wrong tile origin would not.
TEST(WinogradEmulation, EdgeCasesMatchTheReference) {
  for (const char* text :
       {"mb2ic5ih9iw7oc3kh3kw3", "mb3ic7ih11iw6oc13kh3kw3ph1pw1", "mb1ic3ih5iw9oc2kh3kw3ph2pw0",
        "mb2ic1ih1oc1kh3ph1", "mb1ic2ih2iw3oc3kh3kw3ph2pw2"})
    for (Layout layout : {Layout::nchw, Layout::nhwc}) {
      const Problem p = typed_problem(text, DataType::fp32, layout);
      const HostData data = make_host_data(p, 7);
      const bench::Correctness c = check(p, data, emulate_winograd(p, data));
      EXPECT_TRUE(c.passed) << p.str() << ": " << c.message;
      if (p.ph > 0) {  // the tiles moved by one pixel no longer match
        Problem shifted = p;
        shifted.ph -= 1;
        shifted.out_h = p.oh();
        const bench::Correctness s = check(p, data, emulate_winograd(shifted, data));
        EXPECT_FALSE(s.passed) << p.str();
      }
    }
}

}  // namespace
}  // namespace conv
