// The float64 reference of every conv problem: the direct convolution's loops, each product and
// sum in double, in the problem's layout, split over the host's cores by output plane.
// Independent of every backend (no library is called); conv/cuda/reference_conv_cuda.cu computes
// the same on a GPU.
#include <algorithm>
#include <thread>
#include <vector>

#include "conv/data.hpp"
#include "conv/indexing.hpp"

namespace conv {

void reference_conv(const Problem& p, const float* src, const float* wei, double* dst) {
  const bool nhwc = p.layout == Layout::nhwc;
  const std::int64_t OH = p.oh(), OW = p.ow(), ICg = p.ic / p.g, OCg = p.oc / p.g;
  // One task per (n, oc) plane; tasks are dealt to threads round-robin.
  const std::int64_t tasks = p.mb * p.oc;
  auto work = [&](std::int64_t first, std::int64_t step) {
    for (std::int64_t t = first; t < tasks; t += step) {
      const std::int64_t n = t / p.oc, o = t % p.oc, grp = o / OCg;
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          double acc = 0;
          for (std::int64_t i = 0; i < ICg; ++i) {
            const std::int64_t c = grp * ICg + i;
            for (std::int64_t r = 0; r < p.kh; ++r) {
              const std::int64_t h = oh * p.sh - p.ph + r * p.dilation_h();
              if (h < 0 || h >= p.ih) continue;
              for (std::int64_t s = 0; s < p.kw; ++s) {
                const std::int64_t w = ow * p.sw - p.pw + s * p.dilation_w();
                if (w < 0 || w >= p.iw) continue;
                acc += static_cast<double>(src[act_offset(nhwc, n, c, h, w, p.ic, p.ih, p.iw)]) *
                       static_cast<double>(wei[wei_offset(nhwc, o, i, r, s, ICg, p.kh, p.kw)]);
              }
            }
          }
          dst[act_offset(nhwc, n, o, oh, ow, p.oc, OH, OW)] = acc;
        }
    }
  };
  const auto threads = static_cast<std::int64_t>(
      std::min<unsigned>(std::max(1u, std::thread::hardware_concurrency()), 64u));
  if (threads == 1 || tasks == 1) {
    work(0, 1);
    return;
  }
  std::vector<std::thread> pool;
  for (std::int64_t t = 0; t < std::min(threads, tasks); ++t)
    pool.emplace_back(work, t, std::min(threads, tasks));
  for (auto& th : pool) th.join();
}

}  // namespace conv
