// Reductions of the op suite (sum, mean, max over any axes; fp32, fp16, bf16): our kernel
// family, numbered variants side by side (llm.c style). The backend ops/cuda/own_cuda.cpp runs
// one of them (--variant N, default the first of variants(p)); the planning (axis merging, shape
// class, grids, workspace) is host code in ops/cuda/reduction_plan.hpp, checked on the CPU by
// tests/ops/test_reduction_plan.cpp.
//
// Build (part of the normal build when CUDA is found):
//   cmake -S . -B build -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build build
// Registers and spills:
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c ops/cuda/reduction.cu -o /dev/null
// Run one variant (on a GPU):
//   build/experiments/myops --backend own_cuda --variant 2 --problem sum:4x512x896:axis=2
//
// Variants (every one computes in float and rounds once to the output type; mean divides the
// float sum by the count in float; the order of every sum is fixed by the plan, so results are
// bitwise reproducible: no float atomics):
//   1  naive: one thread per output, an odometer over the reduced dims. Any axes, 1 launch.
//   2  the shaped kernels, by class of the merged axes (reduction_plan.hpp):
//      rows (innermost dim reduced): a warp per row (short rows, or at least 8 rows per SM) or a
//        512-thread block per row, 128-bit loads (4 in flight per thread), __shfl_xor_sync
//        butterflies, then shared memory across warps. Fewer rows than 4 per SM: each row is cut
//        in chunks over several blocks that write float partials, and a second rows launch
//        reduces them.
//      all: the same with one row: per-block partials + a tiny second kernel.
//      columns (a leading dim reduced, kept columns contiguous) and middle (kept outer, reduced
//        middle, kept inner: batched columns): each thread owns a strip of up to 16 bytes of
//        neighbouring columns and loops down the reduced dim (a warp reads 512 contiguous bytes
//        a row, a block 256 strips); with too few strips to fill the device the reduced dim is
//        split over blocks writing float partials, and a second columns launch sums them.
//      general (reduced dims not neighbours, e.g. axes 0 and 2 of 3): a warp per output when
//        the innermost dim is reduced (its contiguous runs read with 128-bit loads), else
//        variant 1's thread per output (coalesced along the kept innermost dim).
//   3  tuned shapes, where they differ from 2: short rows get fewer lanes (1 to 16: several rows
//      per warp, about 4 vectors each); columns blocks are 32 strips (fewer where there are
//      fewer) times up to 8 row phases (more for narrower tensors) that meet in shared memory,
//      so narrow tensors still fill blocks and fewer blocks need the split.
//
// max: starts from -inf and keeps a NaN (MaxOp, warp_reduce.cuh), like torch.max; exact.
//
// Figures of a scratch harness (not myops; no run folder keeps them), over this code before its
// last edits; myops's measurements of the op suite: results/h200/20261124_ops_preset_pure/ and
// 20261124_ops_xlarge_pure/.
// Measured on an NVIDIA H200 (CUDA 13.0, sm_90), sum, median of CUDA-graph replays, us (GB/s of
// input + output bytes where it matters). A device-to-device copy through PyTorch on such a card
// moves about 4.3 TB/s (read + write); a cudaMemcpyAsync of 4 GiB captured in a graph gave only
// 2.8 TB/s here, so the first is the ceiling used. Small shapes live in the L2 and are
// launch-bound; "2 l." = two launches.
//   problem (fp32)             v1        v2                   v3
//   4x512x896                  -         4.77 (2 l.)          -
//   4x512x896:axis=2           174.5     2.84                 -
//   4x512x896:axis=0           9.83      2.86                 -
//   4x512x896:axis=1           113.8     5.93 (2 l.)          5.72 (2 l.)
//   4x512x896:axis=0,1         -         9.25 (2 l.)          5.87 (2 l.)
//   8192x8192                  -         65.1 (4124 GB/s)     -
//   8192x8192:axis=0           3470      79.2                 73.3
//   8192x8192:axis=1           1617      63.1 (warp per row; a 512-block per row: 70.4)
//   64x4096x4096               -         945 (4545 GB/s)      -
//   64x4096x4096:axis=2        12682     951 (4518 GB/s; a 512-block per row: 2169)
//   64x4096x4096:axis=0        3022      989 (4412 GB/s)      1086
//   64x4096x4096:axis=1        3442      977                  964 (4459 GB/s)
//   64x4096x4096:axis=0,1      109426    1063                 1058 (4061 GB/s)
//   64x4096x4096:axis=1,2      -         1031 (4165 GB/s)     -
//   bf16: 4x512x896 4.07 (2 l.), axis=2 2.82, axis=0 3.08, axis=0,1 10.06 / v3 6.31;
//   64x4096x4096 489 (4395 GB/s), axis=0 524 (4164 GB/s) / v3 611. mean:4x512x896:axis=2 2.85.
// Not measured in the final form: bf16 and max over the last axis of 64x4096x4096 (measured
// only with the block per row that the warp-per-row rule above replaced: 1829 and 1791 us).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cuda/cuda_check.hpp"
#include "ops/cuda/kernels.hpp"
#include "ops/cuda/launch.cuh"
#include "ops/cuda/reduction_plan.hpp"
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

// ---- Kernels ------------------------------------------------------------------------------------

// Reduces n elements at p (any alignment) with the G threads of a group, t the thread's rank:
// the elements before the first 16-byte boundary one by one, then 16-byte vectors (4 loads in
// flight per thread), then the tail. The order depends only on n, G and p's alignment.
template <typename T, class Op, int G>
__device__ __forceinline__ float accumulate_span(const T* __restrict__ p, std::int64_t n, int t) {
  constexpr int V = kVec16<T>, U = 4;
  const std::int64_t misaligned =
      std::int64_t(reinterpret_cast<std::uintptr_t>(p) / sizeof(T)) & (V - 1);
  const std::int64_t head = misaligned ? (V - misaligned < n ? V - misaligned : n) : 0;
  float acc[U];
#pragma unroll
  for (int u = 0; u < U; ++u) acc[u] = Op::identity();
  for (int j = t; j < head; j += G) acc[0] = Op::combine(acc[0], to_float(p[j]));
  const T* body = p + head;
  const std::int64_t vectors = (n - head) / V;
  std::int64_t i = t;
  for (; i + (U - 1) * G < vectors; i += U * G) {
    float v[U][V];
#pragma unroll
    for (int u = 0; u < U; ++u) load_vec<T, V>(body + (i + u * G) * V, v[u]);
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int k = 0; k < V; ++k) acc[u] = Op::combine(acc[u], v[u][k]);
  }
  for (; i < vectors; i += G) {
    float v[V];
    load_vec<T, V>(body + i * V, v);
#pragma unroll
    for (int k = 0; k < V; ++k) acc[1] = Op::combine(acc[1], v[k]);
  }
  for (std::int64_t j = head + vectors * V + t; j < n; j += G)
    acc[2] = Op::combine(acc[2], to_float(p[j]));
  return Op::combine(Op::combine(acc[0], acc[1]), Op::combine(acc[2], acc[3]));
}

struct RowArgs {
  std::int64_t rows, length, splits, chunk, tasks;
  float divisor;  // of the final value: the mean's count, else 1 (exact)
};

// Rows: task = row * splits + chunk; TPR threads per task (a power of two up to 32, or the whole
// block). splits == 1 writes y[row] (the final value), else partial[task] (a float).
template <typename Tin, typename Tout, class Op, int TPR, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    reduce_rows_kernel(const Tin* __restrict__ x, Tout* __restrict__ y, float* __restrict__ partial,
                       RowArgs a) {
  static_assert(TPR <= 32 || TPR == BLOCK, "a row takes part of a warp or the whole block");
  constexpr int kGroups = BLOCK / TPR;
  __shared__ float scratch[BLOCK / 32 + 1];
  const int group = int(threadIdx.x) / TPR, t = int(threadIdx.x) % TPR;
  // The loop is uniform over the block: every lane reaches the shuffles and barriers.
  for (std::int64_t first = std::int64_t(blockIdx.x) * kGroups; first < a.tasks;
       first += std::int64_t(gridDim.x) * kGroups) {
    const std::int64_t task = first + group;
    float acc = Op::identity();
    if (task < a.tasks) {
      const std::int64_t row = task / a.splits, begin = (task - row * a.splits) * a.chunk;
      const std::int64_t n = a.chunk < a.length - begin ? a.chunk : a.length - begin;
      acc = accumulate_span<Tin, Op, TPR>(x + row * a.length + begin, n, t);
    }
    if constexpr (TPR <= 32)
      acc = detail::warp_reduce<Op, TPR>(acc);
    else
      acc = detail::block_reduce<Op, BLOCK>(acc, scratch);
    if (t == 0 && task < a.tasks) {
      if (a.splits == 1)
        y[task] = from_float<Tout>(acc / a.divisor);
      else
        partial[task] = acc;
    }
  }
}

struct ColArgs {
  std::int64_t batches, reduce, inner, strips, tiles_per_batch, splits, rows_per_split, tasks;
  std::int64_t outputs;  // batches * inner
  int strips_log2;       // strips per block = 1 << strips_log2; the rest of the block: row phases
  float divisor;
};

// Columns of x[batches][reduce][inner]: task = (split * batches + batch) * tiles + tile; thread
// (phase, j) owns strip tile * strips + j (V columns) and rows r0 + phase, + phases, ... of the
// split. Phases meet by butterfly inside a warp, then across warps in shared memory, in a fixed
// order. splits == 1 writes y, else partial[split][batches * inner] (floats).
template <typename Tin, typename Tout, class Op, int V, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    reduce_cols_kernel(const Tin* __restrict__ x, Tout* __restrict__ y, float* __restrict__ partial,
                       ColArgs a) {
  __shared__ float sh[BLOCK * V];
  const int sb = 1 << a.strips_log2, phases = BLOCK >> a.strips_log2;
  const int j = int(threadIdx.x) & (sb - 1), phase = int(threadIdx.x) >> a.strips_log2;
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  for (std::int64_t task = blockIdx.x; task < a.tasks; task += gridDim.x) {  // uniform
    const std::int64_t tile = task % a.tiles_per_batch, rest = task / a.tiles_per_batch;
    const std::int64_t batch = rest % a.batches, split = rest / a.batches;
    const std::int64_t strip = tile * sb + j;
    const bool active = strip < a.strips;
    float acc[V];
#pragma unroll
    for (int k = 0; k < V; ++k) acc[k] = Op::identity();
    if (active) {
      const std::int64_t r0 = split * a.rows_per_split;
      const std::int64_t r1 = r0 + a.rows_per_split < a.reduce ? r0 + a.rows_per_split : a.reduce;
      const std::int64_t step = std::int64_t(phases) * a.inner;
      std::int64_t r = r0 + phase;
      const Tin* p = x + (batch * a.reduce + r) * a.inner + strip * V;
      for (; r + 3 * phases < r1; r += 4 * phases, p += 4 * step) {
        float v[4][V];
#pragma unroll
        for (int u = 0; u < 4; ++u) load_vec<Tin, V>(p + u * step, v[u]);
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
          for (int k = 0; k < V; ++k) acc[k] = Op::combine(acc[k], v[u][k]);
      }
      for (; r < r1; r += phases, p += step) {
        float v[V];
        load_vec<Tin, V>(p, v);
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k] = Op::combine(acc[k], v[k]);
      }
    }
    if (phases > 1) {
      if (sb < 32)  // lanes l and l ^ offset (offset >= sb) share a strip
        for (int offset = 16; offset >= sb; offset /= 2)
#pragma unroll
          for (int k = 0; k < V; ++k)
            acc[k] = Op::combine(acc[k], __shfl_xor_sync(0xffffffffu, acc[k], offset));
      const int slot = sb >= 32 ? phase : warp, slots = sb >= 32 ? phases : BLOCK / 32;
      if (sb >= 32 || lane < sb)
#pragma unroll
        for (int k = 0; k < V; ++k) sh[(slot * sb + j) * V + k] = acc[k];
      __syncthreads();
      if (phase == 0)
        for (int s = 1; s < slots; ++s)
#pragma unroll
          for (int k = 0; k < V; ++k) acc[k] = Op::combine(acc[k], sh[(s * sb + j) * V + k]);
      __syncthreads();  // sh is written again by the next task
    }
    if (phase == 0 && active) {
      const std::int64_t o = batch * a.inner + strip * V;
      if (a.splits == 1) {
        float out[V];
#pragma unroll
        for (int k = 0; k < V; ++k) out[k] = acc[k] / a.divisor;
        store_vec<Tout, V>(y + o, out);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) partial[split * a.outputs + o + k] = acc[k];
      }
    }
  }
}

// The merged dims as strided loops (variant 1 and the general class): kept dims index the
// output, reduced dims the elements of one output; outermost first, strides in elements.
struct StridedArgs {
  int kept, reduced;
  std::int64_t kdim[4], kstride[4], rdim[4], rstride[4];
  std::int64_t outputs, count;
  float divisor;
};

__device__ __forceinline__ std::int64_t output_base(const StridedArgs& a, std::int64_t o) {
  std::int64_t base = 0;
  for (int d = a.kept - 1; d >= 0; --d) {
    base += (o % a.kdim[d]) * a.kstride[d];
    o /= a.kdim[d];
  }
  return base;
}

// Variant 1: one thread per output; the reduced elements in row-major order by an odometer.
template <typename T, class Op>
__global__ void reduce_naive_kernel(const T* __restrict__ x, T* __restrict__ y, StridedArgs a) {
  for (std::int64_t o = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < a.outputs;
       o += std::int64_t(gridDim.x) * blockDim.x) {
    std::int64_t off = output_base(a, o), idx[4] = {0, 0, 0, 0};
    float acc = Op::identity();
    for (std::int64_t e = 0; e < a.count; ++e) {
      acc = Op::combine(acc, to_float(x[off]));
      for (int d = a.reduced - 1; d >= 0; --d) {
        off += a.rstride[d];
        if (++idx[d] < a.rdim[d]) break;
        off -= a.rdim[d] * a.rstride[d];
        idx[d] = 0;
      }
    }
    y[o] = from_float<T>(acc / a.divisor);
  }
}

// Variant 2, general class with the innermost dim reduced: a warp per output; for each index of
// the outer reduced dims, the lanes read the contiguous innermost run with 128-bit loads.
template <typename T, class Op, int BLOCK>
__global__ void __launch_bounds__(BLOCK)
    reduce_general_kernel(const T* __restrict__ x, T* __restrict__ y, StridedArgs a) {
  constexpr int kWarps = BLOCK / 32;
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  const int last = a.reduced - 1;
  const std::int64_t run = a.rdim[last], runs = a.count / run;
  for (std::int64_t o = std::int64_t(blockIdx.x) * kWarps + warp; o < a.outputs;
       o += std::int64_t(gridDim.x) * kWarps) {  // uniform over the warp
    const std::int64_t base = output_base(a, o);
    float acc = Op::identity();
    for (std::int64_t q = 0; q < runs; ++q) {
      std::int64_t off = base, rest = q;
      for (int d = last - 1; d >= 0; --d) {
        off += (rest % a.rdim[d]) * a.rstride[d];
        rest /= a.rdim[d];
      }
      acc = Op::combine(acc, accumulate_span<T, Op, 32>(x + off, run, lane));
    }
    acc = detail::warp_reduce<Op>(acc);
    if (lane == 0) y[o] = from_float<T>(acc / a.divisor);
  }
}

// ---- Launchers ----------------------------------------------------------------------------------

template <typename Tin, typename Tout, class Op>
void launch_rows(const RowLaunch& l, const Tin* x, Tout* y, float* partial, float divisor,
                 cudaStream_t stream) {
  const RowArgs a{l.rows, l.length, l.splits, l.chunk, l.tasks, divisor};
  const dim3 grid(unsigned(l.grid));
  switch (l.threads_per_row) {
    case 1:
      reduce_rows_kernel<Tin, Tout, Op, 1, 256><<<grid, 256, 0, stream>>>(x, y, partial, a);
      break;
    case 2:
      reduce_rows_kernel<Tin, Tout, Op, 2, 256><<<grid, 256, 0, stream>>>(x, y, partial, a);
      break;
    case 4:
      reduce_rows_kernel<Tin, Tout, Op, 4, 256><<<grid, 256, 0, stream>>>(x, y, partial, a);
      break;
    case 8:
      reduce_rows_kernel<Tin, Tout, Op, 8, 256><<<grid, 256, 0, stream>>>(x, y, partial, a);
      break;
    case 16:
      reduce_rows_kernel<Tin, Tout, Op, 16, 256><<<grid, 256, 0, stream>>>(x, y, partial, a);
      break;
    case 32:
      reduce_rows_kernel<Tin, Tout, Op, 32, 256><<<grid, 256, 0, stream>>>(x, y, partial, a);
      break;
    case kRowBlockThreads:
      reduce_rows_kernel<Tin, Tout, Op, kRowBlockThreads, kRowBlockThreads>
          <<<grid, kRowBlockThreads, 0, stream>>>(x, y, partial, a);
      break;
    default:
      throw std::logic_error("reduction: no rows kernel of " + std::to_string(l.threads_per_row) +
                             " threads per row");
  }
  CUDA_CHECK_LAST_LAUNCH();
}

template <typename Tin, typename Tout, class Op>
void launch_columns(const ColumnLaunch& l, const Tin* x, Tout* y, float* partial, float divisor,
                    cudaStream_t stream) {
  int log2 = 0;
  while ((1 << log2) < l.strips_per_block) ++log2;
  ColArgs a{};
  a.batches = l.batches;
  a.reduce = l.reduce;
  a.inner = l.inner;
  a.strips = l.strips;
  a.tiles_per_batch = l.tiles_per_batch;
  a.splits = l.splits;
  a.rows_per_split = l.rows_per_split;
  a.tasks = l.tasks;
  a.outputs = l.batches * l.inner;
  a.strips_log2 = log2;
  a.divisor = divisor;
  const dim3 grid(unsigned(l.grid));
  if (l.block != kReduceBlock || (1 << log2) != l.strips_per_block)
    throw std::logic_error("reduction: columns block must be 256 threads, strips a power of two");
  constexpr int B = kReduceBlock;
  switch (l.vec) {
    case 1:
      reduce_cols_kernel<Tin, Tout, Op, 1, B><<<grid, B, 0, stream>>>(x, y, partial, a);
      break;
    case 2:
      reduce_cols_kernel<Tin, Tout, Op, 2, B><<<grid, B, 0, stream>>>(x, y, partial, a);
      break;
    case 4:
      reduce_cols_kernel<Tin, Tout, Op, 4, B><<<grid, B, 0, stream>>>(x, y, partial, a);
      break;
    case 8:
      if constexpr (sizeof(Tin) == 2) {  // 16 bytes of a 16-bit type
        reduce_cols_kernel<Tin, Tout, Op, 8, B><<<grid, B, 0, stream>>>(x, y, partial, a);
        break;
      }
      [[fallthrough]];
    default:
      throw std::logic_error("reduction: no columns kernel of vector " + std::to_string(l.vec));
  }
  CUDA_CHECK_LAST_LAUNCH();
}

StridedArgs strided_args(const ReductionGeometry& g, float divisor) {
  StridedArgs a{};
  const MergedDims& m = g.merged;
  std::int64_t stride = 1;
  std::vector<std::int64_t> strides(m.dims.size());
  for (std::size_t i = m.dims.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= m.dims[i];
  }
  for (std::size_t i = 0; i < m.dims.size(); ++i) {
    if (m.reduced[i]) {
      a.rdim[a.reduced] = m.dims[i];
      a.rstride[a.reduced++] = strides[i];
    } else {
      a.kdim[a.kept] = m.dims[i];
      a.kstride[a.kept++] = strides[i];
    }
  }
  a.outputs = g.outputs;
  a.count = g.reduced_count;
  a.divisor = divisor;
  return a;
}

template <typename T, class Op>
void run_plan(const ReductionPlan& plan, const OpArgs& args, float divisor) {
  const T* x = static_cast<const T*>(args.inputs.at(0));
  T* y = static_cast<T*>(args.output);
  float* ws = static_cast<float*>(args.workspace);
  if (plan.workspace_floats > 0 && !ws)
    throw std::logic_error("reduction: the plan needs a workspace, none was given");
  const cudaStream_t s = args.stream;
  const dim3 grid(unsigned(plan.grid));
  switch (plan.kernel) {
    case ReductionKernel::naive:
      reduce_naive_kernel<T, Op>
          <<<grid, plan.block, 0, s>>>(x, y, strided_args(plan.geometry, divisor));
      CUDA_CHECK_LAST_LAUNCH();
      break;
    case ReductionKernel::general:
      reduce_general_kernel<T, Op, kReduceBlock>
          <<<grid, kReduceBlock, 0, s>>>(x, y, strided_args(plan.geometry, divisor));
      CUDA_CHECK_LAST_LAUNCH();
      break;
    case ReductionKernel::rows:
      if (plan.row.splits == 1) {
        launch_rows<T, T, Op>(plan.row, x, y, nullptr, divisor, s);
      } else {
        launch_rows<T, T, Op>(plan.row, x, y, ws, divisor, s);
        launch_rows<float, T, Op>(plan.row_finish, ws, y, nullptr, divisor, s);
      }
      break;
    case ReductionKernel::columns:
      if (plan.col.splits == 1) {
        launch_columns<T, T, Op>(plan.col, x, y, nullptr, divisor, s);
      } else {
        launch_columns<T, T, Op>(plan.col, x, y, ws, divisor, s);
        launch_columns<float, T, Op>(plan.col_finish, ws, y, nullptr, divisor, s);
      }
      break;
  }
}

// ---- The family ---------------------------------------------------------------------------------

constexpr int kNominalSms = 132;  // H100/H200: only for choosing the variants list

bool takes(const Problem& p) {
  return p.category() == Category::reduction &&
         (p.dtype == DataType::fp32 || p.dtype == DataType::fp16 || p.dtype == DataType::bf16);
}

ReductionPlan plan_of(const Problem& p, int variant, int sms) {
  return plan_reduction(p.shape, p.axes, bench::storage_bytes(p.dtype), variant, sms);
}

// Variant 3 is listed where it differs from 2 (short rows get fewer lanes, columns row phases),
// first for short rows and for columns that variant 2 must split over blocks (few columns: v3
// took 5.9 us against 9.3 us for 4x512x896 over axes 0,1; 73 against 79 us for 8192x8192 over
// axis 0), after 2 for columns that fill the device without a split (64x4096x4096 over axis 0:
// 1086 against 989 us, bf16 611 against 524 us). H200 figures.
std::vector<int> variants(const Problem& p) {
  if (!takes(p)) return {};
  const ReductionPlan v2 = plan_of(p, 2, kNominalSms), v3 = plan_of(p, 3, kNominalSms);
  if (v2.kernel == ReductionKernel::rows && v2.row.threads_per_row != v3.row.threads_per_row)
    return {3, 2, 1};
  if (v2.kernel == ReductionKernel::columns && v2.col.strips_per_block != v3.col.strips_per_block)
    return v2.col.splits > 1 ? std::vector<int>{3, 2, 1} : std::vector<int>{2, 3, 1};
  return {2, 1};
}

std::size_t workspace_bytes(const Problem& p, int variant) {
  if (!takes(p) || variant < 2) return 0;
  return std::size_t(plan_of(p, variant, sm_count()).workspace_floats) * sizeof(float);
}

// Enqueues the kernels of `plan` (made for *args.p).
void launch_plan(const ReductionPlan& plan, const OpArgs& args) {
  const Problem& p = *args.p;
  const float divisor = p.op == Op::mean ? float(plan.geometry.reduced_count) : 1.0f;
  const bool max = p.op == Op::max;
  switch (p.dtype) {
    case DataType::fp32:
      max ? run_plan<float, MaxOp>(plan, args, divisor)
          : run_plan<float, SumOp>(plan, args, divisor);
      break;
    case DataType::fp16:
      max ? run_plan<__half, MaxOp>(plan, args, divisor)
          : run_plan<__half, SumOp>(plan, args, divisor);
      break;
    case DataType::bf16:
      max ? run_plan<__nv_bfloat16, MaxOp>(plan, args, divisor)
          : run_plan<__nv_bfloat16, SumOp>(plan, args, divisor);
      break;
    default:
      throw std::logic_error("reduction family: dtype " + bench::to_string(p.dtype));
  }
}

void launch(const OpArgs& args, int variant) {
  const Problem& p = *args.p;
  if (!takes(p)) throw std::logic_error("reduction family: not a reduction " + p.str());
  launch_plan(plan_of(p, variant, sm_count()), args);
}

std::string describe(const Problem& p, int variant) {
  if (!takes(p)) return "";
  const ReductionPlan plan = plan_of(p, variant, kNominalSms);
  const std::string cls = to_string(plan.geometry.cls);
  const std::string launches =
      plan.launches == 1 ? "1 launch" : std::to_string(plan.launches) + " launches";
  const std::string v = "v" + std::to_string(variant) + " ";
  switch (plan.kernel) {
    case ReductionKernel::naive:
      return v + cls + " reduction: naive, one thread per output, strided loops, " + launches;
    case ReductionKernel::general:
      return v + "general reduction: a warp per output, 128-bit loads along the innermost dim, " +
             launches;
    case ReductionKernel::rows: {
      const RowLaunch& r = plan.row;
      std::string who = r.threads_per_row == 32 ? "a warp per row"
                        : r.threads_per_row < 32
                            ? std::to_string(32 / r.threads_per_row) + " rows per warp"
                            : "a block of " + std::to_string(r.block) + " per row";
      if (r.splits > 1)
        who = "each row cut in " + std::to_string(r.splits) + " chunks, a block of " +
              std::to_string(r.block) + " per chunk, partials reduced by a second kernel";
      return v + (plan.geometry.cls == ReductionClass::all ? "grid" : "row") +
             " reduction: " + who + ", 128-bit loads, " + launches;
    }
    case ReductionKernel::columns: {
      const ColumnLaunch& c = plan.col;
      std::string how = "a thread per " + std::to_string(c.vec) + "-column strip, " +
                        std::to_string(c.strips_per_block) + " strips x " +
                        std::to_string(c.row_phases) + " row phases per block";
      if (c.splits > 1)
        how += ", reduced dim split in " + std::to_string(c.splits) + " with a second pass";
      return v + cls + " reduction: " + how + ", " + launches;
    }
  }
  return "";
}

}  // namespace

const KernelFamily& reduction_family() {
  static const KernelFamily family{variants, workspace_bytes, launch, describe};
  return family;
}

}  // namespace ops::cuda
