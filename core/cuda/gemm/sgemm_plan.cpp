// The GEMM engine's SGEMMs, host side (core/cuda/gemm/sgemm.hpp): the plan of a configuration,
// its workspace, what the build takes and the plan's name. The kernels and the launch:
// sgemm.cu.
#include "core/cuda/gemm/sgemm.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/cuda/cuda_info.hpp"
#include "core/cuda/mma_index.hpp"  // choose_split_k

namespace bench::gemm {

SgemmPlan sgemm_plan(const SgemmShape& s, int id, int sm_count, int min_slices, int splits) {
  const int index = sgemm_index(id);
  if (index < 0) throw std::logic_error("sgemm: no configuration " + std::to_string(id));
  const SgemmConfig& cfg = kSgemmConfigs[index];
  SgemmPlan plan;
  plan.config = id;
  plan.tiles = (s.m + cfg.bm - 1) / cfg.bm * ((s.n + cfg.bn - 1) / cfg.bn);
  const int slices = int((s.k + cfg.bk - 1) / cfg.bk);
  if (splits > 0) {
    plan.splits = std::max(1, std::min({splits, slices, 65535}));
  } else {
    plan.splits = bench::choose_split_k(plan.tiles * s.batch, slices, 1, cfg.min_blocks * sm_count,
                                        min_slices, 16);
  }
  return plan;
}

std::size_t sgemm_workspace_bytes(const SgemmShape& s, const SgemmPlan& plan) {
  return plan.splits > 1 ? std::size_t(plan.splits) * std::size_t(s.batch * s.m * s.n) * 4 : 0;
}

std::string sgemm_unsupported_reason(const SgemmShape& s, EpilogueKind e) {
  if (s.batch < 1 || s.m < 1 || s.n < 1 || s.k < 1)
    return "sgemm: batch, m, n and k must be positive";
  constexpr std::int64_t kMax = std::numeric_limits<int>::max() - 1024;
  if (s.m > kMax || s.n > kMax || s.k > kMax || (s.m + 31) / 32 * ((s.n + 31) / 32) > kMax)
    return "sgemm: m, n, k and the tile count must fit in int";
  if (s.a_m_major && s.b_k_major)
    return "sgemm: an M-major A with a K-major B is not built (the MLP's step needs neither)";
  if (!bench::cuda_compute_capability_at_least(8))
    return "sgemm: needs a CUDA device of compute capability 8.0 or newer";
  (void)e;  // every kind on every layout built
  return "";
}

std::string sgemm_plan_name(const SgemmPlan& plan) {
  const int index = sgemm_index(plan.config);
  if (index < 0) return "no SGEMM configuration " + std::to_string(plan.config);
  const SgemmConfig& c = kSgemmConfigs[index];
  const int warps = (c.bm / c.wm) * (c.bn / c.wn);
  const int tm = c.wm / c.lane_rows, tn = c.wn * c.lane_rows / 32;
  return "SIMT SGEMM " + std::to_string(c.bm) + "x" + std::to_string(c.bn) + "x" +
         std::to_string(c.bk) + ", " + std::to_string(warps) + " warps of " + std::to_string(c.wm) +
         "x" + std::to_string(c.wn) + " (" + std::to_string(tm) + "x" + std::to_string(tn) +
         " a thread), cp.async " + std::to_string(c.stages) + " stages, " +
         (c.frag_pipeline ? "fragments double-buffered, " : "") + std::to_string(c.min_blocks) +
         " blocks/SM" + (plan.splits > 1 ? ", split-K " + std::to_string(plan.splits) : "");
}

}  // namespace bench::gemm
