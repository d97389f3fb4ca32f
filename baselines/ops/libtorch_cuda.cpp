// Op backend "libtorch_cuda": the PyTorch call a user would write for each op (libtorch_ops.hpp)
// on CUDA tensors; every GPU score of the op suite is against it. ATen picks the kernel (its own
// elementwise, reduction and normalization kernels; cuBLAS / cuBLASLt for matmul).
//
// Stream: each instance takes a stream from ATen's pool and makes it current (CUDAStreamGuard)
// around everything it enqueues, so run() only enqueues on that stream and the CudaEventTimer
// times that stream.
//
// Math: fp16 and bf16 are tensors of that dtype (ATen's kernels compute in float inside). Matmul
// reads ATen's process-global allow_tf32 switch for cuBLAS: around each matmul call it is set to
// on for tf32 (FP32 tensors) and off for fp32 (strict FP32, PyTorch's default), then put back,
// since other instances and backends in the process read it. Other ops read no global switch.
//
// compile() makes one call: what a PyTorch user pays once per shape (cuBLAS handle and workspace,
// cuBLASLt heuristics, loading the kernels' modules) counts as compile_time_ms. It also measures
// the device memory ATen takes beyond the output (the cuBLAS workspace, a reduction's partials).
//
// The output: the call allocates it each time, as PyTorch code does (from ATen's caching
// allocator, so no cudaMalloc in the timed runs), so poison_output() gives a NaN tensor that
// run() replaces, as in libtorch_cpu.
#include <cuda_runtime_api.h>

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#include <torch/types.h>

#include "baselines/ops/backends.hpp"
#include "baselines/ops/libtorch_ops.hpp"
#include "core/cpu_threads.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/torch/graph_replay.hpp"
#include "core/torch/libtorch_cuda.hpp"

namespace ops {
namespace {

#define MYCONV_TORCH_WHERE "LibTorch " TORCH_VERSION " on CUDA"

bool uses_tf32_switch(const Problem& p) {
  return p.op == Op::matmul && (p.dtype == DataType::fp32 || p.dtype == DataType::tf32);
}

// ATen's allow_tf32 for cuBLAS as the problem needs it, for the guard's lifetime (see the header
// comment); nothing for the ops that do not read it.
class MathGuard {
 public:
  explicit MathGuard(const Problem& p) : active_(uses_tf32_switch(p)) {
    if (!active_) return;
    at::Context& ctx = at::globalContext();
    saved_ = ctx.allowTF32CuBLAS();
    ctx.setAllowTF32CuBLAS(p.dtype == DataType::tf32);
  }
  ~MathGuard() {
    if (active_) at::globalContext().setAllowTF32CuBLAS(saved_);
  }
  MathGuard(const MathGuard&) = delete;
  MathGuard& operator=(const MathGuard&) = delete;

 private:
  bool active_;
  bool saved_ = false;
};

// Stream, timer, compile(), sync() and graph replay: bench::libtorch::CudaInstance.
class LibtorchCudaInstance final : public bench::libtorch::CudaInstance<Instance> {
 public:
  LibtorchCudaInstance(const Problem& p, const HostData& data) : p_(p) {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    try {
      { const MathGuard math(p_); }  // any deprecation warning of the switch prints here
      inputs_ = libtorch::make_inputs(p, data, stream_.device());
    } catch (const c10::Error& e) {
      libtorch::rethrow(e, MYCONV_TORCH_WHERE);
    }
    CUDA_CHECK(cudaStreamSynchronize(stream_.stream()));
  }

  void poison_output() override {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    const c10::InferenceMode inference;
    out_ = libtorch::nan_output(p_, stream_.device());
  }

  void run() override {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    const c10::InferenceMode inference;  // what torch.inference_mode() gives Python users
    try {
      const MathGuard math(p_);
      out_ = libtorch::call(p_, inputs_);
    } catch (const c10::Error& e) {
      libtorch::rethrow(e, MYCONV_TORCH_WHERE);
    }
  }

  void read_output(float* dst) override {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    libtorch::copy_to_host(p_, out_, dst);
  }

  std::string algorithm() const override {
    std::string a = libtorch::call_text(p_);
    if (uses_tf32_switch(p_))
      a += std::string(", allow_tf32=") + (p_.dtype == DataType::tf32 ? "on" : "off");
    return a;
  }

  nlohmann::ordered_json extra() const override {
    nlohmann::ordered_json e = {
        {"torch_call", libtorch::call_text(p_)},
        {"compile_includes",
         "one call: first-call setup (kernel module loads; for matmul the cuBLAS handle, "
         "workspace and heuristics)"},
        {"workspace_bytes_is",
         "peak of ATen's caching allocator during one call, less the output"}};
    if (uses_tf32_switch(p_)) e["torch_allow_tf32_cublas"] = p_.dtype == DataType::tf32;
    if (p_.op == Op::rmsnorm) e["rmsnorm_form"] = libtorch::rms_norm_form();
    return e;
  }

 private:
  // compile() (see the header comment) measures what ATen allocates beyond it.
  at::Tensor& output() override { return out_; }

  Problem p_;
  std::vector<at::Tensor> inputs_;
  at::Tensor out_;
};

class LibtorchCudaBackend final : public Backend {
 public:
  std::string name() const override { return "libtorch_cuda"; }
  std::string device() const override { return "cuda"; }
  std::string library_version() const override { return "LibTorch " TORCH_VERSION; }
  Support available() const override { return bench::libtorch::cuda_available(); }
  Support check_support(const Problem&) const override { return Support::yes(); }
  std::unique_ptr<Instance> prepare(const Problem& p, const HostData& data) const override {
    return std::make_unique<LibtorchCudaInstance>(p, data);
  }
};

}  // namespace
}  // namespace ops

// The module's entry point (libmyconv_libtorch.so; baselines/libtorch_loader.cpp opens it): a new
// backend, owned by the caller. cpu_threads is the program's --threads (core/cpu_threads.hpp):
// the module's copy of that setting is its own.
extern "C" __attribute__((visibility("default"))) ops::Backend*
myconv_libtorch_cuda_ops_backend_new(const ops::BackendOptions*, int cpu_threads) {
  bench::set_cpu_threads(cpu_threads);
  return new ops::LibtorchCudaBackend();
}

// The macro is this file's own (a unity build puts several files in one translation unit).
#undef MYCONV_TORCH_WHERE
