// The im2col index math of the CUDA kernels (conv/im2col_index.hpp), checked on the CPU: an
// im2col matrix built with it, multiplied by the weights on the CPU, must equal the float64
// reference convolution, for groups, stride, dilation, padding and both layouts.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "conv/data.hpp"
#include "conv/im2col_index.hpp"
#include "conv/problem.hpp"

namespace conv {
namespace {

std::vector<Problem> problems() {
  std::vector<Problem> out;
  for (const char* text :
       {"mb2ic4ih9oc8kh3", "mb2ic3ih12iw9oc5kh3kw3sh2sw2ph1pw1", "g4mb1ic8ih13oc8kh3ph1dh1",
        "g8mb2ic8ih10oc8kh3ph1", "mb1ic5ih7iw11oc3kh2kw4sh3sw2ph1pw3dh1", "mb3ic2ih5oc4kh1",
        "g2mb2ic6ih8iw8oc4kh5kw5sh2sw2ph2pw2dw1", "mb1ic1ih1oc1kh1"})
    out.push_back(parse_problem(text));
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  while (out.size() < 16) {
    Problem p;
    p.g = pick(1, 3);
    p.mb = pick(1, 3);
    p.ic = p.g * pick(1, 4);
    p.oc = p.g * pick(1, 4);
    p.ih = pick(3, 12);
    p.iw = pick(3, 12);
    p.kh = pick(1, 4);
    p.kw = pick(1, 4);
    p.sh = pick(1, 3);
    p.sw = pick(1, 3);
    p.dh = pick(0, 2);  // benchdnn: 0 = dense
    p.dw = pick(0, 2);
    p.ph = pick(0, p.kh);
    p.pw = pick(0, p.kw);
    if (p.validate().empty()) out.push_back(p);
  }
  std::vector<Problem> both;
  for (Problem p : out)
    for (Layout layout : {Layout::nchw, Layout::nhwc}) {
      p.layout = layout;
      both.push_back(p);
    }
  return both;
}

TEST(Im2colIndex, GemmOfTheColumnMatrixEqualsTheReference) {
  for (const Problem& p : problems()) {
    SCOPED_TRACE(p.str());
    ASSERT_EQ(im2col_index_limits(p), "");
    const Im2colGeometry g = make_im2col_geometry(p);
    const GemmShape gemm = p.gemm();
    ASSERT_EQ(g.m, gemm.m);
    ASSERT_EQ(g.k, gemm.k);
    ASSERT_EQ(g.ocg, gemm.n);
    const HostData data = make_host_data(p, 3);

    std::vector<double> out(static_cast<std::size_t>(p.dst_elements()), NAN);
    std::vector<double> col(static_cast<std::size_t>(g.k) * g.m);
    for (int group = 0; group < g.groups; ++group) {
      // CPU im2col of this group.
      for (int k = 0; k < g.k; ++k)
        for (int m = 0; m < g.m; ++m) {
          const std::int64_t off = im2col_src_offset(g, group, k, m);
          ASSERT_LT(off, p.src_elements());
          col[std::size_t(k) * g.m + m] = off < 0 ? 0.0 : data.src[std::size_t(off)];
        }
      // CPU GEMM: out[oc][m] = sum_k wei[oc][k] * col[k][m].
      for (int oc = 0; oc < g.ocg; ++oc)
        for (int m = 0; m < g.m; ++m) {
          double sum = 0;
          for (int k = 0; k < g.k; ++k)
            sum += double(data.wei[std::size_t(im2col_wei_offset(g, group, oc, k))]) *
                   col[std::size_t(k) * g.m + m];
          const std::int64_t d = im2col_dst_offset(g, group, oc, m);
          ASSERT_GE(d, 0);
          ASSERT_LT(d, p.dst_elements());
          ASSERT_TRUE(std::isnan(out[std::size_t(d)])) << "output " << d << " written twice";
          out[std::size_t(d)] = sum;
        }
    }
    for (std::size_t i = 0; i < out.size(); ++i)
      ASSERT_NEAR(out[i], data.ref[i], 1e-9 * (1 + std::fabs(data.ref[i]))) << "element " << i;
  }
}

// The pieces the kernels use on their own agree with indexing.hpp's offsets.
TEST(Im2colIndex, PiecesAgreeWithTensorOffsets) {
  for (const Problem& p : problems()) {
    SCOPED_TRACE(p.str());
    const Im2colGeometry g = make_im2col_geometry(p);
    const bool nhwc = p.layout == Layout::nhwc;
    // Row k names the weight element at column k of the weight matrix.
    for (int oc = 0; oc < g.oc; ++oc)
      for (int k = 0; k < g.k; ++k) {
        const Im2colTap t = im2col_tap(g, k);
        ASSERT_EQ(wei_offset(nhwc, oc, t.c, t.r, t.s, g.icg, g.kh, g.kw),
                  im2col_wei_offset(g, oc / g.ocg, oc % g.ocg, k));
      }
    // Source offsets of in-bounds taps, and padding exactly where the tap leaves the image.
    for (int group = 0; group < g.groups; ++group)
      for (int m = 0; m < g.m; ++m)
        for (int k = 0; k < g.k; ++k) {
          const int n = m / (g.oh * g.ow), oy = (m / g.ow) % g.oh, ox = m % g.ow;
          const Im2colTap t = im2col_tap(g, k);
          const int ih = oy * g.sh - g.ph + t.r * g.dh, iw = ox * g.sw - g.pw + t.s * g.dw;
          const bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
          const std::int64_t expected =
              inside ? act_offset(nhwc, n, group * g.icg + t.c, ih, iw, g.c, g.h, g.w) : -1;
          ASSERT_EQ(im2col_src_offset(g, group, k, m), expected) << "k " << k << " m " << m;
        }
    // Rows and columns past the matrix read padding only.
    EXPECT_EQ(im2col_combine(g, 0, im2col_column(g, g.m), im2col_row(g, 0)), -1);
    EXPECT_EQ(im2col_combine(g, 0, im2col_column(g, 0), im2col_row(g, g.k)), -1);
    EXPECT_EQ(im2col_combine(g, 0, im2col_column(g, g.m), im2col_row(g, g.k)), -1);
  }
}

TEST(Im2colIndex, LimitsNameTheOverflowingIndex) {
  EXPECT_EQ(im2col_index_limits(parse_problem("mb32ic64ih56oc64kh3ph1")), "");
  Problem huge;  // not a valid problem (a tensor over 2^31-1 elements), built field by field
  huge.mb = 4096;
  huge.ic = huge.oc = 1;
  huge.ih = huge.iw = 1024;
  huge.kh = huge.kw = 1;
  EXPECT_NE(im2col_index_limits(huge).find("M = N*OH*OW"), std::string::npos);
}

}  // namespace
}  // namespace conv
