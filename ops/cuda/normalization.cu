// Row normalizations of the op suite over the last axis (softmax; layernorm with weight and bias;
// rmsnorm with weight; eps 1e-5; fp32, fp16, bf16): our kernel family, numbered variants side by
// side (llm.c style). The backend ops/cuda/own_cuda.cpp runs one of them (--variant N, default
// the first of variants(p)). Rows = elements / last dim; everything is computed in float and
// rounded once to the output type.
//
// Build (part of the normal build when CUDA is found):
//   cmake -S . -B build -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build build
// Registers and spills:
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c ops/cuda/normalization.cu -o /dev/null
// Run one variant (on a GPU):
//   build/experiments/myops --backend own_cuda --variant 2 --problem layernorm:4x512x896:bf16
//
// Variants:
//   1  naive: a 256-thread block per row, three passes over global memory, element loads:
//      softmax max, sum of exp(x - max), write exp(x - max) / sum; layernorm mean, sum of
//      (x - mean)^2, write; rmsnorm mean of x^2, write (two passes).
//   2  one pass: the row is read once from global memory into registers, with 128-bit loads (rows
//      whose length is not a multiple of the vector: element loads), reduced there and written
//      from there. A warp per row up to 1024 values (8 rows per 256-thread block, 8, 16 or 32
//      values per lane), a block of 128 to 1024 threads per row up to 16384 values (16 per
//      thread), 1024 threads x 32 values up to 32768; longer rows fall back to variant 1's three
//      passes in 1024-thread blocks with 128-bit loads.
// The reductions inside a row are butterflies (__shfl_xor_sync) and then shared memory across
// warps (warp_reduce.cuh), in a fixed order: results are reproducible bit for bit.
//
// layernorm statistics: neither Welford nor sum + sum of squares. Variant 2 holds the row in
// registers, so it takes the exact two-pass form of the reference at the cost of one more
// in-register reduction (no memory traffic): the mean first, then the sum of squared deviations
// from it. sum/sum-of-squares in float cancels catastrophically when |mean| >> std (var =
// E[x^2] - mean^2 loses every digit once mean^2/var ~ 2^24), and Welford's merges cost a division
// per step; the centred form has neither problem. Variant 1 (and 2's fallback) read the row a
// second time for the same centred sum. rsqrtf (about 2 ulp) for 1/sqrt(var + eps); softmax uses
// expf (accurate) and multiplies by 1/sum.
//
// Figures of a scratch harness (not myops; no run folder keeps them), over this code before its
// last edits; myops's measurements of the op suite: results/h200/20261124_ops_preset_pure/ and
// 20261124_ops_xlarge_pure/.
// Measured on an NVIDIA H200 (CUDA 13.0, sm_90), median of CUDA-graph replays, us, v1 / v2:
//               fp32 softmax  layernorm    rmsnorm      bf16 softmax  layernorm    rmsnorm
//   4x512x896   6.99 / 5.75   6.80 / 4.90  4.96 / 4.41  7.36 / 5.33   7.17 / 4.23  5.20 / 3.70
//   8192x8192   201 / 147     194 / 202    187 / 131    115 / 128     105 / 184    89 / 102
//   1024x65536  270 / 256     289 / 206    213 / 201    173 / 117     196 / 98     140 / 91
// (8192x8192 fp32 rmsnorm at 131 us moves 4.1 TB/s; 1024x65536 runs 2's three-pass fallback.)
// variants() therefore puts variant 1 first for 16-bit rows of a block per row (see there).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cuda/cuda_check.hpp"
#include "ops/cuda/kernels.hpp"
#include "ops/cuda/warp_reduce.cuh"

namespace ops::cuda {
namespace {

using detail::from_float;
using detail::kVec16;
using detail::load_vec;
using detail::MaxOp;
using detail::store_vec;
using detail::SumOp;
using detail::to_float;

constexpr float kEps = 1e-5f;  // layernorm and rmsnorm (ops/ref_ops.cpp)
constexpr std::int64_t kMaxGrid = 1 << 20;

enum class Norm { softmax, layernorm, rmsnorm };

struct NormArgs {
  std::int64_t rows, cols;
  bool aligned;  // cols a multiple of the 16-byte vector: every row starts 16-byte aligned
};

// Sum (or max) of v over the group of TPR threads (part of a warp or the whole block).
template <class Op, int TPR, int BLOCK>
__device__ __forceinline__ float group_reduce(float v, float* scratch) {
  if constexpr (TPR <= 32)
    return detail::warp_reduce<Op, TPR>(v);
  else
    return detail::block_reduce<Op, BLOCK>(v, scratch);
}

// ---- Variant 2: the row in registers ------------------------------------------------------------

// A group of TPR threads per row (a power of two up to 32, or the whole block); thread t holds
// E values: vectors t, t + TPR, ... (V = 16 bytes of T each) of its row.
template <typename T, Norm K, int TPR, int BLOCK, int E>
__global__ void __launch_bounds__(BLOCK)
    norm_registers_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                          T* __restrict__ y, NormArgs a) {
  static_assert(TPR <= 32 || TPR == BLOCK, "a row takes part of a warp or the whole block");
  constexpr int V = kVec16<T>, NV = E / V, kGroups = BLOCK / TPR;
  static_assert(E % V == 0, "whole vectors per thread");
  __shared__ float scratch[BLOCK / 32 + 1];
  const int group = int(threadIdx.x) / TPR, t = int(threadIdx.x) % TPR;
  const float inv_cols = 1.0f / float(a.cols);
  for (std::int64_t first = std::int64_t(blockIdx.x) * kGroups; first < a.rows;
       first += std::int64_t(gridDim.x) * kGroups) {  // uniform over the block
    const std::int64_t row = first + group;
    const bool live = row < a.rows;
    const T* xr = x + row * a.cols;
    float v[NV][V];
    // Load: whole vectors where rows are aligned, elements otherwise; past the end: 0.
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const std::int64_t c0 = std::int64_t(t + i * TPR) * V;
      if (live && a.aligned && c0 < a.cols) {
        load_vec<T, V>(xr + c0, v[i]);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) v[i][k] = live && c0 + k < a.cols ? to_float(xr[c0 + k]) : 0.0f;
      }
    }
    const auto valid = [&](int i, int k) { return std::int64_t(t + i * TPR) * V + k < a.cols; };
    float scale = 1.0f, shift = 0.0f;  // y = (v - shift) * scale (then weight and bias)
    if constexpr (K == Norm::softmax) {
      float m = -INFINITY;
#pragma unroll
      for (int i = 0; i < NV; ++i)
#pragma unroll
        for (int k = 0; k < V; ++k)
          if (valid(i, k)) m = MaxOp::combine(m, v[i][k]);
      m = group_reduce<MaxOp, TPR, BLOCK>(m, scratch);
      float s = 0.0f;
#pragma unroll
      for (int i = 0; i < NV; ++i)
#pragma unroll
        for (int k = 0; k < V; ++k) {
          v[i][k] = valid(i, k) ? expf(v[i][k] - m) : 0.0f;
          s += v[i][k];
        }
      s = group_reduce<SumOp, TPR, BLOCK>(s, scratch);
      scale = 1.0f / s;
    } else if constexpr (K == Norm::layernorm) {
      float s = 0.0f;
#pragma unroll
      for (int i = 0; i < NV; ++i)
#pragma unroll
        for (int k = 0; k < V; ++k) s += v[i][k];  // 0 past the end
      shift = group_reduce<SumOp, TPR, BLOCK>(s, scratch) * inv_cols;
      float q = 0.0f;
#pragma unroll
      for (int i = 0; i < NV; ++i)
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const float d = valid(i, k) ? v[i][k] - shift : 0.0f;
          q += d * d;
        }
      scale = rsqrtf(group_reduce<SumOp, TPR, BLOCK>(q, scratch) * inv_cols + kEps);
    } else {  // rmsnorm
      float q = 0.0f;
#pragma unroll
      for (int i = 0; i < NV; ++i)
#pragma unroll
        for (int k = 0; k < V; ++k) q += v[i][k] * v[i][k];
      scale = rsqrtf(group_reduce<SumOp, TPR, BLOCK>(q, scratch) * inv_cols + kEps);
    }
    if (!live) continue;
    T* yr = y + row * a.cols;
#pragma unroll
    for (int i = 0; i < NV; ++i) {
      const std::int64_t c0 = std::int64_t(t + i * TPR) * V;
      if (c0 >= a.cols) break;
      float wv[V], bv[V], out[V];
      if constexpr (K != Norm::softmax) {
        if (a.aligned) {
          load_vec<T, V>(w + c0, wv);
          if constexpr (K == Norm::layernorm) load_vec<T, V>(b + c0, bv);
        } else {
#pragma unroll
          for (int k = 0; k < V; ++k) {
            wv[k] = c0 + k < a.cols ? to_float(w[c0 + k]) : 0.0f;
            if constexpr (K == Norm::layernorm)
              bv[k] = c0 + k < a.cols ? to_float(b[c0 + k]) : 0.0f;
          }
        }
      }
#pragma unroll
      for (int k = 0; k < V; ++k) {
        if constexpr (K == Norm::softmax)
          out[k] = v[i][k] * scale;
        else if constexpr (K == Norm::layernorm)
          out[k] = (v[i][k] - shift) * scale * wv[k] + bv[k];
        else
          out[k] = v[i][k] * scale * wv[k];
      }
      if (a.aligned) {
        store_vec<T, V>(yr + c0, out);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k)
          if (c0 + k < a.cols) yr[c0 + k] = from_float<T>(out[k]);
      }
    }
  }
}

// ---- Variant 1 (and 2's fallback for long rows): three passes -----------------------------------

// A block per row; VEC elements per load (1: variant 1; the 16-byte vector: 2's fallback, rows
// aligned). Each pass reads the row again from global memory (L2 for rows that fit there).
template <typename T, Norm K, int BLOCK, int VEC>
__global__ void __launch_bounds__(BLOCK)
    norm_passes_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                       T* __restrict__ y, NormArgs a) {
  __shared__ float scratch[BLOCK / 32 + 1];
  const std::int64_t vectors = a.cols / VEC;  // VEC divides cols (VEC > 1 only when aligned)
  const float inv_cols = 1.0f / float(a.cols);
  for (std::int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const T* xr = x + row * a.cols;
    T* yr = y + row * a.cols;
    // Pass 1: softmax max, layernorm sum, rmsnorm sum of squares.
    float p1 = K == Norm::softmax ? -INFINITY : 0.0f;
    for (std::int64_t i = threadIdx.x; i < vectors; i += BLOCK) {
      float v[VEC];
      load_vec<T, VEC>(xr + i * VEC, v);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        if constexpr (K == Norm::softmax)
          p1 = MaxOp::combine(p1, v[k]);
        else if constexpr (K == Norm::layernorm)
          p1 += v[k];
        else
          p1 += v[k] * v[k];
      }
    }
    float shift = 0.0f, scale = 1.0f;
    if constexpr (K == Norm::softmax) {
      shift = detail::block_reduce<MaxOp, BLOCK>(p1, scratch);
    } else if constexpr (K == Norm::layernorm) {
      shift = detail::block_reduce<SumOp, BLOCK>(p1, scratch) * inv_cols;
    } else {
      scale = rsqrtf(detail::block_reduce<SumOp, BLOCK>(p1, scratch) * inv_cols + kEps);
    }
    // Pass 2: softmax sum of exp(x - max), layernorm sum of (x - mean)^2.
    if constexpr (K != Norm::rmsnorm) {
      float p2 = 0.0f;
      for (std::int64_t i = threadIdx.x; i < vectors; i += BLOCK) {
        float v[VEC];
        load_vec<T, VEC>(xr + i * VEC, v);
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          if constexpr (K == Norm::softmax) {
            p2 += expf(v[k] - shift);
          } else {
            const float d = v[k] - shift;
            p2 += d * d;
          }
        }
      }
      p2 = detail::block_reduce<SumOp, BLOCK>(p2, scratch);
      scale = K == Norm::softmax ? 1.0f / p2 : rsqrtf(p2 * inv_cols + kEps);
    }
    // Last pass: write.
    for (std::int64_t i = threadIdx.x; i < vectors; i += BLOCK) {
      float v[VEC], wv[VEC], bv[VEC], out[VEC];
      load_vec<T, VEC>(xr + i * VEC, v);
      if constexpr (K != Norm::softmax) load_vec<T, VEC>(w + i * VEC, wv);
      if constexpr (K == Norm::layernorm) load_vec<T, VEC>(b + i * VEC, bv);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        if constexpr (K == Norm::softmax)
          out[k] = expf(v[k] - shift) * scale;
        else if constexpr (K == Norm::layernorm)
          out[k] = (v[k] - shift) * scale * wv[k] + bv[k];
        else
          out[k] = v[k] * scale * wv[k];
      }
      store_vec<T, VEC>(yr + i * VEC, out);
    }
  }
}

// ---- Plans and launchers ------------------------------------------------------------------------

// How variant 2 runs a problem: the group per row and values per thread, or the fallback.
struct NormPlan {
  int threads_per_row = 32, block = 256, values = 8;  // values per thread (E)
  bool passes = false;                                // the three-pass fallback
  std::int64_t rows = 0, cols = 0, grid = 0;
  bool aligned = false;
};

constexpr std::int64_t kMaxRegisterCols = 32768;

NormPlan plan_norm(const Problem& p, int variant) {
  NormPlan n;
  n.cols = p.shape.back();
  n.rows = p.input_elements() / n.cols;
  const int vec = 16 / bench::storage_bytes(p.dtype);
  n.aligned = n.cols % vec == 0;
  if (variant <= 1 || n.cols > kMaxRegisterCols) {
    n.passes = true;
    n.block = variant <= 1 ? 256 : 1024;
    n.threads_per_row = n.block;
    n.grid = std::min(n.rows, kMaxGrid);
    return n;
  }
  if (n.cols <= 32 * 32) {  // a warp per row
    n.threads_per_row = 32;
    n.block = 256;
    n.values = n.cols <= 32 * 8 ? 8 : n.cols <= 32 * 16 ? 16 : 32;
  } else {
    n.values = n.cols <= 1024 * 16 ? 16 : 32;
    n.block = 128;
    while (std::int64_t(n.block) * n.values < n.cols) n.block *= 2;
    n.threads_per_row = n.block;
  }
  n.grid = std::min((n.rows + n.block / n.threads_per_row - 1) / (n.block / n.threads_per_row),
                    kMaxGrid);
  return n;
}

template <typename T, Norm K>
void launch_registers(const NormPlan& n, const T* x, const T* w, const T* b, T* y, cudaStream_t s) {
  const NormArgs a{n.rows, n.cols, n.aligned};
  const dim3 grid(unsigned(n.grid));
  const int key = n.threads_per_row * 100 + n.values;
  switch (key) {
    case 32 * 100 + 8:
      norm_registers_kernel<T, K, 32, 256, 8><<<grid, 256, 0, s>>>(x, w, b, y, a);
      break;
    case 32 * 100 + 16:
      norm_registers_kernel<T, K, 32, 256, 16><<<grid, 256, 0, s>>>(x, w, b, y, a);
      break;
    case 32 * 100 + 32:
      norm_registers_kernel<T, K, 32, 256, 32><<<grid, 256, 0, s>>>(x, w, b, y, a);
      break;
    case 128 * 100 + 16:
      norm_registers_kernel<T, K, 128, 128, 16><<<grid, 128, 0, s>>>(x, w, b, y, a);
      break;
    case 256 * 100 + 16:
      norm_registers_kernel<T, K, 256, 256, 16><<<grid, 256, 0, s>>>(x, w, b, y, a);
      break;
    case 512 * 100 + 16:
      norm_registers_kernel<T, K, 512, 512, 16><<<grid, 512, 0, s>>>(x, w, b, y, a);
      break;
    case 1024 * 100 + 16:
      norm_registers_kernel<T, K, 1024, 1024, 16><<<grid, 1024, 0, s>>>(x, w, b, y, a);
      break;
    case 1024 * 100 + 32:
      norm_registers_kernel<T, K, 1024, 1024, 32><<<grid, 1024, 0, s>>>(x, w, b, y, a);
      break;
    default:
      throw std::logic_error("normalization: no kernel of " + std::to_string(n.threads_per_row) +
                             " threads per row x " + std::to_string(n.values) + " values");
  }
  CUDA_CHECK_LAST_LAUNCH();
}

template <typename T, Norm K>
void launch_passes(const NormPlan& n, const T* x, const T* w, const T* b, T* y, cudaStream_t s) {
  const NormArgs a{n.rows, n.cols, n.aligned};
  const dim3 grid(unsigned(n.grid));
  if (n.block == 256)
    norm_passes_kernel<T, K, 256, 1><<<grid, 256, 0, s>>>(x, w, b, y, a);
  else if (n.aligned)
    norm_passes_kernel<T, K, 1024, kVec16<T>><<<grid, 1024, 0, s>>>(x, w, b, y, a);
  else
    norm_passes_kernel<T, K, 1024, 1><<<grid, 1024, 0, s>>>(x, w, b, y, a);
  CUDA_CHECK_LAST_LAUNCH();
}

template <typename T, Norm K>
void run(const NormPlan& n, const OpArgs& args) {
  const T* x = static_cast<const T*>(args.inputs.at(0));
  const T* w = K == Norm::softmax ? nullptr : static_cast<const T*>(args.inputs.at(1));
  const T* b = K == Norm::layernorm ? static_cast<const T*>(args.inputs.at(2)) : nullptr;
  T* y = static_cast<T*>(args.output);
  if (n.passes)
    launch_passes<T, K>(n, x, w, b, y, args.stream);
  else
    launch_registers<T, K>(n, x, w, b, y, args.stream);
}

template <typename T>
void run_op(const NormPlan& n, const OpArgs& args) {
  switch (args.p->op) {
    case Op::softmax:
      return run<T, Norm::softmax>(n, args);
    case Op::layernorm:
      return run<T, Norm::layernorm>(n, args);
    case Op::rmsnorm:
      return run<T, Norm::rmsnorm>(n, args);
    default:
      throw std::logic_error("normalization family: not a normalization " + args.p->str());
  }
}

// ---- The family ---------------------------------------------------------------------------------

bool takes(const Problem& p) {
  return p.category() == Category::normalization &&
         (p.dtype == DataType::fp32 || p.dtype == DataType::fp16 || p.dtype == DataType::bf16);
}

// Variant 2 first, except for 16-bit rows of a block per row in registers (1024 < cols <=
// 32768), where variant 1 measured faster: 8192x8192 bf16 on an H200, v1 against v2: softmax 115
// against 128 us, layernorm 105 against 184, rmsnorm 89 against 102 (variant 1's small blocks keep
// more rows in flight per SM; its second and third passes hit the cache). fp32 there: v2 147,
// 202, 131 us against v1 201, 194, 187.
std::vector<int> variants(const Problem& p) {
  if (!takes(p)) return {};
  const NormPlan n = plan_norm(p, 2);
  if (p.dtype != DataType::fp32 && !n.passes && n.threads_per_row > 32) return {1, 2};
  return {2, 1};
}

std::size_t workspace_bytes(const Problem&, int) {
  return 0;
}

void launch(const OpArgs& args, int variant) {
  const Problem& p = *args.p;
  if (!takes(p)) throw std::logic_error("normalization family: cannot run " + p.str());
  const NormPlan n = plan_norm(p, variant);
  switch (p.dtype) {
    case DataType::fp32:
      return run_op<float>(n, args);
    case DataType::fp16:
      return run_op<__half>(n, args);
    case DataType::bf16:
      return run_op<__nv_bfloat16>(n, args);
    default:
      throw std::logic_error("normalization family: dtype " + bench::to_string(p.dtype));
  }
}

std::string describe(const Problem& p, int variant) {
  if (!takes(p)) return "";
  const NormPlan n = plan_norm(p, variant);
  const std::string v = "v" + std::to_string(variant) + " " + to_string(p.op) + ": ";
  const std::string passes = p.op == Op::rmsnorm ? "two passes" : "three passes";
  if (variant <= 1)
    return v + "a block of 256 per row, " + passes + " over global memory, element loads, 1 launch";
  if (n.passes)
    return v + "row too long for registers: a block of 1024 per row, " + passes +
           " over global memory, " + (n.aligned ? "128-bit" : "element") + " loads, 1 launch";
  const std::string who = n.threads_per_row == 32
                              ? "a warp per row"
                              : "a block of " + std::to_string(n.block) + " per row";
  return v + who + ", the row read once into registers (" + std::to_string(n.values) +
         " values per thread), " + (n.aligned ? "128-bit" : "element") + " loads, 1 launch";
}

}  // namespace

const KernelFamily& normalization_family() {
  static const KernelFamily family{variants, workspace_bytes, launch, describe};
  return family;
}

}  // namespace ops::cuda
