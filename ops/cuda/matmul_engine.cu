// The op suite's matmul on the Hopper GEMM engine: variants 4-9 (ops/cuda/matmul_engine.hpp).
#include "ops/cuda/matmul_engine.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/cuda/gemm/gemm.hpp"
#include "ops/cuda/launch.cuh"

namespace ops::cuda {
namespace {

bench::gemm::GemmShape gemm_shape(const Problem& p) {
  return {p.b, p.m, p.n, p.k};
}

// Variant 4's plan (the engine's automatic choice), or with one choice forced (variants 5 to 9).
bench::gemm::GemmPlan engine_plan(const Problem& p, int variant) {
  const bench::gemm::GemmShape s = gemm_shape(p);
  const int sms = sm_count();
  switch (variant) {
    case 5: {  // split-K forced: the rule's count, else enough splits to fill the SMs
      const bench::gemm::GemmPlan rule = bench::gemm::gemm_plan(s, sms);
      if (rule.splits > 1) return rule;
      const std::int64_t fill = (sms + rule.tiles - 1) / rule.tiles;
      return bench::gemm::gemm_plan(
          s, sms, rule.bn,
          int(std::min<std::int64_t>(std::max<std::int64_t>(fill, 2), bench::gemm::kMaxSplits)));
    }
    case 6:
      return bench::gemm::gemm_plan(s, sms, 0, 1);
    case 7:
      return bench::gemm::gemm_plan(s, sms, 128);
    case 8:
      return bench::gemm::gemm_plan(s, sms, 256);
    case 9:
      return bench::gemm::gemm_plan(s, sms, 128, 0, bench::gemm::GemmSchedule::pingpong);
    default:
      return bench::gemm::gemm_auto_plan(s, sms);
  }
}

bench::MmaDtype engine_dtype(DataType dt) {
  return dt == DataType::fp16 ? bench::MmaDtype::fp16 : bench::MmaDtype::bf16;
}

}  // namespace

bool engine_runs(const Problem& p) {
  return (p.dtype == DataType::fp16 || p.dtype == DataType::bf16) &&
         bench::gemm::gemm_unsupported_reason(gemm_shape(p), 2).empty() &&
         bench::gemm::gemm_sm90_unusable_reason().empty();
}

std::size_t engine_workspace_bytes(const Problem& p, int variant) {
  return engine_runs(p) ? bench::gemm::gemm_workspace_bytes(gemm_shape(p), engine_plan(p, variant))
                        : 0;
}

void engine_launch(const OpArgs& args, int variant) {
  const Problem& p = *args.p;
  const bench::gemm::GemmPlan plan = engine_plan(p, variant);
  if (plan.splits > 1 && !args.workspace)
    throw std::logic_error("matmul: split-K needs the workspace (workspace_bytes)");
  bench::gemm::gemm_sm90(engine_dtype(p.dtype), gemm_shape(p), plan, args.inputs[0],
                         args.inputs[1], args.output, bench::gemm::Epilogue{}, args.workspace,
                         args.stream);
}

std::string engine_describe(const Problem& p, int variant) {
  return "v" + std::to_string(variant) + " wgmma sm90a " + bench::to_string(p.dtype) + " " +
         bench::gemm::gemm_plan_name(engine_plan(p, variant)) +
         ", TMA 128B swizzle, 1 producer + 2 consumer warpgroups, grouped tile order";
}

}  // namespace ops::cuda
