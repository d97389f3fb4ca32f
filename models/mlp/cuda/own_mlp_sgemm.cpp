// own_cuda's fp32 step (own_mlp_sgemm.hpp): run_mlp's step in strict FP32 on the GEMM engine's
// SGEMMs on CUDA cores (core/cuda/gemm/sgemm.hpp: no TF32, as PyTorch's default fp32 matmul),
// GeLU erf. Every tensor row-major as in PyTorch: x, h, z [batch][dim], W [out][in]. Per layer l
// (B = batch, D = dim):
//   forward:  h_l = gelu(h_{l-1} W_l^T + b_l), z_l = the pre-activation: one GEMM, m B, n D, k D,
//             B operand W_l read K-major, the bias_gelu_erf_aux epilogue.
//   loss:     the sum of h_{L-1} (its mean is the loss; step_kernels.cu).
//   backward, last layer: dz_{L-1} = gelu'(z_{L-1}) / (B D) and its column sums (db), one kernel.
//   backward, layer l: dW_l (+)= dz_l^T h_{l-1}: one GEMM, m D, n D, k B, A = dz_l read M-major
//             (no transposed copy), the identity epilogue in the call's first step, then the
//             residual epilogue on dW_l itself; then for l > 0 dz_{l-1} = (dz_l W_l) *
//             gelu'(z_{l-1}): one GEMM, m B, n D, k D, the dgelu_erf epilogue, which adds its
//             column sums to db_{l-1}.
//   Bias gradients: FP32 sums over the call's steps (atomic adds: their order, and so the last
//   bits, vary between runs).
// Plans (struct Sgemm's rule): 64 x 64 tiles split to fill the SMs for long k, else the 32 x 32
// tile, split-K for the few-block, long-k GEMMs. A call
// (memset of the bias gradients, then num_steps steps) is captured once into a CUDA graph and
// replayed (graph_step.hpp).
#include "models/mlp/cuda/own_mlp_sgemm.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/gemm/sgemm.hpp"
#include "models/mlp/cuda/graph_step.hpp"
#include "models/mlp/cuda/step_kernels.hpp"

namespace mlp::cuda {
namespace {

namespace gemm = bench::gemm;

// MYCONV_OWN_MLP_SGEMM=TILE[:SPLITS] forces the tile (64 or 32) and the split count of every
// GEMM of the step, TILE[:SPLITS],TILE[:SPLITS],TILE[:SPLITS] those of the forward, dX and dW
// GEMMs in turn (to time them side by side); by default the rule below. role: 0 forward, 1 dX,
// 2 dW.
struct Forced {
  int tile = 0, splits = 1;  // tile 0: the rule
};
Forced forced_sgemm(int role) {
  Forced f;
  const char* v = std::getenv("MYCONV_OWN_MLP_SGEMM");
  if (!v) return f;
  std::string spec = v;
  if (spec.find(',') != std::string::npos) {
    for (int r = 0; r < role && spec.find(',') != std::string::npos; ++r)
      spec = spec.substr(spec.find(',') + 1);
    spec = spec.substr(0, spec.find(','));
  }
  int tile = 0, splits = 1;
  const int n = std::sscanf(spec.c_str(), "%d:%d", &tile, &splits);
  if (n >= 1 && (tile == 64 || tile == 32)) f.tile = tile;
  if (n == 2 && splits >= 1) f.splits = splits;
  return f;
}

// One GEMM of the step: its shape and plan. The rule, from the step's times with each GEMM's
// tile and split count forced on an H200 (results/h200/20261128_mlp_own_cuda_fp32/):
//   - k >= 1024 with 64 x 64 tiles fewer than the SMs but a quarter of them or more (the
//     forward and dX GEMMs of dim 1024 and 1280 at batch 256): the 64 x 64 tile, split-K with
//     the split count s (1-4, as measured) that minimizes ceil(tiles s / SMs) ceil(slices / s), the
//     waves of blocks times each block's slices: at dim 1280 3 splits (240 blocks) took 0.87 of
//     libtorch_graph's time, 2 splits (160 blocks: 28 SMs with two) 1.04, the 32 x 32 tile
//     without splits 1.07; at dim 1024 2 splits 1.00-1.01, 3 splits 1.05;
//   - else the 32 x 32 tile (2 warps a block, up to 8 blocks an SM; the 64 x 64 tile without
//     splits took 1.03-1.73x its time at the study sizes; kept for GEMMs of 4 blocks an SM or
//     more), split where its blocks fill at most half the SMs and k >= 512 (the weight gradient
//     of a large batch: 64 blocks with k 1280 at dim 256), enough splits for two blocks an SM,
//     each 8 slices of 16 or more, at most 8. Splitting the short-k GEMMs too (k = 256) made
//     the step 1.16-1.35x slower: each split adds a second kernel.
struct Sgemm {
  gemm::SgemmShape shape;
  gemm::SgemmPlan plan;
  Sgemm(std::int64_t m, std::int64_t n, std::int64_t k, bool a_m_major, bool b_k_major, int role,
        int sms) {
    shape.m = m;
    shape.n = n;
    shape.k = k;
    shape.a_m_major = a_m_major;
    shape.b_k_major = b_k_major;
    const Forced f = forced_sgemm(role);
    const std::int64_t tiles64 = (m + 63) / 64 * ((n + 63) / 64);
    const std::int64_t tiles32 = (m + 31) / 32 * ((n + 31) / 32);
    const std::int64_t slices = (k + 15) / 16;
    const bool wide_split = k >= 1024 && tiles64 < sms && 4 * tiles64 >= sms;
    const int tile = f.tile ? f.tile : (wide_split || tiles64 >= 4 * sms ? 64 : 32);
    int splits = f.splits;
    if (!f.tile && wide_split) {
      std::int64_t best = -1;
      for (int s = 1; s <= 4; ++s) {
        const std::int64_t cost = (tiles64 * s + sms - 1) / sms * ((slices + s - 1) / s);
        if (best < 0 || cost < best) best = cost, splits = s;
      }
    } else if (!f.tile && tile == 32 && 2 * tiles32 <= sms && k >= 512) {
      const std::int64_t want = (2 * sms + tiles32 - 1) / tiles32;
      splits = int(std::max<std::int64_t>(1, std::min<std::int64_t>({want, k / 128, 8})));
    }
    plan = gemm::sgemm_plan(shape, tile, sms, 1, splits);
  }
  std::size_t workspace_bytes() const { return gemm::sgemm_workspace_bytes(shape, plan); }
  void run(const void* a, const void* b, void* c, const gemm::Epilogue& e, void* workspace,
           cudaStream_t s) const {
    gemm::sgemm(shape, plan, static_cast<const float*>(a), static_cast<const float*>(b),
                static_cast<float*>(c), e, workspace, s);
  }
};

class SgemmInstance final : public GraphStepInstance {
 public:
  SgemmInstance(const MlpProblem& p, const MlpData& data, int sms)
      : GraphStepInstance(p, "own_cuda"),
        forward_gemm_(p.batch_size, p.dim, p.dim, false, true, 0, sms),
        dw_gemm_(p.dim, p.dim, p.batch_size, true, false, 2, sms),
        dh_gemm_(p.batch_size, p.dim, p.dim, false, false, 1, sms) {
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
    db_ = bench::DeviceBuffer<float>(std::size_t(L * D));
    dz_[0] = Bytes(act);
    dz_[1] = Bytes(act);
    const std::size_t ws = std::max(
        {forward_gemm_.workspace_bytes(), dw_gemm_.workspace_bytes(), dh_gemm_.workspace_bytes()});
    if (ws > 0) workspace_ = Bytes(ws);
  }

  void poison_output() override {
    for (auto& g : dw_) g.fill_bytes_async(0xFF, stream());
    CUDA_CHECK(cudaMemsetAsync(db_.data(), 0xFF, db_.bytes(), stream()));
    CUDA_CHECK(cudaMemsetAsync(loss_sum(), 0xFF, sizeof(float), stream()));
  }
  std::vector<std::vector<float>> gradients() override {
    const std::size_t D = std::size_t(problem().dim);
    std::vector<float> db(db_.size());
    CUDA_CHECK(
        cudaMemcpyAsync(db.data(), db_.data(), db_.bytes(), cudaMemcpyDeviceToHost, stream()));
    CUDA_CHECK(cudaStreamSynchronize(stream()));
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
    std::int64_t n = std::int64_t(x_.bytes() + db_.bytes() + dz_[0].bytes() * 2 +
                                  workspace_.bytes() + sizeof(float));
    for (const auto* v : {&w_, &b_, &dw_, &h_, &z_})
      for (const auto& buf : *v) n += std::int64_t(buf.bytes());
    return n;
  }
  std::string algorithm() const override {
    return "CUDA graph replay of our strict-FP32 SGEMMs (CUDA cores), forward bias+GELU(erf) "
           "epilogue keeping the pre-activation, backward dGELU epilogue with the bias gradient; "
           "forward " +
           gemm::sgemm_plan_name(forward_gemm_.plan) + "; dX " +
           gemm::sgemm_plan_name(dh_gemm_.plan) + "; dW " + gemm::sgemm_plan_name(dw_gemm_.plan);
  }
  nlohmann::ordered_json extra() const override {
    return {{"gelu", "erf"},
            {"parameters_dtype", "fp32"},
            {"math", "strict FP32 FMAs on CUDA cores (no TF32)"},
            {"bias_gradient", "FP32 sums over the call's steps (atomic adds)"},
            {"launch", "one CUDA graph of the whole call (captured in compile()), replayed"},
            {"compile_includes", "one warm-up call, the graph captures"}};
  }

 private:
  void call() override {
    const MlpProblem& p = problem();
    CUDA_CHECK(cudaMemsetAsync(db_.data(), 0, db_.bytes(), stream()));
    for (std::int64_t s = 0; s < p.num_steps; ++s) {
      forward();
      backward(s == 0);
    }
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
    sum_to(in, false, problem().batch_size * problem().dim, loss_sum(), stream());
  }

  void backward(bool first) {
    const MlpProblem& p = problem();
    const std::size_t L = w_.size();
    float* const db = db_.data();
    loss_backward(z_[L - 1].data(), false, p.batch_size, p.dim, dz_[0].data(), nullptr,
                  db + (L - 1) * std::size_t(p.dim), stream());
    int cur = 0;
    for (std::size_t l = L; l-- > 0;) {
      const void* prev = l == 0 ? x_.data() : h_[l - 1].data();
      gemm::Epilogue acc;
      if (!first) {
        acc.kind = gemm::EpilogueKind::residual;
        acc.residual = dw_[l].data();
      }
      dw_gemm_.run(dz_[cur].data(), prev, dw_[l].data(), acc, workspace_.data(), stream());
      if (l == 0) break;
      gemm::Epilogue e;
      e.kind = gemm::EpilogueKind::dgelu_erf;
      e.aux = z_[l - 1].data();
      e.column_sums = db + (l - 1) * std::size_t(p.dim);
      dh_gemm_.run(dz_[cur].data(), w_[l].data(), dz_[1 - cur].data(), e, workspace_.data(),
                   stream());
      cur = 1 - cur;
    }
  }

  Sgemm forward_gemm_, dw_gemm_, dh_gemm_;
  Bytes x_, workspace_;
  Bytes dz_[2];
  bench::DeviceBuffer<float> db_;
  std::vector<Bytes> w_, b_, dw_, h_, z_;
};

}  // namespace

std::string sgemm_step_unsupported(const MlpProblem& p) {
  gemm::SgemmShape s;
  s.m = p.batch_size;
  s.n = s.k = p.dim;
  s.b_k_major = true;
  std::string why = gemm::sgemm_unsupported_reason(s, gemm::EpilogueKind::bias_gelu_erf_aux);
  if (why.empty()) {
    s.m = s.n = p.dim;
    s.k = p.batch_size;
    s.b_k_major = false;
    s.a_m_major = true;
    why = gemm::sgemm_unsupported_reason(s, gemm::EpilogueKind::residual);
  }
  return why;
}

std::unique_ptr<Instance> make_sgemm_step(const MlpProblem& p, const MlpData& data, int sm_count) {
  return std::make_unique<SgemmInstance>(p, data, sm_count);
}

}  // namespace mlp::cuda
