// The float64 direct-convolution reference on the GPU (reference_conv_cuda.hpp).
//
// One thread per output element, threads numbered in the output's memory order (nchw: ow
// innermost; nhwc: oc innermost), so that the writes are coalesced. Each thread sums over its
// group's channels and the kernel taps in reference_conv's order (i, r, s), skipping the taps in
// the padding as it does, with products and sums rounded separately (__dmul_rn, __dadd_rn: no
// fused multiply-add), so that it performs the very operations of the host loop. A grid-stride
// loop covers outputs past the grid. H200 FP64 (~60 TFLOP/s) makes this far faster than the host
// reference on all threads (about 1.5 s for a ResNet-sized layer).
#include "conv/cuda/reference_conv_cuda.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <exception>

#include "conv/indexing.hpp"
#include "core/cuda/caught_error.hpp"
#include "core/cuda/compare_cuda.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_raii.hpp"

namespace conv {
namespace {

struct RefGeometry {
  std::int64_t mb, ic, ih, iw, oc, oh, ow, kh, kw, sh, sw, ph, pw, dil_h, dil_w, icg, ocg;
  bool nhwc;
};

__global__ void reference_conv_kernel(RefGeometry g, const float* __restrict__ src,
                                      const float* __restrict__ wei, double* __restrict__ dst) {
  const std::int64_t total = g.mb * g.oc * g.oh * g.ow;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t idx = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       idx < total; idx += step) {
    std::int64_t n, o, oh, ow, t;
    if (g.nhwc) {
      o = idx % g.oc;
      t = idx / g.oc;
      ow = t % g.ow;
      t /= g.ow;
      oh = t % g.oh;
      n = t / g.oh;
    } else {
      ow = idx % g.ow;
      t = idx / g.ow;
      oh = t % g.oh;
      t /= g.oh;
      o = t % g.oc;
      n = t / g.oc;
    }
    const std::int64_t grp = o / g.ocg;
    // Offsets of a row's taps: its first one from the shared indexing (conv/indexing.hpp), the
    // next ones a column stride on (nhwc: a pixel holds C input / ICg weight values).
    const std::int64_t src_w_stride = g.nhwc ? g.ic : 1, wei_s_stride = g.nhwc ? g.icg : 1;
    double acc = 0;
    for (std::int64_t i = 0; i < g.icg; ++i) {
      const std::int64_t c = grp * g.icg + i;
      for (std::int64_t r = 0; r < g.kh; ++r) {
        const std::int64_t h = oh * g.sh - g.ph + r * g.dil_h;
        if (h < 0 || h >= g.ih) continue;
        const float* src_row = src + act_offset(g.nhwc, n, c, h, 0, g.ic, g.ih, g.iw);
        const float* wei_row = wei + wei_offset(g.nhwc, o, i, r, 0, g.icg, g.kh, g.kw);
        for (std::int64_t s = 0; s < g.kw; ++s) {
          const std::int64_t w = ow * g.sw - g.pw + s * g.dil_w;
          if (w < 0 || w >= g.iw) continue;
          acc = __dadd_rn(acc, __dmul_rn(static_cast<double>(src_row[w * src_w_stride]),
                                         static_cast<double>(wei_row[s * wei_s_stride])));
        }
      }
    }
    dst[act_offset(g.nhwc, n, o, oh, ow, g.oc, g.oh, g.ow)] = acc;
  }
}

// The reference left on the device and the check against it.
class KeptReference final : public DeviceCheck {
 public:
  explicit KeptReference(bench::DeviceBuffer<double> ref) : ref_(std::move(ref)) {}
  std::string compare(const bench::DeviceValues& out, const bench::Tolerance& tol,
                      bench::Correctness* result) const override {
    if (out.count != ref_.size())
      return "the output has " + std::to_string(out.count) + " values, the reference " +
             std::to_string(ref_.size());
    return bench::compare_on_device(out, ref_.data(), tol, result);
  }

 private:
  bench::DeviceBuffer<double> ref_;
};

}  // namespace

std::string reference_conv_cuda(const Problem& p, const float* src, const float* wei, double* dst,
                                std::shared_ptr<const DeviceCheck>* keep,
                                std::string* why_not_kept) {
  if (keep) keep->reset();
  try {
    int devices = 0;
    CUDA_CHECK(cudaGetDeviceCount(&devices));
    if (devices == 0) return "no CUDA device";
    const RefGeometry g{
        p.mb,   p.ic,           p.ih,           p.iw,       p.oc,       p.oh(),
        p.ow(), p.kh,           p.kw,           p.sh,       p.sw,       p.ph,
        p.pw,   p.dilation_h(), p.dilation_w(), p.ic / p.g, p.oc / p.g, p.layout == Layout::nhwc};
    const auto dst_count = static_cast<std::size_t>(p.dst_elements());
    bench::DeviceBuffer<float> d_src(static_cast<std::size_t>(p.src_elements()));
    bench::DeviceBuffer<float> d_wei(static_cast<std::size_t>(p.wei_elements()));
    bench::DeviceBuffer<double> d_dst(dst_count);
    CUDA_CHECK(cudaMemcpy(d_src.data(), src, d_src.bytes(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_wei.data(), wei, d_wei.bytes(), cudaMemcpyHostToDevice));
    if (dst_count > 0) {
      constexpr int kThreads = 256;
      const auto blocks = static_cast<unsigned>(std::min<std::int64_t>(
          (static_cast<std::int64_t>(dst_count) + kThreads - 1) / kThreads, std::int64_t{1} << 20));
      reference_conv_kernel<<<blocks, kThreads>>>(g, d_src.data(), d_wei.data(), d_dst.data());
      CUDA_CHECK_LAST_LAUNCH();
    }
    CUDA_CHECK(cudaMemcpy(dst, d_dst.data(), d_dst.bytes(), cudaMemcpyDeviceToHost));
    if (keep && dst_count > 0) {
      d_src = {};
      d_wei = {};
      std::size_t free_bytes = 0, total_bytes = 0;
      CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
      if (d_dst.bytes() <= free_bytes / 4) {
        *keep = std::make_shared<const KeptReference>(std::move(d_dst));
      } else if (why_not_kept) {
        *why_not_kept = "the float64 reference (" + std::to_string(d_dst.bytes() >> 20) +
                        " MiB) takes more than a quarter of the device's free memory (" +
                        std::to_string(free_bytes >> 20) + " MiB)";
      }
    }
    return "";
  } catch (...) {
    return bench::caught_error_text();  // the CUDA error left pending cleared
  }
}

}  // namespace conv
