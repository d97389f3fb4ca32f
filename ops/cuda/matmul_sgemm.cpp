// Variants 11-14 and 16-20 of the op suite's matmul (ops/cuda/matmul_sgemm.hpp): C[b] = A[b] B[b]
// in strict FP32 on CUDA cores, row-major and contiguous, any m, n, k (no alignment beyond the
// tensors' 16 bytes), on the GEMM engine's SGEMMs (core/cuda/gemm/sgemm.cu: the kernel, its
// pipeline, registers and compile times). Variants 12 and 18 are fp32's default on sm_80+ (the
// rule and its H100 timings: matmul_plan.cpp); variant 2 (matmul.cu) stays for older devices.
// Run (on a GPU), each beside cuBLAS's FP32 GEMM in one process:
//   build/experiments/myops --backend own_cuda --backend cublaslt --variant 11
//   --problem matmul:m4096n4096k4096:fp32
#include "ops/cuda/matmul_sgemm.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/cuda/gemm/sgemm.hpp"
#include "ops/cuda/launch.cuh"

namespace ops::cuda {
namespace {

namespace gemm = bench::gemm;

gemm::SgemmShape shape_of(const Problem& p) {
  gemm::SgemmShape s;
  s.batch = p.b;
  s.m = p.m;
  s.n = p.n;
  s.k = p.k;
  return s;
}

}  // namespace

bool sgemm_runs(const Problem& p) {
  if (p.op != Op::matmul || p.dtype != DataType::fp32) return false;
  return gemm::sgemm_unsupported_reason(shape_of(p), gemm::EpilogueKind::identity).empty();
}

Plan sgemm_plan(const Problem& p, int variant) {
  const gemm::SgemmConfig& cfg = gemm::kSgemmConfigs[gemm::sgemm_index(variant)];
  const gemm::SgemmPlan g = gemm::sgemm_plan(shape_of(p), variant, sm_count());
  Plan plan;
  plan.bm = cfg.bm, plan.bn = cfg.bn, plan.slice_k = cfg.bk;
  plan.tiles = g.tiles;
  plan.splits = g.splits;
  return plan;
}

std::size_t sgemm_workspace_bytes(const Problem& p, int variant) {
  if (!sgemm_runs(p)) return 0;
  return gemm::sgemm_workspace_bytes(shape_of(p),
                                     gemm::sgemm_plan(shape_of(p), variant, sm_count()));
}

void sgemm_launch(const OpArgs& args, int variant) {
  if (!sgemm_variant(variant))
    throw std::logic_error("matmul: variant " + std::to_string(variant) + " is no SGEMM");
  const gemm::SgemmShape s = shape_of(*args.p);
  const gemm::SgemmPlan plan = gemm::sgemm_plan(s, variant, sm_count());
  if (plan.splits > 1 && !args.workspace)
    throw std::logic_error("matmul: split-K needs the workspace (workspace_bytes)");
  gemm::sgemm(s, plan, static_cast<const float*>(args.inputs[0]),
              static_cast<const float*>(args.inputs[1]), static_cast<float*>(args.output),
              gemm::Epilogue{}, args.workspace, args.stream);
}

std::string sgemm_describe(const Problem& p, int variant) {
  return "v" + std::to_string(variant) + " " +
         gemm::sgemm_plan_name(gemm::sgemm_plan(shape_of(p), variant, sm_count()));
}

}  // namespace ops::cuda
