// Offsets of tensor elements in memory for each layout. Shared by host and device code, so that
// the reference, the backends' layout handling and the CUDA kernels read memory the same way.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define MYCONV_HD __host__ __device__ __forceinline__
#else
#define MYCONV_HD inline
#endif

namespace conv {

// Activation element (n, c, h, w) of a C x H x W tensor.
MYCONV_HD std::int64_t act_offset(bool nhwc, std::int64_t n, std::int64_t c, std::int64_t h,
                                  std::int64_t w, std::int64_t C, std::int64_t H, std::int64_t W) {
  return nhwc ? ((n * H + h) * W + w) * C + c : ((n * C + c) * H + h) * W + w;
}

// Weight element (o, i, r, s) with i the channel within the group (ICg = IC/G channels).
MYCONV_HD std::int64_t wei_offset(bool nhwc, std::int64_t o, std::int64_t i, std::int64_t r,
                                  std::int64_t s, std::int64_t ICg, std::int64_t KH,
                                  std::int64_t KW) {
  return nhwc ? ((o * KH + r) * KW + s) * ICg + i : ((o * ICg + i) * KH + r) * KW + s;
}

}  // namespace conv
