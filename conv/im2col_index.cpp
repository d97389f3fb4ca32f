#include "conv/im2col_index.hpp"

#include <climits>

#include "conv/problem.hpp"

namespace conv {

std::string im2col_index_limits(const Problem& p) {
  const std::int64_t limit = INT_MAX;
  const GemmShape gemm = p.gemm();
  if (gemm.m > limit) return "M = N*OH*OW = " + std::to_string(gemm.m) + " exceeds 2^31-1";
  if (gemm.k > limit) return "K = IC/G*KH*KW = " + std::to_string(gemm.k) + " exceeds 2^31-1";
  // Row offsets and coordinates are int: one image of the input must fit.
  if (p.ic * p.ih * p.iw > limit)
    return "one input image (IC*IH*IW = " + std::to_string(p.ic * p.ih * p.iw) +
           " elements) exceeds 2^31-1";
  if (p.oh() * p.sh + p.kh * p.dilation_h() > limit ||
      p.ow() * p.sw + p.kw * p.dilation_w() > limit)
    return "input coordinates exceed 2^31-1";
  return "";
}

Im2colGeometry make_im2col_geometry(const Problem& p) {
  Im2colGeometry g;
  g.n = int(p.mb);
  g.c = int(p.ic);
  g.h = int(p.ih);
  g.w = int(p.iw);
  g.oc = int(p.oc);
  g.kh = int(p.kh);
  g.kw = int(p.kw);
  g.oh = int(p.oh());
  g.ow = int(p.ow());
  g.sh = int(p.sh);
  g.sw = int(p.sw);
  g.ph = int(p.ph);
  g.pw = int(p.pw);
  g.dh = int(p.dilation_h());
  g.dw = int(p.dilation_w());
  g.groups = int(p.g);
  g.icg = int(p.ic / p.g);
  g.ocg = int(p.oc / p.g);
  g.k = g.icg * g.kh * g.kw;
  g.m = int(p.mb * p.oh() * p.ow());
  g.nhwc = p.layout == Layout::nhwc;
  return g;
}

}  // namespace conv
