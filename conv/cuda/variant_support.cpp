#include "conv/cuda/variant_support.hpp"

#include <exception>
#include <string>

#include "conv/cuda/caffe_gemm.hpp"
#include "conv/cuda/depthwise_kernels.hpp"
#include "conv/cuda/gemm_1x1.hpp"
#include "conv/cuda/im2col_gemm_kernels.hpp"
#include "conv/cuda/small_conv_kernels.hpp"
#include "conv/cuda/thin_1x1_config.hpp"
#include "conv/cuda/wgmma_conv.hpp"
#include "conv/cuda/winograd_config.hpp"
#include "conv/im2col_index.hpp"
#include "core/cuda/gemm/gemm.hpp"
#include "core/dtype.hpp"

namespace conv {
namespace {

// A device question (why a kernel family cannot run here, "" when it can), asked once per
// process by the callers below. A CUDA error while asking is the answer too (check_support must
// not throw).
std::string ask_device(std::string (*question)(), const char* kernels) {
  try {
    return question();
  } catch (const std::exception& e) {
    return std::string("cannot query the device for ") + kernels + ": " + e.what();
  }
}
const std::string& mma_unusable_reason() {
  static const std::string why = ask_device(mma_kernels_unusable_reason, "the tensor-core kernels");
  return why;
}
const std::string& wgmma_unusable_reason() {
  static const std::string why = ask_device(wgmma_conv_unusable_reason, "the wgmma kernels");
  return why;
}
const std::string& engine_unusable_reason() {
  static const std::string why =
      ask_device(bench::gemm::gemm_sm90_unusable_reason, "the GEMM engine");
  return why;
}

}  // namespace

VariantDevice variant_device() {
  VariantDevice d;
  d.mma = mma_unusable_reason().empty();
  d.wgmma = wgmma_unusable_reason().empty();
  d.engine = engine_unusable_reason().empty();
  return d;
}

Support variant_support(const Problem& p, Variant v, int sub) {
  const std::string dt = bench::to_string(p.dtype);
  if (v == Variant::caffe) {
    if (const std::string why = caffe_unsupported_reason(p); !why.empty()) return Support::no(why);
    return Support::yes();
  }
  if (v == Variant::gemm_1x1) {
    if (const std::string why = gemm_1x1_unusable_reason(p); !why.empty()) return Support::no(why);
    return Support::yes();
  }
  if (v == Variant::thin_1x1) {
    if (const std::string why = thin_1x1_unsupported_reason(p); !why.empty())
      return Support::no("variant 13: " + why);
    if (const std::string& why = mma_unusable_reason(); !why.empty())
      return Support::no("variant 13: " + why);
    return Support::yes();
  }
  if (v == Variant::winograd) {  // 12.1 and 12.2 take the same problems
    if (const std::string why = winograd_unsupported_reason(p); !why.empty())
      return Support::no(why);
    return Support::yes();
  }
  if (v == Variant::depthwise) {
    if (const std::string why = im2col_index_limits(p); !why.empty()) return Support::no(why);
    const Im2colGeometry g = make_im2col_geometry(p);
    if (const std::string why = depthwise_unsupported_reason(g); !why.empty())
      return Support::no("variant 8: " + why);
    const int bytes = bench::storage_bytes(p.dtype);
    if (sub == 2)
      if (const std::string why = depthwise_strip_unsupported_reason(g, bytes); !why.empty())
        return Support::no("variant 8.2 (3x3 strip kernels): " + why);
    if (sub == 3)
      if (const std::string why = depthwise_pipe_unsupported_reason(g, bytes); !why.empty())
        return Support::no("variant 8.3 (nhwc 3x3 pipelined strips): " + why);
    if (sub == 4)
      if (const std::string why = depthwise_plane_unsupported_reason(g, bytes); !why.empty())
        return Support::no("variant 8.4 (nchw 3x3 whole planes): " + why);
    if (sub == 5)
      if (const std::string why = depthwise_image_unsupported_reason(g, bytes); !why.empty())
        return Support::no("variant 8.5 (nhwc 3x3 whole images): " + why);
    if (sub == 6)
      if (const std::string why = depthwise_direct_unsupported_reason(g, bytes); !why.empty())
        return Support::no("variant 8.6 (nhwc 3x3 direct): " + why);
    return Support::yes();
  }
  if (v == Variant::small_direct) {
    if (const std::string why = im2col_index_limits(p); !why.empty()) return Support::no(why);
    if (const std::string why = small_conv_unsupported_reason(make_im2col_geometry(p));
        !why.empty())
      return Support::no("variant 7: " + why);
    return Support::yes();
  }
  if (!uses_tensor_cores(v) && p.dtype != DataType::fp32)
    return Support::no("variant " + std::to_string(int(v)) + " is strict FP32 on CUDA cores; " +
                       dt + " runs on the tensor-core variants 4, 5 and 6 (default)");
  if (uses_tensor_cores(v) && p.dtype == DataType::fp32)
    return Support::no("variant " + std::to_string(int(v)) +
                       " uses tensor cores (tf32/fp16/bf16); strict fp32 runs on variants 1-3");
  if (const std::string why = im2col_index_limits(p); !why.empty()) return Support::no(why);
  if (p.g > 65535) return Support::no("more than 65535 groups (one grid z index per group)");
  if (uses_tensor_cores(v)) {
    if (p.oc / p.g > 16 * 65535)
      return Support::no("more than 1048560 output channels per group (grid y)");
    if (const std::string& why = mma_unusable_reason(); !why.empty()) return Support::no(why);
  }
  if (v == Variant::wgmma_implicit_gemm) {
    const int bytes = bench::storage_bytes(p.dtype);
    if (const std::string why = wgmma_conv_unsupported_reason(
            mma_repacked_geometry(make_im2col_geometry(p), bytes), bytes);
        !why.empty())
      return Support::no("variant 10: " + why);
    if (const std::string& why = wgmma_unusable_reason(); !why.empty()) return Support::no(why);
  }
  return Support::yes();
}

}  // namespace conv
