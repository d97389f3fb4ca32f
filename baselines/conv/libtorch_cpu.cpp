// LibTorch backend: torch::conv2d, the implementation users of PyTorch get.
// CPU here; ATen picks its own kernel (oneDNN/mkldnn, slow_conv2d, depthwise) per problem.
#include <limits>

#include <torch/types.h>
#include <torch/version.h>

#include "baselines/conv/backends.hpp"
#include "baselines/conv/libtorch_conv.hpp"
#include "baselines/libtorch_cpu_backend.hpp"
#include "core/cpu_threads.hpp"
#include "core/error.hpp"

namespace conv {
namespace {

// pytorch/pytorch#83863: before LibTorch 2.0, a CPU without oneDNN's bf16 support (AVX-512 BW, VL
// and DQ, the test of ATen's mkldnn_bf16_device_check) runs bf16 convolutions through
// slow_conv2d, whose GEMM accumulates in bf16: relative L2 errors near 1e-2 where fp32
// accumulation gives 1e-3 (fixed in 2.0 by pytorch/pytorch#96074). Null where it does not apply.
const char* bf16_known_issue() {
#if TORCH_VERSION_MAJOR < 2
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    return nullptr;
#endif
  return "LibTorch " TORCH_VERSION
         " on a CPU without AVX-512 accumulates bf16 convolutions in bf16 (slow_conv2d; "
         "pytorch/pytorch#83863, fixed in 2.0)";
#else
  return nullptr;
#endif
}

class LibtorchInstance final : public Instance {
 public:
  LibtorchInstance(const Problem& p, const HostData& data) : p_(p) {
    src_ = libtorch::to_tensor(data.src, p.src_shape(), p.layout, p.dtype, at::kCPU);
    wei_ = libtorch::to_tensor(data.wei, p.wei_shape(), p.layout, p.dtype, at::kCPU);
  }

  void compile() override {}  // nothing to build ahead: ATen selects and creates on first call

  void poison_output() override {
    dst_ = torch::full({p_.mb, p_.oc, p_.oh(), p_.ow()}, std::numeric_limits<float>::quiet_NaN());
  }

  void run() override {
    try {
      dst_ = torch::conv2d(src_, wei_, {}, {p_.sh, p_.sw}, {p_.ph, p_.pw},
                           {p_.dilation_h(), p_.dilation_w()}, p_.g);
    } catch (const c10::Error& e) {
      libtorch::rethrow(e, "LibTorch " TORCH_VERSION " on CPU");
    }
  }

  void read_output(float* dst) override { libtorch::copy_to_host(dst_, p_.layout, dst); }

  std::vector<std::int64_t> output_dims() const override { return dst_.sizes().vec(); }

  std::string algorithm() const override {
    return std::string("aten::conv2d ") +
           (p_.layout == Layout::nhwc ? "channels_last" : "contiguous") + ", " +
           std::to_string(at::get_num_threads()) + " threads";
  }

  nlohmann::ordered_json extra() const override {
    nlohmann::ordered_json e = {
        {"torch_threads", at::get_num_threads()},
        {"output_memory_format",
         dst_.is_contiguous(at::MemoryFormat::ChannelsLast) && p_.layout == Layout::nhwc
             ? "channels_last"
             : "contiguous"}};
    if (p_.dtype == DataType::bf16 && bf16_known_issue()) e["known_issue"] = bf16_known_issue();
    return e;
  }

 private:
  Problem p_;
  at::Tensor src_, wei_, dst_;
};

}  // namespace
}  // namespace conv

// The module's entry point (libmyconv_libtorch.so; baselines/libtorch_loader.cpp opens it): a new
// backend, owned by the caller. cpu_threads is the program's --threads (core/cpu_threads.hpp):
// the module's copy of that setting is its own.
extern "C" __attribute__((visibility("default"))) conv::Backend* myconv_libtorch_cpu_backend_new(
    const conv::BackendOptions*, int cpu_threads) {
  bench::set_cpu_threads(cpu_threads);
  bench::libtorch::apply_cpu_threads();  // --threads, before any case
  return new bench::libtorch::CpuBackend<conv::Backend, conv::LibtorchInstance, conv::Problem,
                                         conv::HostData>();
}
