// The check the CPU emulations of the nhwc 3x3 depthwise kernels (8.5 in test_depthwise_plane.cpp,
// 8.6 in test_depthwise_direct.cpp) run on their output: every element written exactly once,
// each bit-identical to its 9 taps summed in (r, s) order with fmaf and rounded to the dtype (what
// every depthwise kernel computes), and the whole within the float64 reference's tolerance.
#pragma once

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "conv/data.hpp"
#include "conv/im2col_index.hpp"
#include "conv/indexing.hpp"
#include "conv/problem.hpp"
#include "core/compare.hpp"
#include "core/dtype.hpp"

namespace conv::testing {

// Empty when `out` (nhwc, rounded to dt) and `writes` (per element) pass, else the first failure.
inline std::string check_nhwc_3x3(const Problem& p, const Im2colGeometry& g, const HostData& data,
                                  DataType dt, const std::vector<float>& out,
                                  const std::vector<int>& writes) {
  for (std::size_t i = 0; i < writes.size(); ++i)
    if (writes[i] != 1)
      return "output " + std::to_string(i) + " written " + std::to_string(writes[i]) + " times";
  for (int n = 0; n < g.n; ++n)
    for (int ch = 0; ch < g.c; ++ch)
      for (int oy = 0; oy < g.oh; ++oy)
        for (int ox = 0; ox < g.ow; ++ox) {
          float acc = 0.0f;
          for (int r = 0; r < 3; ++r)
            for (int s = 0; s < 3; ++s) {
              const int iy = oy * g.sh - g.ph + r, ix = ox * g.sw - g.pw + s;
              float x = 0.0f;
              if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w)
                x = data.src[std::size_t(act_offset(true, n, ch, iy, ix, g.c, g.h, g.w))];
              acc = std::fma(x, data.wei[std::size_t(ch * 9 + r * 3 + s)],
                             r == 0 && s == 0 ? 0.0f : acc);
            }
          const float want = bench::round_to(dt, acc);
          const float got = out[std::size_t(act_offset(true, n, ch, oy, ox, g.c, g.oh, g.ow))];
          if (std::memcmp(&want, &got, sizeof(float)) != 0)
            return "output (" + std::to_string(n) + ", " + std::to_string(ch) + ", " +
                   std::to_string(oy) + ", " + std::to_string(ox) + ") is " + std::to_string(got) +
                   ", the (r, s) fmaf sum " + std::to_string(want);
        }
  const bench::Correctness r =
      bench::compare(out.data(), data.ref.data(), out.size(),
                     bench::dot_tolerance(p.dtype, p.reduction_length(), data.ref_rms));
  return r.passed ? "" : r.message;
}

}  // namespace conv::testing
