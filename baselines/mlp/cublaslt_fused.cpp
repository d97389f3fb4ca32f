// MLP backend "cublaslt_fused": the step of run_mlp written directly on cuBLASLt, without
// autograd. Parameters, activations and gradients are held in the problem's dtype (fp32 for fp32
// and tf32, bf16 for bf16; no fp32 master weights), accumulation in fp32 (CUBLAS_COMPUTE_32F; tf32:
// CUBLAS_COMPUTE_32F_FAST_TF32). GeLU is cuBLASLt's, the tanh approximation: the reference of
// this backend uses gelu(approximate="tanh").
//
// Layout: every tensor row-major as in PyTorch (x, h, z: [batch][dim]; W: [out][in]), which
// cuBLASLt (column-major) sees transposed: h is a dim x batch matrix, W an in x out one.
//   forward, layer l:   z_l^T = W_l h_{l-1}^T + b_l, h_l^T = gelu(z_l^T)
//       one GEMM (A = W stored in x out, op T; B = h_{l-1}^T, op N), epilogue GELU_AUX_BIAS: bias
//       b_l, output h_l, aux = z_l (the pre-activation, kept for the backward; ld = dim, which
//       cuBLASLt wants divisible by 8).
//   loss: the mean of h_{L-1} (a sum kernel); dL/dh_{L-1} = 1/(batch*dim) everywhere.
//   backward, last layer: dz_{L-1} = gelu'(z_{L-1}) / (batch*dim), db_{L-1} = its sum over the
//       batch: a k=1 GEMM of a column of 1/(batch*dim) by a row of ones, with the DGELU_BGRAD
//       epilogue (aux z_{L-1}, bias gradient db_{L-1}).
//   backward, layer l: dW_l += dz_l^T h_{l-1} (a plain GEMM, m = in, n = out, k = batch; beta = 1
//       accumulates over the steps); then for l > 0 dh_{l-1}^T = W_l^T dz_l^T with the DGELU_BGRAD
//       epilogue (aux z_{l-1}) giving dz_{l-1} and db_{l-1} at once.
//   Bias gradients: the epilogue overwrites its vector, so steps after the first write a scratch
//   vector added in (add kernel).
// The algorithm of every GEMM is the first of cuBLASLt's heuristic (compile()). A call: gradients
// zeroed (memset), then num_steps steps on the instance's stream. compile() captures the call once
// into a CUDA graph and run() replays it, as libtorch_graph replays its capture: both are then
// launched alike, so the two compare the work on the device (the fused epilogues against
// autograd's separate GELU passes), not how many launches the host issues.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "baselines/mlp/backends.hpp"
#include "core/cuda/cublas_check.hpp"
#include "core/cuda/cublaslt_raii.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/error.hpp"
#include "models/mlp/cuda/graph_step.hpp"
#include "models/mlp/cuda/step_kernels.hpp"

namespace mlp {
namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;  // as baselines/ops/cublaslt.cpp

cudaDataType_t data_type(DataType dt) {
  return dt == DataType::bf16 ? CUDA_R_16BF : CUDA_R_32F;
}
cublasComputeType_t compute_type(DataType dt) {
  return dt == DataType::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

using cuda::Bytes;

// One GEMM of the step: descriptors, epilogue pointers, the heuristic's algorithm.
// D (m x n, column-major, ld m) = op(A) op(B) (+ beta C, C = D), epilogue applied.
class Gemm {
 public:
  Gemm(cublasLtHandle_t h, DataType dt, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
       std::int64_t k, cublasLtEpilogue_t epilogue, const void* bias, const void* aux)
      : h_(h), m_(m), n_(n), k_(k) {
    cublasLtMatmulDesc_t d = nullptr;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&d, compute_type(dt), CUDA_R_32F));
    desc_ = bench::LtMatmulDesc(d);
    const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                sizeof epilogue));
    if (bias)
      CUBLAS_CHECK(
          cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    if (aux) {
      CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                                  &aux, sizeof aux));
      const std::int64_t ld = m;  // the aux matrix is m x n like D
      CUBLAS_CHECK(
          cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld));
    }
    a_ = layout(dt, trans_a ? k : m, trans_a ? m : k);
    b_ = layout(dt, trans_b ? n : k, trans_b ? k : n);
    c_ = layout(dt, m, n);
    cublasLtMatmulPreference_t p = nullptr;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&p));
    pref_ = bench::LtPreference(p);
    const std::uint64_t ws = kWorkspaceBytes;
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &ws, sizeof ws));
  }

  void choose(const char* what) {
    int returned = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
        h_, desc_.get(), a_.get(), b_.get(), c_.get(), c_.get(), pref_.get(), 1, &algo_, &returned);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && returned == 0))
      throw bench::Unsupported("cuBLASLt " + bench::cublaslt_version() + ": no algorithm for the " +
                               what + " GEMM (m " + std::to_string(m_) + ", n " +
                               std::to_string(n_) + ", k " + std::to_string(k_) + ")");
    if (st != CUBLAS_STATUS_SUCCESS)
      bench::throw_cublas_error("cublasLtMatmulAlgoGetHeuristic", st, __FILE__, __LINE__);
  }

  void run(const void* a, const void* b, void* d, float beta, void* ws, cudaStream_t s) const {
    const float alpha = 1.0f;
    CUBLAS_CHECK(cublasLtMatmul(h_, desc_.get(), &alpha, a, a_.get(), b, b_.get(), &beta, d,
                                c_.get(), d, c_.get(), &algo_.algo, ws, kWorkspaceBytes, s));
  }

 private:
  static bench::LtMatrixLayout layout(DataType dt, std::int64_t rows, std::int64_t cols) {
    cublasLtMatrixLayout_t l = nullptr;
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, data_type(dt), std::uint64_t(rows),
                                            std::uint64_t(cols), rows));
    return bench::LtMatrixLayout(l);
  }

  cublasLtHandle_t h_;
  std::int64_t m_, n_, k_;
  bench::LtMatmulDesc desc_;
  bench::LtMatrixLayout a_, b_, c_;
  bench::LtPreference pref_;
  cublasLtMatmulHeuristicResult_t algo_{};
};

class FusedInstance final : public cuda::GraphStepInstance {
 public:
  FusedInstance(const MlpProblem& p, const MlpData& data)
      : GraphStepInstance(p, "cublaslt_fused"), handle_(bench::make_lt_handle()) {
    const std::int64_t D = p.dim, B = p.batch_size, L = p.num_layers;
    const auto act = std::size_t(B * D) * element_bytes(), vec = std::size_t(D) * element_bytes();
    x_ = upload(data.x);
    for (std::int64_t l = 0; l < L; ++l) {
      w_.push_back(upload(data.weight[std::size_t(l)]));
      b_.push_back(upload(data.bias[std::size_t(l)]));
      dw_.emplace_back(std::size_t(D * D) * element_bytes());
      db_.emplace_back(vec);
      h_.emplace_back(act);
      z_.emplace_back(act);
    }
    db_step_ = Bytes(vec);
    dz_[0] = Bytes(act);
    dz_[1] = Bytes(act);
    scale_ = upload(std::vector<float>(std::size_t(D), 1.0f / float(B * D)));
    ones_ = upload(std::vector<float>(std::size_t(B), 1.0f));
    workspace_ = Bytes(kWorkspaceBytes);
    // The GEMMs, their pointers fixed here (see the header comment for the shapes).
    const DataType dt = p.dtype;
    for (std::int64_t l = 0; l < L; ++l)
      forward_.emplace_back(handle_.get(), dt, true, false, D, B, D,
                            CUBLASLT_EPILOGUE_GELU_AUX_BIAS, b_[std::size_t(l)].data(),
                            z_[std::size_t(l)].data());
    // Backward GEMMs write db of the first step directly, later steps into db_step_.
    for (int first = 0; first < 2; ++first) {
      void* last_db = first ? db_[std::size_t(L - 1)].data() : db_step_.data();
      last_[first] = std::make_unique<Gemm>(handle_.get(), dt, false, false, D, B, 1,
                                            CUBLASLT_EPILOGUE_DGELU_BGRAD, last_db,
                                            z_[std::size_t(L - 1)].data());
      for (std::int64_t l = 1; l < L; ++l)
        dh_[first].emplace_back(handle_.get(), dt, false, false, D, B, D,
                                CUBLASLT_EPILOGUE_DGELU_BGRAD,
                                first ? db_[std::size_t(l - 1)].data() : db_step_.data(),
                                z_[std::size_t(l - 1)].data());
    }
    dw_gemm_ = std::make_unique<Gemm>(handle_.get(), dt, false, true, D, D, B,
                                      CUBLASLT_EPILOGUE_DEFAULT, nullptr, nullptr);
  }

  void poison_output() override {
    for (auto& g : dw_) g.fill_bytes_async(0xFF, stream());
    for (auto& g : db_) g.fill_bytes_async(0xFF, stream());
    CUDA_CHECK(cudaMemsetAsync(loss_sum(), 0xFF, sizeof(float), stream()));
  }
  std::vector<std::vector<float>> gradients() override {
    std::vector<std::vector<float>> out;
    for (std::size_t l = 0; l < dw_.size(); ++l) {
      out.push_back(download(dw_[l], std::size_t(problem().dim * problem().dim)));
      out.push_back(download(db_[l], std::size_t(problem().dim)));
    }
    return out;
  }
  std::optional<std::int64_t> peak_memory_bytes(std::string*) override {
    // Everything is allocated up front: the sum of the instance's buffers.
    std::int64_t n = std::int64_t(x_.bytes() + db_step_.bytes() + dz_[0].bytes() * 2 +
                                  scale_.bytes() + ones_.bytes() + workspace_.bytes());
    for (const auto* v : {&w_, &b_, &dw_, &db_, &h_, &z_})
      for (const auto& buf : *v) n += std::int64_t(buf.bytes());
    return n;
  }
  std::string algorithm() const override {
    return std::string(
               "CUDA graph replay of cuBLASLt GEMMs, forward GELU_AUX_BIAS, backward "
               "DGELU_BGRAD, ") +
           (problem().dtype == DataType::tf32 ? "CUBLAS_COMPUTE_32F_FAST_TF32"
                                              : "CUBLAS_COMPUTE_32F");
  }
  nlohmann::ordered_json extra() const override {
    return {{"cublaslt_version", bench::cublaslt_version()},
            {"gelu", "tanh approximation (cuBLASLt's GELU epilogues)"},
            {"parameters_dtype", problem().dtype == DataType::bf16 ? "bf16" : "fp32"},
            {"master_weights", "none: parameters, activations and gradients in the dtype"},
            {"workspace_limit_bytes", kWorkspaceBytes},
            {"launch", "one CUDA graph of the whole call (captured in compile()), replayed"},
            {"compile_includes",
             "cublasLtMatmulAlgoGetHeuristic for each GEMM (first result), "
             "one warm-up call, the graph captures"}};
  }

 private:
  void choose() override {
    for (auto& g : forward_) g.choose("forward (GELU_AUX_BIAS)");
    for (int f = 0; f < 2; ++f) {
      last_[f]->choose("last layer's DGELU_BGRAD");
      for (auto& g : dh_[f]) g.choose("backward dX (DGELU_BGRAD)");
    }
    dw_gemm_->choose("weight gradient");
  }

  // One call of run_mlp as enqueued work: what the graph holds.
  void call() override {
    for (auto& g : dw_) g.fill_bytes_async(0, stream());
    for (std::int64_t s = 0; s < problem().num_steps; ++s) {
      forward();
      backward(s == 0);
    }
  }

  void forward() override {
    const cudaStream_t s = stream();
    const void* in = x_.data();
    for (std::size_t l = 0; l < forward_.size(); ++l) {
      forward_[l].run(w_[l].data(), in, h_[l].data(), 0.0f, workspace_.data(), s);
      in = h_[l].data();
    }
    cuda::sum_to(in, problem().dtype == DataType::bf16, problem().batch_size * problem().dim,
                 loss_sum(), s);
  }

  void backward(bool first) {
    const cudaStream_t s = stream();
    const bool bf16 = problem().dtype == DataType::bf16;
    const std::size_t L = forward_.size();
    const int f = first ? 1 : 0;
    // dz_{L-1} and db_{L-1}.
    last_[f]->run(scale_.data(), ones_.data(), dz_[0].data(), 0.0f, workspace_.data(), s);
    if (!first) cuda::add_to(db_[L - 1].data(), db_step_.data(), bf16, problem().dim, s);
    int cur = 0;
    for (std::size_t l = L; l-- > 0;) {
      const void* prev = l == 0 ? x_.data() : h_[l - 1].data();
      dw_gemm_->run(prev, dz_[cur].data(), dw_[l].data(), 1.0f, workspace_.data(), s);
      if (l == 0) break;
      dh_[f][l - 1].run(w_[l].data(), dz_[cur].data(), dz_[1 - cur].data(), 0.0f, workspace_.data(),
                        s);
      if (!first) cuda::add_to(db_[l - 1].data(), db_step_.data(), bf16, problem().dim, s);
      cur = 1 - cur;
    }
  }

  bench::LtHandle handle_;
  Bytes x_, db_step_, scale_, ones_, workspace_;
  Bytes dz_[2];
  std::vector<Bytes> w_, b_, dw_, db_, h_, z_;
  std::vector<Gemm> forward_;
  std::unique_ptr<Gemm> last_[2], dw_gemm_;
  std::vector<Gemm> dh_[2];
};

// --matmul: one plain cuBLASLt GEMM, C = A B row-major (C^T = B^T A^T column-major).
class FusedMatmulInstance final : public MatmulInstance {
 public:
  FusedMatmulInstance(const MatmulProblem& p, const MatmulData& d)
      : p_(p),
        handle_(bench::make_lt_handle()),
        gemm_(handle_.get(), p.dtype, false, false, p.n, p.n, p.n, CUBLASLT_EPILOGUE_DEFAULT,
              nullptr, nullptr),
        timer_(stream_.get()) {
    const DataType st = p.dtype == DataType::bf16 ? DataType::bf16 : DataType::fp32;
    for (const auto* v : {&d.a, &d.b}) {
      const std::vector<unsigned char> bytes = bench::to_storage_bytes(*v, st);
      in_.emplace_back(bytes.size());
      in_.back().upload_async(bytes.data(), stream_.get());
      stream_.synchronize();
    }
    c_ = Bytes(in_[0].bytes());
    workspace_ = Bytes(kWorkspaceBytes);
  }
  void compile() override { gemm_.choose("square"); }
  void poison_output() override { c_.fill_bytes_async(0xFF, stream_.get()); }
  void run() override {
    gemm_.run(in_[1].data(), in_[0].data(), c_.data(), 0.0f, workspace_.data(), stream_.get());
  }
  void sync() override { stream_.synchronize(); }
  std::vector<double> read_elements(const std::vector<std::int64_t>& index) override {
    const DataType st = p_.dtype == DataType::bf16 ? DataType::bf16 : DataType::fp32;
    std::vector<unsigned char> bytes(c_.bytes());
    c_.download_async(bytes.data(), stream_.get());
    stream_.synchronize();
    const std::size_t es = std::size_t(bench::storage_bytes(st));
    std::vector<double> out;
    for (const auto i : index) {
      float v = 0;
      bench::from_storage_bytes(bytes.data() + std::size_t(i) * es, 1, st, &v);
      out.push_back(v);
    }
    return out;
  }
  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }
  std::string algorithm() const override { return "cublasLtMatmul, heuristic's first"; }

 private:
  MatmulProblem p_;
  bench::LtHandle handle_;
  Gemm gemm_;
  bench::Stream stream_;
  bench::CudaEventTimer timer_;
  std::vector<Bytes> in_;
  Bytes c_, workspace_;
};

class FusedBackend final : public Backend {
 public:
  std::string name() const override { return "cublaslt_fused"; }
  std::string device() const override { return "cuda"; }
  std::string library_version() const override { return "cuBLASLt " + bench::cublaslt_version(); }
  Support available() const override {
    const bench::CudaAvailability a = bench::cuda_device_available();
    return a.ok ? Support::yes() : Support::no(a.reason);
  }
  Gelu gelu() const override { return Gelu::tanh; }
  std::string profiler() const override { return "cupti"; }
  Support check_support(const MlpProblem& p) const override {
    if (p.dim % 8 != 0)
      return Support::no(
          "cuBLASLt's GELU aux matrix needs a leading dimension (dim) divisible "
          "by 8; dim is " +
          std::to_string(p.dim));
    return Support::yes();
  }
  std::unique_ptr<Instance> prepare(const MlpProblem& p, const MlpData& data) const override {
    return std::make_unique<FusedInstance>(p, data);
  }
  Support check_matmul_support(const MatmulProblem&) const override { return Support::yes(); }
  std::unique_ptr<MatmulInstance> prepare_matmul(const MatmulProblem& p,
                                                 const MatmulData& data) const override {
    return std::make_unique<FusedMatmulInstance>(p, data);
  }
};

}  // namespace

std::unique_ptr<Backend> make_cublaslt_fused_backend() {
  return std::make_unique<FusedBackend>();
}

}  // namespace mlp
