// matmul's host side: the variants a problem runs, the plans of variants 2 and 3, workspace and
// description, and the family (ops/cuda/matmul_plan.hpp; the kernels: matmul.cu, variant 10's
// matmul_skinny.cu).
#include "ops/cuda/matmul_plan.hpp"

#include <limits>
#include <string>
#include <vector>

#include "ops/cuda/launch.cuh"
#include "ops/cuda/matmul_3xtf32.hpp"
#include "ops/cuda/matmul_engine.hpp"
#include "ops/cuda/matmul_sgemm.hpp"
#include "ops/cuda/matmul_skinny.hpp"

namespace ops::cuda {
namespace {

using bench::MmaDtype;

std::int64_t tiles_of(const Problem& p, int bm, int bn) {
  return (p.m + bm - 1) / bm * ((p.n + bn - 1) / bn);
}

// Variants 2 and 3 index m, n, k and the tiles of a batch in int (with room for a slice past k).
bool tiled_ok(const Problem& p) {
  constexpr std::int64_t kMax = std::numeric_limits<int>::max() - 1024;
  return p.m <= kMax && p.n <= kMax && p.k <= kMax && tiles_of(p, 64, 64) <= kMax;
}

std::vector<int> matmul_variants(const Problem& p) {
  if (p.op != Op::matmul) return {};
  if (!tiled_ok(p)) return {1};
  if (p.dtype == DataType::fp32) {
    // Variant 18 first where it runs (sm_80+: cp.async) and its 128x256 tiles make two waves
    // of an H100's 132 SMs, variant 12 where they would not (its 128x128 tiles, two blocks an SM),
    // else variant 2. Timed on an H100 SXM beside cuBLASLt's CUBLAS_COMPUTE_32F GEMM in one
    // process each (results/h100/20261127_gemm_fp32_simt/, --timing pure, cuBLASLt's median over
    // ours), at 4096^3, 8192^3, m3000n5000k1000, m4096n11008k4096: v18 0.893, 0.900, 0.931,
    // 0.898; v14 0.892, 0.897, 0.925, 0.894; v12 0.850, 0.859, 0.900, 0.895; v16 0.86-0.91;
    // 11, 13, 17 0.82-0.89; variant 2 0.708, 0.714, 0.748, 0.743. 3xTF32 (15) ran 1.23-2.13x
    // cuBLASLt's speed but is not strict FP32 arithmetic (three tf32 products), so it stays by
    // --variant only. No smaller shape was timed: below two waves variant 12 keeps the SMs busier.
    constexpr std::int64_t kWideTilesMin = 264;
    const std::int64_t wide_tiles = (p.m + 127) / 128 * ((p.n + 255) / 256) * p.b;
    std::vector<int> v;
    if (sgemm_runs(p)) v.push_back(wide_tiles >= kWideTilesMin ? 18 : 12);
    v.push_back(2);
    v.push_back(1);
    if (sgemm_runs(p))
      for (const bench::gemm::SgemmConfig& c : bench::gemm::kSgemmConfigs)
        if (sgemm_variant(c.id) && c.id != v.front()) v.push_back(c.id);
    if (tf32x3_runs(p)) v.push_back(kTf32x3Variant);
    return v;
  }
  std::vector<int> v =
      engine_runs(p) ? std::vector<int>{4, 3, 1, 5, 6, 7, 8, 9} : std::vector<int>{3, 1};
  // The skinny-M kernel (m <= 16) is offered last, by --variant 10 only, until measured.
  if (skinny_runs(p)) v.push_back(kSkinnyVariant);
  return v;
}

std::size_t matmul_workspace_bytes(const Problem& p, int variant) {
  if (engine_variant(variant)) return engine_workspace_bytes(p, variant);
  if (sgemm_variant(variant)) return sgemm_workspace_bytes(p, variant);
  if (variant == kTf32x3Variant) return tf32x3_workspace_bytes(p);
  return variant == 2 || variant == 3 ? partial_bytes(p, plan_of(p, variant)) : 0;
}

std::string matmul_describe(const Problem& p, int variant) {
  if (variant == 1) return "v1 naive: a thread per output, FP32 accumulation";
  if (variant == kSkinnyVariant && skinny_runs(p)) return skinny_describe(p);
  if (engine_variant(variant) && engine_runs(p)) return engine_describe(p, variant);
  if (sgemm_variant(variant) && sgemm_runs(p)) return sgemm_describe(p, variant);
  if (variant == kTf32x3Variant && tf32x3_runs(p)) return tf32x3_describe(p);
  const Plan plan = plan_of(p, variant);
  const std::string split = plan.splits > 1 ? ", split-K " + std::to_string(plan.splits) : "";
  if (variant == 2)
    return "v2 SIMT SGEMM 128x128x8, 256 threads of 8x8, register double buffering" + split;
  const std::string instr = p.dtype == DataType::tf32   ? "m16n8k8 tf32"
                            : p.dtype == DataType::fp16 ? "m16n8k16 fp16"
                                                        : "m16n8k16 bf16";
  const std::string tile = plan.bm == 128
                               ? "128x128x" + std::to_string(plan.slice_k) + ", 8 warps of 64x32"
                               : "64x64x" + std::to_string(plan.slice_k) + ", 4 warps of 32x32";
  return "v3 mma.sync " + instr + " " + tile + ", " +
         (vector_rows(p) ? "cp.async" : "register loads") + ", 4 stages" + split;
}

}  // namespace

bench::MmaDtype mma_dtype(DataType dt) {
  return dt == DataType::fp16   ? MmaDtype::fp16
         : dt == DataType::bf16 ? MmaDtype::bf16
                                : MmaDtype::tf32;
}

bool vector_rows(const Problem& p) {
  const int vec = bench::mma_vec_elements(bench::mma_dtype_bytes(mma_dtype(p.dtype)));
  return p.k % vec == 0 && p.n % vec == 0;
}

Plan plan_of(const Problem& p, int variant) {
  Plan plan;
  const int sm = sm_count();
  if (variant == 3) {
    plan.slice_k = bench::mma_slice_k(bench::mma_dtype_bytes(mma_dtype(p.dtype)));
    if (!vector_rows(p) || tiles_of(p, 128, 128) * p.b < sm) plan.bm = plan.bn = 64;
  }
  plan.tiles = tiles_of(p, plan.bm, plan.bn);
  const int slices = int((p.k + plan.slice_k - 1) / plan.slice_k);
  if (variant == 2 || plan.bm == 64)
    plan.splits = bench::choose_split_k(plan.tiles * p.b, slices, 1, 2 * sm, 8, 16);
  return plan;
}

bool matmul_searchable(const Problem& p, int variant) {
  (void)p;
  return variant != 1 && variant != kTf32x3Variant;
}

std::size_t partial_bytes(const Problem& p, const Plan& plan) {
  return plan.splits > 1 ? std::size_t(plan.splits) * std::size_t(p.b * p.m * p.n) * 4 : 0;
}

const KernelFamily& matmul_family() {
  static const KernelFamily family{matmul_variants, matmul_workspace_bytes, matmul_launch,
                                   matmul_describe};
  return family;
}

}  // namespace ops::cuda
