// MLP backend "libtorch_cpu": the lecture's run_mlp as it writes it, in LibTorch on the
// CPU: torch::nn::Linear layers and torch::gelu with autograd, num_steps steps of forward, mean
// loss and backward per call. fp32 and bf16 parameters (tf32 is a CUDA tensor-core mode).
//
// Timing: the host clock (no device). The forward/backward split times each phase of single
// steps by the host clock. Peak memory is not measured: LibTorch's CPU allocator keeps no
// statistics.
#include <limits>

#include "baselines/mlp/backends.hpp"
#include "baselines/mlp/libtorch_mlp.hpp"
#include "core/timer.hpp"

namespace mlp {
namespace {

#define MYCONV_TORCH_WHERE "LibTorch " TORCH_VERSION " on CPU"

class EagerCpuInstance final : public Instance {
 public:
  EagerCpuInstance(const MlpProblem& p, const MlpData& data) : p_(p) {
    try {
      model_ = libtorch::make_model(p, data, at::kCPU);
      x_ = libtorch::make_input(p, data, at::kCPU);
    } catch (const c10::Error& e) {
      libtorch::rethrow(e, MYCONV_TORCH_WHERE);
    }
  }
  void compile() override { run(); }  // first-call setup: allocations, the gradients' buffers
  void poison_output() override {
    libtorch::poison_grads(model_);
    loss_ = at::Tensor();
  }
  void run() override {
    try {
      libtorch::zero_grads(model_);
      for (std::int64_t s = 0; s < p_.num_steps; ++s) {
        loss_ = libtorch::forward_loss(model_, x_);
        libtorch::backward(loss_);
      }
    } catch (const c10::Error& e) {
      libtorch::rethrow(e, MYCONV_TORCH_WHERE);
    }
  }
  double loss() override { return loss_.defined() ? loss_.item<double>() : NAN; }
  std::vector<std::vector<float>> gradients() override { return libtorch::read_grads(model_); }
  PhaseTimes time_phases(int steps) override {
    PhaseTimes t;
    t.clock = "host clock around each phase of single steps";
    libtorch::zero_grads(model_);
    for (int i = 0; i < steps; ++i) {
      bench::WallTimer w;
      const at::Tensor loss = libtorch::forward_loss(model_, x_);
      t.forward_ms.push_back(w.elapsed().count());
      w.start();
      libtorch::backward(loss);
      t.backward_ms.push_back(w.elapsed().count());
    }
    return t;
  }
  std::optional<std::int64_t> peak_memory_bytes(std::string* why) override {
    if (why) *why = "not measured on the CPU: LibTorch's CPU allocator keeps no statistics";
    return std::nullopt;
  }
  std::string algorithm() const override {
    return "torch::nn::Linear + torch::gelu (erf), autograd, " +
           std::to_string(at::get_num_threads()) + " threads";
  }
  nlohmann::ordered_json extra() const override {
    nlohmann::ordered_json e = libtorch::model_extra(p_);
    e["threads"] = at::get_num_threads();
    e["compile_includes"] = "one call (first-call allocations)";
    return e;
  }

 private:
  MlpProblem p_;
  libtorch::Mlp model_{nullptr};
  at::Tensor x_, loss_;
};

class MatmulCpuInstance final : public MatmulInstance {
 public:
  MatmulCpuInstance(const MatmulProblem& p, const MatmulData& d) {
    const auto opt = at::TensorOptions().dtype(libtorch::scalar_type(p.dtype));
    a_ = libtorch::host_tensor(d.a, {p.n, p.n}).to(opt, false, true);
    b_ = libtorch::host_tensor(d.b, {p.n, p.n}).to(opt, false, true);
  }
  void compile() override { run(); }
  void poison_output() override { c_ = at::full_like(a_, NAN); }
  void run() override {
    try {
      c_ = torch::mm(a_, b_);
    } catch (const c10::Error& e) {
      libtorch::rethrow(e, MYCONV_TORCH_WHERE);
    }
  }
  std::vector<double> read_elements(const std::vector<std::int64_t>& index) override {
    return libtorch::read_elements(c_, index);
  }
  std::string algorithm() const override { return "torch::mm"; }

 private:
  at::Tensor a_, b_, c_;
};

class EagerCpuBackend final : public Backend {
 public:
  std::string name() const override { return "libtorch_cpu"; }
  std::string device() const override { return "cpu"; }
  std::string library_version() const override { return "LibTorch " TORCH_VERSION; }
  Gelu gelu() const override { return Gelu::erf; }
  std::string profiler() const override { return "libtorch"; }
  Support check_support(const MlpProblem& p) const override {
    if (p.dtype == DataType::tf32) return Support::no("tf32 is a CUDA tensor-core mode");
    return Support::yes();
  }
  std::unique_ptr<Instance> prepare(const MlpProblem& p, const MlpData& data) const override {
    return std::make_unique<EagerCpuInstance>(p, data);
  }
  Support check_matmul_support(const MatmulProblem& p) const override {
    if (p.dtype == DataType::tf32) return Support::no("tf32 is a CUDA tensor-core mode");
    return Support::yes();
  }
  std::unique_ptr<MatmulInstance> prepare_matmul(const MatmulProblem& p,
                                                 const MatmulData& data) const override {
    return std::make_unique<MatmulCpuInstance>(p, data);
  }
};

}  // namespace

std::unique_ptr<Backend> make_libtorch_eager_cpu_backend() {
  bench::libtorch::apply_cpu_threads();  // --threads, before any case
  return std::make_unique<EagerCpuBackend>();
}

}  // namespace mlp

// The macro is this file's own (a unity build puts several files in one translation unit).
#undef MYCONV_TORCH_WHERE
