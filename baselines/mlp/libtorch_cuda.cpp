// MLP backends on a CUDA LibTorch (built only with one: MYCONV_HAVE_TORCH_CUDA):
//  - "libtorch_cuda": the lecture's run_mlp as it writes it (torch::nn::Linear + gelu,
//    autograd) on CUDA tensors;
//  - "libtorch_graph": the same call captured once into a CUDA graph (at::cuda::CUDAGraph) and
//    replayed: a static input, the gradients set to none before the capture so that the first
//    step's backward allocates them from the graph's private pool and the later steps accumulate
//    into them in place (AccumulateGrad adds in place when it holds the only reference); every
//    replay rewrites them from scratch, as the eager call from zeroed gradients does.
// Parameters in the problem's dtype (fp32 for fp32 and tf32, bf16), no master weights. tf32:
// ATen's allow_tf32 switch for cuBLAS is on around the calls (and the capture), off for fp32.
//
// Streams: each instance takes a stream from ATen's pool and makes it current around all its
// work; the backward runs on the forward's stream (autograd's rule), so CUDA events on that stream
// time both. The graph is captured on that side stream after three warm-up calls on it.
// Peak memory: ATen's caching allocator's peak of allocated bytes over one call, reset before.
#include <cuda_runtime_api.h>

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>

#include "baselines/mlp/backends.hpp"
#include "baselines/mlp/libtorch_mlp.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/torch/libtorch_cuda.hpp"

namespace mlp {
namespace {

#define MYCONV_TORCH_WHERE "LibTorch " TORCH_VERSION " on CUDA"

// ATen's allow_tf32 for cuBLAS as the dtype needs it, for the guard's lifetime.
class MathGuard {
 public:
  explicit MathGuard(DataType dt) {
    at::Context& ctx = at::globalContext();
    saved_ = ctx.allowTF32CuBLAS();
    ctx.setAllowTF32CuBLAS(dt == DataType::tf32);
  }
  ~MathGuard() { at::globalContext().setAllowTF32CuBLAS(saved_); }
  MathGuard(const MathGuard&) = delete;
  MathGuard& operator=(const MathGuard&) = delete;

 private:
  bool saved_ = false;
};

std::int64_t allocated_peak(c10::DeviceIndex device) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device);
  return stats.allocated_bytes[0].peak;  // StatType::AGGREGATE
}

// Bytes the caching allocator holds from the driver, private graph pools included.
std::int64_t reserved_now(c10::DeviceIndex device) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device);
  return stats.reserved_bytes[0].current;
}

class CudaInstance : public Instance {
 public:
  CudaInstance(const MlpProblem& p, const MlpData& data, bool graph)
      : p_(p), graph_mode_(graph), stream_(at::cuda::getStreamFromPool()), timer_(stream_.stream()) {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    try {
      model_ = libtorch::make_model(p, data, stream_.device());
      x_ = libtorch::make_input(p, data, stream_.device());
    } catch (const c10::Error& e) {
      libtorch::rethrow(e, MYCONV_TORCH_WHERE);
    }
    sync();
  }

  void compile() override {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    const MathGuard math(p_.dtype);
    try {
      if (!graph_mode_) {
        eager_call();
        return;
      }
      for (int i = 0; i < 3; ++i) eager_call();  // warm-up on the capture stream
      sync();
      for (auto& t : model_->parameters()) t.mutable_grad() = at::Tensor();
      graph_ = std::make_unique<at::cuda::CUDAGraph>();
      graph_->capture_begin();
      try {
        for (std::int64_t s = 0; s < p_.num_steps; ++s) {
          loss_ = libtorch::forward_loss(model_, x_);
          libtorch::backward(loss_);
        }
      } catch (...) {
        graph_->capture_end();
        throw;
      }
      graph_->capture_end();
      // The forward alone, for the split (backward = one step's share of the call - forward).
      forward_graph_ = std::make_unique<at::cuda::CUDAGraph>();
      forward_graph_->capture_begin();
      forward_loss_ = libtorch::forward_loss(model_, x_).detach();
      forward_graph_->capture_end();
      sync();
    } catch (const c10::Error& e) {
      libtorch::rethrow(e, MYCONV_TORCH_WHERE);
    }
  }
  void poison_output() override {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    libtorch::poison_grads(model_);
    if (loss_.defined()) loss_.detach().fill_(NAN);
  }
  void run() override {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    if (graph_mode_) {
      graph_->replay();
      return;
    }
    const MathGuard math(p_.dtype);
    try {
      eager_call();
    } catch (const c10::Error& e) {
      libtorch::rethrow(e, MYCONV_TORCH_WHERE);
    }
  }
  void sync() override { CUDA_CHECK(cudaStreamSynchronize(stream_.stream())); }
  double loss() override {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    return loss_.defined() ? loss_.to(at::kCPU).item<double>() : NAN;
  }
  std::vector<std::vector<float>> gradients() override {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    return libtorch::read_grads(model_);
  }
  PhaseTimes time_phases(int steps) override {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    const MathGuard math(p_.dtype);
    PhaseTimes t;
    bench::Event e0, e1, e2;
    if (graph_mode_) {
      t.clock = "CUDA events: forward = a replay of a graph of the forward alone; backward = "
                "(a replay of the call's graph) / num_steps - forward";
      for (int i = 0; i < steps; ++i) {
        e0.record(stream_.stream());
        forward_graph_->replay();
        e1.record(stream_.stream());
        graph_->replay();
        e2.record(stream_.stream());
        e2.synchronize();
        float f = 0, call = 0;
        CUDA_CHECK(cudaEventElapsedTime(&f, e0.get(), e1.get()));
        CUDA_CHECK(cudaEventElapsedTime(&call, e1.get(), e2.get()));
        t.forward_ms.push_back(f);
        t.backward_ms.push_back(call / float(p_.num_steps) - f);
      }
      return t;
    }
    t.clock = "CUDA events on the instance's stream around each phase of single steps";
    for (int i = 0; i < steps; ++i) {
      e0.record(stream_.stream());
      const at::Tensor loss = libtorch::forward_loss(model_, x_);
      e1.record(stream_.stream());
      libtorch::backward(loss);
      e2.record(stream_.stream());
      e2.synchronize();
      float f = 0, b = 0;
      CUDA_CHECK(cudaEventElapsedTime(&f, e0.get(), e1.get()));
      CUDA_CHECK(cudaEventElapsedTime(&b, e1.get(), e2.get()));
      t.forward_ms.push_back(f);
      t.backward_ms.push_back(b);
    }
    return t;
  }
  std::optional<std::int64_t> peak_memory_bytes(std::string*) override {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    sync();
    c10::cuda::CUDACachingAllocator::resetPeakStats(stream_.device_index());
    run();
    sync();
    std::int64_t peak = allocated_peak(stream_.device_index());
    // A replayed graph allocates nothing: its activations live in the graph's private pool,
    // which the allocator holds as reserved (an upper bound: other cached blocks count too).
    if (graph_mode_) peak = std::max(peak, reserved_now(stream_.device_index()));
    return peak;
  }
  void run_for_profile() override { run(); }
  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.stream(); }
  std::unique_ptr<bench::Replay> make_replay(bench::DeviceServices&, int, std::string* why) override {
    if (why) *why = graph_mode_ ? "libtorch_graph is a replayed graph already"
                                : "ATen allocates during the step; libtorch_graph is its capture";
    return nullptr;
  }
  std::string algorithm() const override {
    return std::string(graph_mode_ ? "at::cuda::CUDAGraph replay of " : "") +
           "torch::nn::Linear + torch::gelu (erf), autograd" +
           (p_.dtype == DataType::tf32 ? ", allow_tf32=on" : "");
  }
  nlohmann::ordered_json extra() const override {
    nlohmann::ordered_json e = libtorch::model_extra(p_);
    if (graph_mode_)
      e["gradients"] = "set to none before capture; allocated by the first step in the graph's "
                       "pool, accumulated in place by the later steps";
    e["torch_allow_tf32_cublas"] = p_.dtype == DataType::tf32;
    e["compile_includes"] = graph_mode_ ? "three warm-up calls and the graph captures"
                                        : "one call (cuBLAS handle, kernel module loads)";
    return e;
  }

 private:
  void eager_call() {
    libtorch::zero_grads(model_);
    for (std::int64_t s = 0; s < p_.num_steps; ++s) {
      loss_ = libtorch::forward_loss(model_, x_);
      libtorch::backward(loss_);
    }
  }

  MlpProblem p_;
  bool graph_mode_;
  c10::cuda::CUDAStream stream_;
  bench::CudaEventTimer timer_;
  libtorch::Mlp model_{nullptr};
  at::Tensor x_, loss_, forward_loss_;
  std::unique_ptr<at::cuda::CUDAGraph> graph_, forward_graph_;
};

class CudaMatmulInstance final : public MatmulInstance {
 public:
  CudaMatmulInstance(const MatmulProblem& p, const MatmulData& d)
      : p_(p), stream_(at::cuda::getStreamFromPool()), timer_(stream_.stream()) {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    const auto opt =
        at::TensorOptions().dtype(libtorch::scalar_type(p.dtype)).device(stream_.device());
    a_ = libtorch::host_tensor(d.a, {p.n, p.n}).to(opt, false, true);
    b_ = libtorch::host_tensor(d.b, {p.n, p.n}).to(opt, false, true);
    sync();
  }
  void compile() override { run(); }
  void poison_output() override {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    c_ = at::full_like(a_, NAN);
  }
  void run() override {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    const MathGuard math(p_.dtype);
    c_ = torch::mm(a_, b_);
  }
  void sync() override { CUDA_CHECK(cudaStreamSynchronize(stream_.stream())); }
  std::vector<double> read_elements(const std::vector<std::int64_t>& index) override {
    const c10::cuda::CUDAStreamGuard guard(stream_);
    return libtorch::read_elements(c_, index);
  }
  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.stream(); }
  std::unique_ptr<bench::Replay> make_replay(bench::DeviceServices&, int, std::string* why) override {
    if (why) *why = "torch::mm allocates its output";
    return nullptr;
  }
  std::string algorithm() const override { return "torch::mm"; }

 private:
  MatmulProblem p_;
  c10::cuda::CUDAStream stream_;
  bench::CudaEventTimer timer_;
  at::Tensor a_, b_, c_;
};

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(bool graph) : graph_(graph) {}
  std::string name() const override { return graph_ ? "libtorch_graph" : "libtorch_cuda"; }
  std::string device() const override { return "cuda"; }
  std::string library_version() const override { return "LibTorch " TORCH_VERSION; }
  Support available() const override { return bench::libtorch::cuda_available(); }
  Gelu gelu() const override { return Gelu::erf; }
  std::string profiler() const override { return "libtorch"; }
  Support check_support(const MlpProblem&) const override { return Support::yes(); }
  std::unique_ptr<Instance> prepare(const MlpProblem& p, const MlpData& data) const override {
    return std::make_unique<CudaInstance>(p, data, graph_);
  }
  Support check_matmul_support(const MatmulProblem&) const override {
    if (graph_) return Support::no("libtorch_graph's GEMM is torch::mm, as libtorch_cuda's");
    return Support::yes();
  }
  std::unique_ptr<MatmulInstance> prepare_matmul(const MatmulProblem& p,
                                                 const MatmulData& data) const override {
    return std::make_unique<CudaMatmulInstance>(p, data);
  }

 private:
  bool graph_;
};

}  // namespace

std::unique_ptr<Backend> make_libtorch_eager_cuda_backend() {
  return std::make_unique<CudaBackend>(false);
}
std::unique_ptr<Backend> make_libtorch_graph_backend() {
  return std::make_unique<CudaBackend>(true);
}

}  // namespace mlp

// The macro is this file's own (a unity build puts several files in one translation unit).
#undef MYCONV_TORCH_WHERE
