// LibTorch on CUDA: torch::conv2d on CUDA tensors, the convolution PyTorch users get on a GPU.
// ATen picks the kernel per problem (cuDNN for most, its own depthwise or dilated kernels for
// some); algorithm() names the one it selects.
//
// Stream: each instance takes a stream from ATen's pool and makes it current (CUDAStreamGuard)
// around everything it enqueues, so run() only enqueues on that stream and the CudaEventTimer
// times that stream.
//
// Math per dtype, through ATen's process-global flags, set again before every run() because
// other instances (and anything else in the process) may change them: fp32 -> allow_tf32 off for
// cuDNN and cuBLAS (strict FP32; note PyTorch's own default lets cuDNN convolutions use TF32);
// tf32 -> allow_tf32 on for both, on FP32 tensors; fp16, bf16 -> tensors of that dtype.
// cudnn.deterministic is off; cudnn.benchmark is BackendOptions::torch_cudnn_benchmark.
//
// compile() makes one conv2d call: it fills ATen's cuDNN plan cache (the heuristics' plan, or with
// cudnn.benchmark on the timed search of every plan), which is what a PyTorch user pays once per
// shape, so that cost counts as compile_time_ms. The cache lives for the process and is keyed by
// the problem and the math flags, not by cudnn.benchmark: a shape first run with benchmark off
// keeps its heuristic plan when later run with benchmark on (and the other way round).
//
// The output: ATen allocates it in every conv2d call (no out= form of conv2d; the generated
// convolution.out computes into a new tensor and copies, which would add a copy to the timed
// run), so poison_output() gives a NaN tensor that run() replaces, as in libtorch_cpu.
#include <cuda_runtime_api.h>

#include <limits>

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <ATen/native/ConvUtils.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#include <torch/types.h>

#include "baselines/conv/backends.hpp"
#include "baselines/conv/libtorch_conv.hpp"
#include "core/cpu_threads.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/error.hpp"
#include "core/torch/graph_replay.hpp"
#include "core/torch/libtorch_cuda.hpp"

namespace conv {
namespace {

#define MYCONV_TORCH_WHERE "LibTorch " TORCH_VERSION " on CUDA"

// ATen's process-global switches for one case (see the header comment).
void set_math_flags(DataType dt, bool benchmark) {
  at::Context& ctx = at::globalContext();
  const bool tf32 = dt == DataType::tf32;
  ctx.setAllowTF32CuDNN(tf32);
  ctx.setAllowTF32CuBLAS(tf32);
  ctx.setBenchmarkCuDNN(benchmark);
  ctx.setDeterministicCuDNN(false);
}

const char* conv_backend_name(at::native::ConvBackend b) {
  using at::native::ConvBackend;
  switch (b) {
    case ConvBackend::Cudnn:
      return "cudnn";
    case ConvBackend::CudaDepthwise2d:
      return "cuda_depthwise2d";
    case ConvBackend::Slow2d:
      return "slow_conv2d";
    case ConvBackend::SlowDilated2d:
      return "slow_conv_dilated2d";
    case ConvBackend::Empty:
      return "empty";
    default:
      return "other";
  }
}

std::string cudnn_version_text(long v) {
  // cuDNN 9 numbers versions major * 10000 + minor * 100 + patch (cuDNN 8: major * 1000 + ...).
  const long major = v >= 90000 ? v / 10000 : v / 1000;
  const long minor = v >= 90000 ? (v / 100) % 100 : (v / 100) % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

// Stream, timer, compile(), sync() and graph replay: bench::libtorch::CudaInstance.
class LibtorchCudaInstance final : public bench::libtorch::CudaInstance<Instance> {
 public:
  LibtorchCudaInstance(const Problem& p, const HostData& data, bool benchmark)
      : p_(p), benchmark_(benchmark) {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    set_math_flags(p_.dtype, benchmark_);  // any deprecation warning of the setters prints here
    try {
      src_ = libtorch::to_tensor(data.src, p.src_shape(), p.layout, p.dtype, stream_.device());
      wei_ = libtorch::to_tensor(data.wei, p.wei_shape(), p.layout, p.dtype, stream_.device());
      const std::vector<std::int64_t> stride = {p_.sh, p_.sw}, padding = {p_.ph, p_.pw},
                                      dilation = {p_.dilation_h(), p_.dilation_w()},
                                      output_padding = {0, 0};
      conv_backend_ = conv_backend_name(at::native::select_conv_backend(
          src_, wei_, std::nullopt, c10::fromIntArrayRefSlow(stride),
          c10::fromIntArrayRefSlow(padding), c10::fromIntArrayRefSlow(dilation),
          /*transposed=*/false, c10::fromIntArrayRefSlow(output_padding), c10::SymInt(p_.g),
          std::nullopt));
    } catch (const c10::Error& e) {
      libtorch::rethrow(e, MYCONV_TORCH_WHERE);
    }
    CUDA_CHECK(cudaStreamSynchronize(stream_.stream()));
  }

  void poison_output() override {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    dst_ = at::full(
        {p_.mb, p_.oc, p_.oh(), p_.ow()}, std::numeric_limits<float>::quiet_NaN(),
        at::TensorOptions().dtype(libtorch::scalar_type(p_.dtype)).device(stream_.device()));
  }

  void run() override {
    set_math_flags(p_.dtype, benchmark_);
    const c10::cuda::CUDAStreamGuard guard(stream_);
    try {
      dst_ = torch::conv2d(src_, wei_, {}, {p_.sh, p_.sw}, {p_.ph, p_.pw},
                           {p_.dilation_h(), p_.dilation_w()}, p_.g);
    } catch (const c10::Error& e) {
      libtorch::rethrow(e, MYCONV_TORCH_WHERE);
    }
  }

  void read_output(float* dst) override {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    libtorch::copy_to_host(dst_, p_.layout, dst);
  }

  // The tensor as ATen left it, where its memory order is the problem's layout and its type the
  // dtype's storage type (else none, and the check reads it with read_output).
  std::optional<bench::DeviceValues> device_output() override {
    if (!dst_.defined() || !dst_.is_cuda() ||
        dst_.scalar_type() != libtorch::scalar_type(p_.dtype) || dst_.numel() != p_.dst_elements())
      return std::nullopt;
    if (!dst_.is_contiguous(libtorch::memory_format(p_.layout))) return std::nullopt;
    return bench::DeviceValues{dst_.data_ptr(), p_.dtype, std::size_t(dst_.numel()),
                               stream_.stream()};
  }

  std::vector<std::int64_t> output_dims() const override { return dst_.sizes().vec(); }

  std::string algorithm() const override {
    const bool tf32 = p_.dtype == DataType::tf32;
    return std::string("aten::conv2d -> ") + conv_backend_ +
           ", cudnn.benchmark=" + (benchmark_ ? "on" : "off") +
           ", allow_tf32=" + (tf32 ? "on" : "off") + ", " +
           (p_.layout == Layout::nhwc ? "channels_last" : "contiguous");
  }

  nlohmann::ordered_json extra() const override {
    const bool tf32 = p_.dtype == DataType::tf32;
    return {{"torch_conv_backend", conv_backend_},
            {"torch_cudnn_benchmark", benchmark_},
            {"torch_allow_tf32_cudnn", tf32},
            {"torch_allow_tf32_cublas", tf32},
            {"torch_cudnn_deterministic", false},
            {"compile_includes", benchmark_ ? "one conv2d call: cudnn.benchmark algorithm search"
                                            : "one conv2d call: cuDNN heuristics and plan build"},
            {"workspace_bytes_is",
             "peak of ATen's caching allocator during one conv2d, less the output"},
            {"output_memory_format",
             dst_.is_contiguous(at::MemoryFormat::ChannelsLast) && p_.layout == Layout::nhwc
                 ? "channels_last"
                 : "contiguous"}};
  }

 private:
  // compile() (see the header comment) measures the workspace beyond it: the cuDNN workspace and
  // any buffer of ATen's own kernels.
  at::Tensor& output() override { return dst_; }

  Problem p_;
  bool benchmark_;
  at::Tensor src_, wei_, dst_;
  std::string conv_backend_;
};

class LibtorchCudaBackend final : public Backend {
 public:
  explicit LibtorchCudaBackend(bool benchmark) : benchmark_(benchmark) {}
  std::string name() const override { return "libtorch_cuda"; }
  std::string device() const override { return "cuda"; }
  std::string library_version() const override {
    std::string v = "LibTorch " TORCH_VERSION;
    if (torch::cuda::is_available())
      v += " (cuDNN " + cudnn_version_text(at::detail::getCUDAHooks().versionCuDNN()) + ")";
    return v;
  }
  Support available() const override { return bench::libtorch::cuda_available(); }
  Support check_support(const Problem&) const override { return Support::yes(); }
  std::unique_ptr<Instance> prepare(const Problem& p, const HostData& data) const override {
    return std::make_unique<LibtorchCudaInstance>(p, data, benchmark_);
  }

 private:
  bool benchmark_;
};

}  // namespace
}  // namespace conv

// The module's entry point (libmyconv_libtorch.so; baselines/libtorch_loader.cpp opens it): a new
// backend, owned by the caller. cpu_threads is the program's --threads (core/cpu_threads.hpp):
// the module's copy of that setting is its own.
extern "C" __attribute__((visibility("default"))) conv::Backend* myconv_libtorch_cuda_backend_new(
    const conv::BackendOptions* options, int cpu_threads) {
  bench::set_cpu_threads(cpu_threads);
  return new conv::LibtorchCudaBackend(options->torch_cudnn_benchmark);
}

// The macro is this file's own (a unity build puts several files in one translation unit).
#undef MYCONV_TORCH_WHERE
