// The op suite's matmul on the Hopper GEMM engine: variants 4-9 (ops/cuda/matmul_engine.hpp).
#include "ops/cuda/matmul_engine.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/cuda/gemm/gemm.hpp"
#include "core/cuda/mma.cuh"  // round_to_tf32
#include "ops/cuda/launch.cuh"

namespace ops::cuda {
namespace {

bench::gemm::GemmShape gemm_shape(const Problem& p) {
  bench::gemm::GemmShape s{p.b, p.m, p.n, p.k};
  if (p.dtype == DataType::tf32) {  // the engine reads the transposed copy of B
    s.b_k_major = true;
    s.element_bytes = 4;
  }
  return s;
}

// tf32's transposed B: b x n x k floats (k a multiple of 8: the partials after it stay 16-byte
// aligned).
std::size_t transposed_b_bytes(const Problem& p) {
  return p.dtype == DataType::tf32
             ? std::size_t(p.b) * std::size_t(p.n) * std::size_t(p.k) * sizeof(float)
             : 0;
}

// bt[z][j][i] = tf32(b[z][i][j]) for b of k rows of n: 32 x 32 tiles through shared memory (a
// column of padding against bank conflicts), read and written along rows; round to nearest
// (wgmma would truncate the FP32 values it reads).
constexpr int kTile = 32, kTileRows = 8;
__global__ void __launch_bounds__(kTile* kTileRows)
    transpose_round_tf32(const float* __restrict__ b, float* __restrict__ bt, int k, int n) {
  __shared__ float tile[kTile][kTile + 1];
  const std::int64_t plane = std::int64_t(blockIdx.z) * k * n;
  const int n0 = int(blockIdx.x) * kTile, k0 = int(blockIdx.y) * kTile;
  for (int i = int(threadIdx.y); i < kTile; i += kTileRows) {
    const int kk = k0 + i, nn = n0 + int(threadIdx.x);
    if (kk < k && nn < n)
      tile[i][threadIdx.x] = __uint_as_float(
          bench::round_to_tf32(__float_as_uint(b[plane + std::int64_t(kk) * n + nn])));
  }
  __syncthreads();
  for (int i = int(threadIdx.y); i < kTile; i += kTileRows) {
    const int nn = n0 + i, kk = k0 + int(threadIdx.x);
    if (nn < n && kk < k) bt[plane + std::int64_t(nn) * k + kk] = tile[threadIdx.x][i];
  }
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
  return dt == DataType::fp16   ? bench::MmaDtype::fp16
         : dt == DataType::bf16 ? bench::MmaDtype::bf16
                                : bench::MmaDtype::tf32;
}

}  // namespace

bool engine_runs(const Problem& p) {
  if (p.dtype != DataType::fp16 && p.dtype != DataType::bf16 && p.dtype != DataType::tf32)
    return false;
  // tf32's transpose: a grid of n / 32 x k / 32 x b blocks (y and z at most 65535).
  if (p.dtype == DataType::tf32 && ((p.k + kTile - 1) / kTile > 65535 || p.b > 65535)) return false;
  return bench::gemm::gemm_unsupported_reason(gemm_shape(p),
                                              bench::mma_dtype_bytes(engine_dtype(p.dtype)))
             .empty() &&
         bench::gemm::gemm_sm90_unusable_reason().empty();
}

std::size_t engine_workspace_bytes(const Problem& p, int variant) {
  return engine_runs(p) ? transposed_b_bytes(p) + bench::gemm::gemm_workspace_bytes(
                                                      gemm_shape(p), engine_plan(p, variant))
                        : 0;
}

void engine_launch(const OpArgs& args, int variant) {
  const Problem& p = *args.p;
  const bench::gemm::GemmPlan plan = engine_plan(p, variant);
  const std::size_t bt_bytes = transposed_b_bytes(p);
  if ((plan.splits > 1 || bt_bytes > 0) && !args.workspace)
    throw std::logic_error("matmul: split-K and tf32 need the workspace (workspace_bytes)");
  const void* b = args.inputs[1];
  void* workspace = args.workspace;
  if (bt_bytes > 0) {
    float* bt = static_cast<float*>(args.workspace);
    const dim3 grid(unsigned((p.n + kTile - 1) / kTile), unsigned((p.k + kTile - 1) / kTile),
                    unsigned(p.b));
    transpose_round_tf32<<<grid, dim3(kTile, kTileRows), 0, args.stream>>>(
        static_cast<const float*>(args.inputs[1]), bt, int(p.k), int(p.n));
    CUDA_CHECK_LAST_LAUNCH();
    b = bt;
    workspace = plan.splits > 1 ? static_cast<unsigned char*>(args.workspace) + bt_bytes : nullptr;
  }
  bench::gemm::gemm_sm90(engine_dtype(p.dtype), gemm_shape(p), plan, args.inputs[0], b, args.output,
                         bench::gemm::Epilogue{}, workspace, args.stream);
}

std::string engine_describe(const Problem& p, int variant) {
  return "v" + std::to_string(variant) + " wgmma sm90a " + bench::to_string(p.dtype) + " " +
         bench::gemm::gemm_plan_name(engine_plan(p, variant)) +
         ", TMA 128B swizzle, 1 producer + 2 consumer warpgroups, grouped tile order" +
         (p.dtype == DataType::tf32
              ? ", B first transposed to K-major with round-to-nearest tf32 (A truncated by wgmma)"
              : "");
}

}  // namespace ops::cuda
