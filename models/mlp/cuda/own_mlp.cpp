// MLP backend "own_cuda": the step of run_mlp on our GEMM engine. fp32: strict FP32 on its SGEMMs
// (own_mlp_sgemm.cpp). bf16 (this file): its tensor-core path (core/cuda/gemm/gemm.hpp), bf16
// parameters, activations and gradients (no fp32 master weights, as cublaslt_fused), FP32
// accumulation, GeLU erf (PyTorch's default, the lecture's). Every tensor row-major as in
// PyTorch: x, h, z [batch][dim], W [out][in]. Per layer l (B = batch, D = dim):
//   forward:  h_l = gelu(h_{l-1} W_l^T + b_l), z_l = the pre-activation: one GEMM, m B, n D, k D,
//             B operand W_l read K-major, the bias_gelu_erf_aux epilogue.
//   loss:     the sum of h_{L-1} (its mean is the loss; step_kernels.cu).
//   backward, last layer: dz_{L-1} = gelu'(z_{L-1}) / (B D), with its transpose and its column
//             sums (db) in one kernel (step_kernels.cu).
//   backward, layer l: dW_l (+)= dz_l^T h_{l-1}: one GEMM, m D, n D, k B, A = dz_l^T (the
//             transpose the step before wrote), the identity epilogue in the call's first step,
//             then the residual epilogue on dW_l itself (dW_l += ...); then for l > 0
//             dz_{l-1} = (dz_l W_l) * gelu'(z_{l-1}): one GEMM, m B, n D, k D, B operand W_l
//             MN-major, the dgelu_erf epilogue, which also writes dz_{l-1}^T and adds its column
//             sums to db_{l-1}.
//   Bias gradients: FP32 sums over the call's steps (atomic adds: their order, and so the last
//   bits, vary between runs), converted to bf16 once at the end of the call.
// Plans (struct Gemm's rule, from measurements): the 64 x 64 wgmma tile for long k, the 128-row
// wgmma kernel (the engine's rule, gemm_plan) where its tiles are many, else the small-tile path
// (mma.sync, many blocks); the cooperative schedule throughout
// (the dgelu and K-major epilogues are built for it). A call (memset of the bias sums, then
// num_steps steps) is captured once into a CUDA graph and replayed, as libtorch_graph and
// cublaslt_fused are (graph_step.hpp).
#include "models/mlp/cuda/own_mlp.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/gemm/gemm.hpp"
#include "core/cuda/gemm/sgemm.hpp"
#include "models/mlp/cuda/graph_step.hpp"
#include "models/mlp/cuda/own_mlp_sgemm.hpp"
#include "models/mlp/cuda/step_kernels.hpp"

namespace mlp {
namespace {

namespace gemm = bench::gemm;
using cuda::Bytes;

int sm_count() {
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// Which of the engine's paths a GEMM takes: MYCONV_OWN_MLP_GEMM=wgmma (its rule's tile),
// wgmma64 (its 64 x 64 tile) or small forces one, and
// small:TILE:SPLITS the small path's tile (32, 64) and split count too (to time them side by
// side); by default the rule below.
struct Forced {
  enum { rule, wgmma, wgmma64, small } path = rule;
  int tile = 0, splits = 0;  // 0: the small path's rule
};
Forced forced_path() {
  Forced f;
  const char* v = std::getenv("MYCONV_OWN_MLP_GEMM");
  const std::string s = v ? v : "";
  if (s == "wgmma") f.path = Forced::wgmma;
  if (s == "wgmma64") f.path = Forced::wgmma64;
  if (s.rfind("small", 0) == 0) {
    f.path = Forced::small;
    if (std::sscanf(s.c_str(), "small:%d:%d", &f.tile, &f.splits) != 2) f.tile = f.splits = 0;
  }
  return f;
}

// One GEMM of the step: its shape and the engine's plan for it. The rule, from ncu's times of
// each GEMM alone on an H100 (MLP d256-d1280, batch 256-1280; the table in results/h100/
// 20261128_mlp_own_cuda/README.md):
//   - the 64 x 64 wgmma tile where k >= 1024, the 128 x 128 tiles are fewer than the SMs (a
//     large GEMM keeps the larger tiles) and the 64 x 64 ones give a third of the SMs one each
//     (half of them for the dGELU GEMM): at d1280 batch 256 the forward took 11.0 us there against
//     17.7 on 32 x 32 mma.sync tiles, the dGELU GEMM 16.8 against 18.8; at d1024 the forward 10.0
//     against 11.3, but the dGELU GEMM 15.5 against 13.1;
//   - else the 128-row wgmma kernel (the engine's rule, gemm_plan) where its tiles give a third
//     of the SMs one each: the weight gradient (k = batch 256) of d1280 took 8.9 us there
//     against 11.7 on 64 x 64 mma.sync tiles, of d1024 7.9 against 8.7;
//   - else the small-tile path: at d256 the dGELU GEMM took 5.9 us on 32 x 32 mma.sync tiles
//     against 13.7 on 64 x 64 wgmma ones and 26.0 on 128-row ones.
struct Gemm {
  gemm::GemmShape shape;
  gemm::GemmPlan plan;
  gemm::GemmSmallPlan small_plan;
  bool small = false;
  // dgelu: the GEMM takes the dgelu epilogue.
  Gemm(std::int64_t m, std::int64_t n, std::int64_t k, bool b_k_major, bool dgelu, int sms) {
    shape.m = m;
    shape.n = n;
    shape.k = k;
    shape.b_k_major = b_k_major;
    const Forced f = forced_path();
    const std::int64_t tiles64 = (m + 63) / 64 * ((n + 63) / 64);
    const std::int64_t tiles128 = (m + 127) / 128 * ((n + 127) / 128);
    const bool wide =
        f.path == Forced::wgmma64 ||
        (f.path == Forced::rule && k >= 1024 && tiles128 < sms && tiles64 * (dgelu ? 2 : 3) >= sms);
    plan = wide ? gemm::gemm_plan(shape, sms, 64, 0, gemm::GemmSchedule::cooperative, 64)
                : gemm::gemm_plan(shape, sms);
    small_plan = gemm::gemm_small_plan(shape, sms, f.tile, f.splits);
    small = f.path == Forced::small || (f.path == Forced::rule && !wide && tiles128 * 3 < sms);
  }
  std::size_t workspace_bytes() const {
    return small ? gemm::gemm_small_workspace_bytes(shape, small_plan)
                 : gemm::gemm_workspace_bytes(shape, plan);
  }
  std::string name() const {
    if (!small) return "wgmma " + gemm::gemm_plan_name(plan);
    const std::string t = std::to_string(small_plan.tile);
    return "mma.sync " + t + "x" + t + " tiles, " + std::to_string(small_plan.blocks) + " blocks" +
           (small_plan.splits > 1 ? " x " + std::to_string(small_plan.splits) + " k splits" : "");
  }
  void run(const void* a, const void* b, void* c, const gemm::Epilogue& e, void* workspace,
           cudaStream_t s) const {
    if (small)
      gemm::gemm_small(bench::MmaDtype::bf16, shape, small_plan, a, b, c, e, workspace, s);
    else
      gemm::gemm_sm90(bench::MmaDtype::bf16, shape, plan, a, b, c, e, workspace, s);
  }
};

class OwnInstance final : public cuda::GraphStepInstance {
 public:
  OwnInstance(const MlpProblem& p, const MlpData& data)
      : GraphStepInstance(p, "own_cuda"),
        sms_(sm_count()),
        forward_gemm_(p.batch_size, p.dim, p.dim, true, false, sms_),
        dw_gemm_(p.dim, p.dim, p.batch_size, false, false, sms_),
        dh_gemm_(p.batch_size, p.dim, p.dim, false, true, sms_) {
    const std::int64_t D = p.dim, B = p.batch_size, L = p.num_layers;
    const auto act = std::size_t(B * D) * element_bytes();
    x_ = upload(data.x);
    for (std::int64_t l = 0; l < L; ++l) {
      w_.push_back(upload(data.weight[std::size_t(l)]));
      b_.push_back(upload(data.bias[std::size_t(l)]));
      dw_.emplace_back(std::size_t(D * D) * element_bytes());
      h_.emplace_back(act);
      z_.emplace_back(act);
    }
    db_ = Bytes(std::size_t(L * D) * element_bytes());
    db_sum_ = bench::DeviceBuffer<float>(std::size_t(L * D));
    dz_[0] = Bytes(act);
    dz_[1] = Bytes(act);
    dz_t_ = Bytes(act);
    const std::size_t ws = std::max(
        {forward_gemm_.workspace_bytes(), dw_gemm_.workspace_bytes(), dh_gemm_.workspace_bytes()});
    if (ws > 0) workspace_ = Bytes(ws);
  }

  void poison_output() override {
    for (auto& g : dw_) g.fill_bytes_async(0xFF, stream());
    db_.fill_bytes_async(0xFF, stream());
    CUDA_CHECK(cudaMemsetAsync(loss_sum(), 0xFF, sizeof(float), stream()));
  }
  std::vector<std::vector<float>> gradients() override {
    const std::size_t D = std::size_t(problem().dim);
    const std::vector<float> db = download(db_, db_.bytes() / element_bytes());
    std::vector<std::vector<float>> out;
    for (std::size_t l = 0; l < dw_.size(); ++l) {
      out.push_back(download(dw_[l], D * D));
      out.emplace_back(db.begin() + std::ptrdiff_t(l * D),
                       db.begin() + std::ptrdiff_t((l + 1) * D));
    }
    return out;
  }
  std::optional<std::int64_t> peak_memory_bytes(std::string*) override {
    // Everything is allocated up front: the sum of the instance's buffers.
    std::int64_t n = std::int64_t(x_.bytes() + db_.bytes() + db_sum_.bytes() + dz_[0].bytes() * 2 +
                                  dz_t_.bytes() + workspace_.bytes() + sizeof(float));
    for (const auto* v : {&w_, &b_, &dw_, &h_, &z_})
      for (const auto& buf : *v) n += std::int64_t(buf.bytes());
    return n;
  }
  std::string algorithm() const override {
    return "CUDA graph replay of our GEMM engine, forward bias+GELU(erf) epilogue keeping the "
           "pre-activation, backward dGELU epilogue with the bias gradient; forward " +
           forward_gemm_.name() + "; dX " + dh_gemm_.name() + "; dW " + dw_gemm_.name();
  }
  nlohmann::ordered_json extra() const override {
    return {{"gelu", "erf"},
            {"parameters_dtype", "bf16"},
            {"master_weights", "none: parameters, activations and gradients in bf16"},
            {"bias_gradient",
             "FP32 sums over the call's steps (atomic adds), converted to bf16 "
             "at the end of the call"},
            {"launch", "one CUDA graph of the whole call (captured in compile()), replayed"},
            {"compile_includes", "one warm-up call, the graph captures"}};
  }

 private:
  void call() override {
    const MlpProblem& p = problem();
    CUDA_CHECK(cudaMemsetAsync(db_sum_.data(), 0, db_sum_.bytes(), stream()));
    for (std::int64_t s = 0; s < p.num_steps; ++s) {
      forward();
      backward(s == 0);
    }
    cuda::to_bf16(db_sum_.data(), db_.data(), std::int64_t(db_sum_.size()), stream());
  }

  void forward() override {
    const void* in = x_.data();
    for (std::size_t l = 0; l < w_.size(); ++l) {
      gemm::Epilogue e;
      e.kind = gemm::EpilogueKind::bias_gelu_erf_aux;
      e.bias = b_[l].data();
      e.aux = z_[l].data();
      forward_gemm_.run(in, w_[l].data(), h_[l].data(), e, workspace_.data(), stream());
      in = h_[l].data();
    }
    cuda::sum_to(in, true, problem().batch_size * problem().dim, loss_sum(), stream());
  }

  void backward(bool first) {
    const MlpProblem& p = problem();
    const std::size_t L = w_.size();
    float* const db_sum = db_sum_.data();
    cuda::loss_backward(z_[L - 1].data(), true, p.batch_size, p.dim, dz_[0].data(), dz_t_.data(),
                        db_sum + (L - 1) * std::size_t(p.dim), stream());
    int cur = 0;
    for (std::size_t l = L; l-- > 0;) {
      const void* prev = l == 0 ? x_.data() : h_[l - 1].data();
      gemm::Epilogue acc;
      if (!first) {
        acc.kind = gemm::EpilogueKind::residual;
        acc.residual = dw_[l].data();
      }
      dw_gemm_.run(dz_t_.data(), prev, dw_[l].data(), acc, workspace_.data(), stream());
      if (l == 0) break;
      gemm::Epilogue e;
      e.kind = gemm::EpilogueKind::dgelu_erf;
      e.aux = z_[l - 1].data();
      e.aux_t = dz_t_.data();
      e.column_sums = db_sum + (l - 1) * std::size_t(p.dim);
      dh_gemm_.run(dz_[cur].data(), w_[l].data(), dz_[1 - cur].data(), e, workspace_.data(),
                   stream());
      cur = 1 - cur;
    }
  }

  int sms_;
  Gemm forward_gemm_, dw_gemm_, dh_gemm_;
  Bytes x_, db_, dz_t_, workspace_;
  Bytes dz_[2];
  bench::DeviceBuffer<float> db_sum_;
  std::vector<Bytes> w_, b_, dw_, h_, z_;
};

// --matmul: C = A B, row-major, one GEMM on the engine: bf16 on its tensor-core path (its
// automatic plan), fp32 on its SGEMMs (the op suite's fp32 rule: the 128 x 256 tile where its
// tiles make two waves of the SMs, else 128 x 128).
class OwnMatmulInstance final : public MatmulInstance {
 public:
  OwnMatmulInstance(const MatmulProblem& p, const MatmulData& d) : p_(p), timer_(stream_.get()) {
    const int sms = sm_count();
    if (fp32()) {
      sshape_.m = sshape_.n = sshape_.k = p.n;
      const std::int64_t wide_tiles = (p.n + 127) / 128 * ((p.n + 255) / 256);
      splan_ = gemm::sgemm_plan(sshape_, wide_tiles >= 2 * sms ? 18 : 12, sms);
    } else {
      shape_.m = shape_.n = shape_.k = p.n;
      plan_ = gemm::gemm_auto_plan(shape_, sms);
    }
    for (const auto* v : {&d.a, &d.b}) {
      const std::vector<unsigned char> bytes = bench::to_storage_bytes(*v, p.dtype);
      in_.emplace_back(bytes.size());
      in_.back().upload_async(bytes.data(), stream_.get());
      stream_.synchronize();
    }
    c_ = Bytes(in_[0].bytes());
    const std::size_t ws = fp32() ? gemm::sgemm_workspace_bytes(sshape_, splan_)
                                  : gemm::gemm_workspace_bytes(shape_, plan_);
    if (ws > 0) workspace_ = Bytes(ws);
  }
  void compile() override {}
  void poison_output() override { c_.fill_bytes_async(0xFF, stream_.get()); }
  void run() override {
    if (fp32())
      gemm::sgemm(sshape_, splan_, reinterpret_cast<const float*>(in_[0].data()),
                  reinterpret_cast<const float*>(in_[1].data()),
                  reinterpret_cast<float*>(c_.data()), gemm::Epilogue{}, workspace_.data(),
                  stream_.get());
    else
      gemm::gemm_sm90(bench::MmaDtype::bf16, shape_, plan_, in_[0].data(), in_[1].data(), c_.data(),
                      gemm::Epilogue{}, workspace_.data(), stream_.get());
  }
  void sync() override { stream_.synchronize(); }
  std::vector<double> read_elements(const std::vector<std::int64_t>& index) override {
    std::vector<unsigned char> bytes(c_.bytes());
    c_.download_async(bytes.data(), stream_.get());
    stream_.synchronize();
    const std::size_t size = bench::storage_bytes(p_.dtype);
    std::vector<double> out;
    for (const auto i : index) {
      float v = 0;
      bench::from_storage_bytes(bytes.data() + std::size_t(i) * size, 1, p_.dtype, &v);
      out.push_back(v);
    }
    return out;
  }
  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }
  std::string algorithm() const override {
    if (fp32()) return "our strict-FP32 SGEMM (CUDA cores), " + gemm::sgemm_plan_name(splan_);
    return "our wgmma GEMM engine (sm_90a), " + gemm::gemm_plan_name(plan_);
  }

 private:
  bool fp32() const { return p_.dtype == DataType::fp32; }
  MatmulProblem p_;
  gemm::GemmShape shape_;
  gemm::GemmPlan plan_;
  gemm::SgemmShape sshape_;
  gemm::SgemmPlan splan_;
  bench::Stream stream_;
  bench::CudaEventTimer timer_;
  std::vector<Bytes> in_;
  Bytes c_, workspace_;
};

// Empty when the engine runs bf16 GEMMs of these sizes here, else why not.
std::string engine_unsupported(DataType dt, std::int64_t n, std::int64_t k) {
  if (dt != DataType::bf16)
    return "own_cuda runs bf16 on our tensor-core GEMM engine and fp32 on its SGEMMs; tf32 is "
           "not written";
  if (const std::string why = gemm::gemm_sm90_unusable_reason(); !why.empty()) return why;
  if (n % 8 != 0 || k % 8 != 0)
    return "the engine's tensor copies need rows of whole 16-byte units: dim and batch_size "
           "multiples of 8";
  return "";
}

class OwnBackend final : public Backend {
 public:
  std::string name() const override { return "own_cuda"; }
  std::string device() const override { return "cuda"; }
  std::string library_version() const override { return bench::own_kernels_version(); }
  Support available() const override {
    const bench::CudaAvailability a = bench::cuda_device_available();
    return a.ok ? Support::yes() : Support::no(a.reason);
  }
  Gelu gelu() const override { return Gelu::erf; }
  std::string profiler() const override { return "cupti"; }
  Support check_support(const MlpProblem& p) const override {
    // dim: n and k of every GEMM; batch_size: the weight gradients' k.
    const std::string why = p.dtype == DataType::fp32
                                ? cuda::sgemm_step_unsupported(p)
                                : engine_unsupported(p.dtype, p.dim, p.batch_size);
    return why.empty() ? Support::yes() : Support::no(why);
  }
  std::unique_ptr<Instance> prepare(const MlpProblem& p, const MlpData& data) const override {
    if (p.dtype == DataType::fp32) return cuda::make_sgemm_step(p, data, sm_count());
    return std::make_unique<OwnInstance>(p, data);
  }
  Support check_matmul_support(const MatmulProblem& p) const override {
    gemm::SgemmShape s;
    s.m = s.n = s.k = p.n;
    const std::string why = p.dtype == DataType::fp32
                                ? gemm::sgemm_unsupported_reason(s, gemm::EpilogueKind::identity)
                                : engine_unsupported(p.dtype, p.n, p.n);
    return why.empty() ? Support::yes() : Support::no(why);
  }
  std::unique_ptr<MatmulInstance> prepare_matmul(const MatmulProblem& p,
                                                 const MatmulData& data) const override {
    return std::make_unique<OwnMatmulInstance>(p, data);
  }
};

}  // namespace

std::unique_ptr<Backend> make_own_cuda_backend() {
  return std::make_unique<OwnBackend>();
}

}  // namespace mlp
