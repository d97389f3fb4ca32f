// Op backend "libtorch_cpu": the PyTorch call a user would write for each op (libtorch_ops.hpp) on
// CPU tensors; every CPU score of the op suite is against it. ATen picks its kernel and threads
// (at::get_num_threads()) per call. A dtype ATen has no CPU kernel for (some fp16 ops in LibTorch
// 1.13) is unsupported with ATen's message; tf32 is a GPU math mode, unsupported here. Where a
// CPU kernel is known to miss the dtype's tolerance, extra() names the defect (known_issue).
#include <torch/types.h>
#include <torch/version.h>

#include "baselines/libtorch_cpu_backend.hpp"
#include "baselines/ops/backends.hpp"
#include "baselines/ops/libtorch_ops.hpp"
#include "core/cpu_threads.hpp"

namespace ops {
namespace {

#define MYCONV_TORCH_WHERE "LibTorch " TORCH_VERSION " on CPU"

// Cases where LibTorch's CPU kernel is less accurate than one float computation rounded to the
// dtype, so that the check can fail: seen here with LibTorch 1.13 (2.x not checked on the CPU).
// The case stays incorrect, with this reason beside it (the conv suite's way). Null where none
// applies.
const char* known_issue(const Problem& p) {
#if TORCH_VERSION_MAJOR < 2
  if (p.dtype == DataType::bf16 && p.op == Op::gelu_tanh)
    return "LibTorch " TORCH_VERSION
           " on the CPU loses the negative tail of bf16 gelu(approximate='tanh') (gelu(-3.45) "
           "comes out 0)";
  if (p.dtype == DataType::bf16 && p.op == Op::gelu_erf)
    return "LibTorch " TORCH_VERSION
           " on the CPU loses the negative tail of bf16 gelu on some CPUs (gelu(-2.8) comes out "
           "-0.0 on an AVX2-only AMD EPYC; it passed on the CPUs the tests ran on before)";
  if (p.dtype == DataType::bf16 && p.op == Op::layernorm)
    return "LibTorch " TORCH_VERSION
           " on the CPU computes bf16 layer_norm less accurately than its CUDA kernel "
           "(pytorch/pytorch#109188): outputs near 0 off by percents";
  if (p.dtype == DataType::bf16 && p.op == Op::matmul)
    return "LibTorch " TORCH_VERSION
           " on the CPU: bf16 matmuls that ATen does not hand to oneDNN (small ones) go through "
           "its own GEMM, which accumulates in bf16 before LibTorch 2.0 (pytorch/pytorch#83863)";
  if ((p.dtype == DataType::fp16 || p.dtype == DataType::bf16) &&
      (p.op == Op::sum || p.op == Op::mean))
    return "LibTorch " TORCH_VERSION
           " on the CPU loses 16-bit precision in sum and mean (seen here: fp16 and bf16 sums "
           "over two axes outside the tolerance, the fp16 mean of 232974 elements returned as 0)";
#endif
  (void)p;
  return nullptr;
}

class LibtorchCpuInstance final : public Instance {
 public:
  LibtorchCpuInstance(const Problem& p, const HostData& data) : p_(p) {
    try {
      inputs_ = libtorch::make_inputs(p, data, at::kCPU);
    } catch (const c10::Error& e) {
      libtorch::rethrow(e, MYCONV_TORCH_WHERE);
    }
  }

  void compile() override {}  // nothing to build ahead: ATen dispatches on every call

  void poison_output() override {
    const c10::InferenceMode inference;
    out_ = libtorch::nan_output(p_, at::kCPU);
  }

  void run() override {
    const c10::InferenceMode inference;  // what torch.inference_mode() gives Python users
    try {
      out_ = libtorch::call(p_, inputs_);
    } catch (const c10::Error& e) {
      libtorch::rethrow(e, MYCONV_TORCH_WHERE);
    }
  }

  void read_output(float* dst) override { libtorch::copy_to_host(p_, out_, dst); }

  std::string algorithm() const override {
    return libtorch::call_text(p_) + ", " + std::to_string(at::get_num_threads()) + " threads";
  }

  nlohmann::ordered_json extra() const override {
    nlohmann::ordered_json e = {{"torch_call", libtorch::call_text(p_)},
                                {"torch_threads", at::get_num_threads()}};
    if (p_.op == Op::rmsnorm) e["rmsnorm_form"] = libtorch::rms_norm_form();
    if (const char* issue = known_issue(p_)) e["known_issue"] = issue;
    return e;
  }

 private:
  Problem p_;
  std::vector<at::Tensor> inputs_;
  at::Tensor out_;
};

}  // namespace
}  // namespace ops

// The module's entry point (libmyconv_libtorch.so; baselines/libtorch_loader.cpp opens it): a new
// backend, owned by the caller. cpu_threads is the program's --threads (core/cpu_threads.hpp):
// the module's copy of that setting is its own.
extern "C" __attribute__((visibility("default"))) ops::Backend* myconv_libtorch_cpu_ops_backend_new(
    const ops::BackendOptions*, int cpu_threads) {
  bench::set_cpu_threads(cpu_threads);
  bench::libtorch::apply_cpu_threads();  // --threads, before any case
  return new bench::libtorch::CpuBackend<ops::Backend, ops::LibtorchCpuInstance, ops::Problem,
                                         ops::HostData>();
}

// The macro is this file's own (a unity build puts several files in one translation unit).
#undef MYCONV_TORCH_WHERE
