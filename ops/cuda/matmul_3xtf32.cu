// Variant 15 of the op suite's matmul (ops/cuda/matmul_3xtf32.hpp): fp32 with FP32 accuracy on
// tensor cores, CUTLASS's 3xTF32 (cutlass/gemm/warp/mma_tensor_op_fast_f32.h) as a split and one
// tf32 GEMM:
//   1. split kernels write A' [b][m][3 kp] = [A_big | A_big | A_small] and B' = [B_big | B_small |
//      B_big] along k (ops/cuda/tf32_split.hpp: big = tf32_rna(x), small = tf32_rna(x - big),
//      zeros past k up to kp, k rounded up to 8): B' K-major [b][n][3 kp] for the engine (32x32
//      tiles transposed through shared memory, as variant 4's tf32 transpose), row-major
//      [b][3 kp][n] for variant 3.
//   2. one tf32 GEMM of depth 3 kp, C = A' B' = A_big B_big + A_big B_small + A_small B_big in one
//      FP32 accumulator: the Hopper engine with variant 4's plan (gemm_auto_plan) where it runs
//      (sm_90, n a multiple of 8), else variant 3 (mma.sync m16n8k8 tf32, sm_80 or newer; its
//      in-place tf32 rounding leaves the exact tf32 values as they are). The operands are exact
//      tf32, so the engine's truncating read of FP32 operands loses nothing.
// Error: the CPU emulation of this sum (tests/ops/test_tf32_split.cpp, m = n = 8, k = 4096, FP32
// accumulation in k' order, the suite's random inputs) has a relative L2 error of 2.7e-6 against
// the float64 reference, plain FP32 9.9e-7, one tf32 product (1xTF32) 2.7e-4; all but 1xTF32's
// within the fp32 tolerance. The tensor cores' own accumulation is not emulated: the GPU test
// (tests/ops/test_matmul_fp32.cpp) records the error on the device.
// Cost: 3x the tensor-core work of tf32, and the split's traffic (reads A and B, writes 3x each)
// in the workspace: b (m + n) 3 kp floats.
//
// Build: part of ops_cuda (the engine's part needs the sm_90a build of core/cuda/gemm/).
// Registers and spills of the split kernels (sm_90, CUDA 13.0: no spills; split_a 18, split_b_rows
// 26, split_b_k_major 32):
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c ops/cuda/matmul_3xtf32.cu -o /dev/null
// Run (on a GPU), beside cuBLAS's FP32 GEMM:
//   build/experiments/myops --backend own_cuda --backend cublaslt --variant 15
//   --problem matmul:m4096n4096k4096:fp32
#include "ops/cuda/matmul_3xtf32.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/gemm/gemm.hpp"
#include "ops/cuda/launch.cuh"
#include "ops/cuda/matmul_engine.hpp"
#include "ops/cuda/matmul_plan.hpp"
#include "ops/cuda/tf32_split.hpp"

namespace ops::cuda {
namespace {

// The tf32 problem of the split operands: depth 3 kp.
Problem split_problem(const Problem& p) {
  Problem s = p;
  s.dtype = DataType::tf32;
  s.k = 3 * tf32x3_padded_k(p.k);
  return s;
}

// The engine's view of it: B' K-major, 4-byte values.
bench::gemm::GemmShape split_shape(const Problem& p) {
  bench::gemm::GemmShape s{p.b, p.m, p.n, 3 * tf32x3_padded_k(p.k)};
  s.b_k_major = true;
  s.element_bytes = 4;
  return s;
}

// engine_runs takes the split problem where its tf32 transpose would (a grid of 3 kp / 32 rows
// of tiles), which bounds split_b_k_major's grid (kp / 32) too.
bool on_engine(const Problem& p) {
  return engine_runs(split_problem(p));
}

bench::gemm::GemmPlan engine_plan(const Problem& p) {
  return bench::gemm::gemm_auto_plan(split_shape(p), sm_count());
}

std::size_t split_bytes(const Problem& p) {
  return std::size_t(p.b) * std::size_t(p.m + p.n) * std::size_t(3 * tf32x3_padded_k(p.k)) *
         sizeof(float);
}

std::size_t gemm_bytes(const Problem& p) {
  if (on_engine(p)) return bench::gemm::gemm_workspace_bytes(split_shape(p), engine_plan(p));
  const Problem s = split_problem(p);
  return partial_bytes(s, plan_of(s, 3));
}

constexpr int kThreads = 256;

// A'[r][t kp + kk] = the A term of third t of A[r][kk] (r over the b m rows; zeros past k).
__global__ void __launch_bounds__(kThreads)
    split_a_kernel(const float* __restrict__ a, float* __restrict__ ap, std::int64_t rows, int k,
                   int kp) {
  const int kk = int(blockIdx.x) * kThreads + int(threadIdx.x);
  if (kk >= kp) return;
  for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const Tf32Pair x = tf32_split(kk < k ? a[r * k + kk] : 0.0f);
    float* o = ap + r * 3 * kp + kk;
#pragma unroll
    for (int t = 0; t < 3; ++t) o[std::int64_t(t) * kp] = tf32x3_a_term(x, t);
  }
}

// B' row-major: B'[z][t kp + kk][j] = the B term of third t of B[z][kk][j] (row r = z kp + kk).
__global__ void __launch_bounds__(kThreads)
    split_b_rows_kernel(const float* __restrict__ b, float* __restrict__ bp, std::int64_t rows,
                        int k, int kp, int n) {
  const int j = int(blockIdx.x) * kThreads + int(threadIdx.x);
  if (j >= n) return;
  for (std::int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const std::int64_t z = r / kp;
    const int kk = int(r - z * kp);
    const Tf32Pair x = tf32_split(kk < k ? b[(z * k + kk) * n + j] : 0.0f);
    float* o = bp + (z * 3 * kp + kk) * n + j;
#pragma unroll
    for (int t = 0; t < 3; ++t) o[std::int64_t(t) * kp * n] = tf32x3_b_term(x, t);
  }
}

// B' K-major: B'[z][j][t kp + kk] = the B term of third t of B[z][kk][j]: 32x32 tiles through
// shared memory (a column of padding against bank conflicts), read along B's rows and written
// along B''s.
constexpr int kTile = 32, kTileRows = 8;
__global__ void __launch_bounds__(kTile* kTileRows)
    split_b_k_major_kernel(const float* __restrict__ b, float* __restrict__ bt, int k, int kp,
                           int n) {
  __shared__ float big[kTile][kTile + 1], small[kTile][kTile + 1];
  const std::int64_t z = blockIdx.z;
  const int n0 = int(blockIdx.x) * kTile, k0 = int(blockIdx.y) * kTile;
  for (int i = int(threadIdx.y); i < kTile; i += kTileRows) {
    const int kk = k0 + i, j = n0 + int(threadIdx.x);
    const Tf32Pair x = tf32_split(kk < k && j < n ? b[(z * k + kk) * n + j] : 0.0f);
    big[i][threadIdx.x] = x.big;
    small[i][threadIdx.x] = x.small;
  }
  __syncthreads();
  for (int i = int(threadIdx.y); i < kTile; i += kTileRows) {
    const int j = n0 + i, kk = k0 + int(threadIdx.x);
    if (j >= n || kk >= kp) continue;
    const Tf32Pair x{big[threadIdx.x][i], small[threadIdx.x][i]};
    float* o = bt + (z * n + j) * 3 * kp + kk;
#pragma unroll
    for (int t = 0; t < 3; ++t) o[std::int64_t(t) * kp] = tf32x3_b_term(x, t);
  }
}

}  // namespace

bool tf32x3_runs(const Problem& p) {
  if (p.op != Op::matmul || p.dtype != DataType::fp32 || !device_sm80()) return false;
  if (on_engine(p)) return true;
  const std::vector<int> v = matmul_family().variants(split_problem(p));
  return std::find(v.begin(), v.end(), 3) != v.end();
}

std::size_t tf32x3_workspace_bytes(const Problem& p) {
  return tf32x3_runs(p) ? split_bytes(p) + gemm_bytes(p) : 0;
}

void tf32x3_launch(const OpArgs& args) {
  const Problem& p = *args.p;
  if (!args.workspace) throw std::logic_error("matmul: 3xTF32 needs the workspace");
  const int k = int(p.k), kp = int(tf32x3_padded_k(p.k)), n = int(p.n);
  float* ap = static_cast<float*>(args.workspace);
  float* bp = ap + std::size_t(p.b) * std::size_t(p.m) * std::size_t(3 * kp);
  void* gemm_workspace =
      gemm_bytes(p) > 0
          ? static_cast<void*>(reinterpret_cast<unsigned char*>(args.workspace) + split_bytes(p))
          : nullptr;
  const auto* a = static_cast<const float*>(args.inputs[0]);
  const auto* b = static_cast<const float*>(args.inputs[1]);
  const std::int64_t a_rows = p.b * p.m;
  split_a_kernel<<<dim3(unsigned((kp + kThreads - 1) / kThreads),
                        unsigned(std::min<std::int64_t>(a_rows, 65535))),
                   kThreads, 0, args.stream>>>(a, ap, a_rows, k, kp);
  CUDA_CHECK_LAST_LAUNCH();
  if (on_engine(p)) {
    const dim3 grid(unsigned((n + kTile - 1) / kTile), unsigned((kp + kTile - 1) / kTile),
                    unsigned(p.b));
    split_b_k_major_kernel<<<grid, dim3(kTile, kTileRows), 0, args.stream>>>(b, bp, k, kp, n);
    CUDA_CHECK_LAST_LAUNCH();
    bench::gemm::gemm_sm90(bench::MmaDtype::tf32, split_shape(p), engine_plan(p), ap, bp,
                           args.output, bench::gemm::Epilogue{}, gemm_workspace, args.stream);
    return;
  }
  const std::int64_t b_rows = p.b * kp;
  split_b_rows_kernel<<<dim3(unsigned((n + kThreads - 1) / kThreads),
                             unsigned(std::min<std::int64_t>(b_rows, 65535))),
                        kThreads, 0, args.stream>>>(b, bp, b_rows, k, kp, n);
  CUDA_CHECK_LAST_LAUNCH();
  const Problem s = split_problem(p);
  OpArgs inner = args;
  inner.p = &s;
  inner.inputs = {ap, bp};
  inner.workspace = gemm_workspace;
  matmul_launch(inner, 3);
}

std::string tf32x3_describe(const Problem& p) {
  const std::int64_t kp = tf32x3_padded_k(p.k);
  const std::string split =
      "v15 3xTF32: A' = [A_big|A_big|A_small], B' = [B_big|B_small|B_big] "
      "(round to nearest tf32) of depth 3x" +
      std::to_string(kp) + ", then ";
  if (on_engine(p))
    return split + "wgmma sm90a tf32 " + bench::gemm::gemm_plan_name(engine_plan(p)) +
           " (B' K-major)";
  return split + matmul_family().describe(split_problem(p), 3);
}

}  // namespace ops::cuda
