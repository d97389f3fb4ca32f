// Our memory ops: copy, transpose (the last two axes), permute (output axis i reads input axis
// perm[i]) and concat (`inputs` tensors of one shape joined along `axis`): the memory kernel
// family of the own_cuda backend (ops/cuda/kernels.hpp). Exact data movement, no arithmetic on
// values: kernels move 2- or 4-byte words (or 16-byte vectors of them), whatever the dtype.
// Shapes are folded first (ops/cuda/memory_index.hpp): size-1 axes dropped, axes that stay
// neighbours merged, so transpose:Bx1xN is a copy and permute perm=0,2,1 a batched transpose.
//
// Variants (the best for the problem first in variants(p)):
//   copy       1  cudaMemcpyAsync device to device
//              2  grid-stride copy kernel, 16-byte vectors, 4 per thread in flight, byte tail
//   transpose  1  naive: one thread per output element, the input offset by div/mod per folded
//                 axis (coalesced writes, strided reads)
//              2  32x32 tiles through shared memory padded to 33 columns (bank-conflict free),
//                 32x32 threads, one element each
//              3  tiles through padded shared memory, each thread moving 16-byte vectors along
//                 the input rows and, gathered from shared memory, along the output rows: fp32
//                 32x32 tiles, 8x16 threads of 2 float4; fp16/bf16 64x64 tiles, 8x16 threads of
//                 4 vectors of 8; 32x8 threads of 4 scalars where a side is not a multiple of
//                 the vector. One block per tile.
//   permute    1  generic: v1 of transpose (div/mod per folded axis, strides in a struct passed
//                 by value)
//              2  by the folded shape: one axis -> copy kernel; last axis stays last -> rows
//                 copied with 16-byte vectors (a group of 1..32 lanes per row segment); else the
//                 tiled transpose of v3 over the input's and the output's contiguous axes, the
//                 other axes as its batch
//   concat     1  generic: one thread per output element (div/mod), the inputs' pointers in a
//                 table passed by value
//              2  one kernel copying rows of `inner` elements from the pointer table, 16-byte
//                 vectors when the row allows (as permute's rows)
//              3  cudaMemcpy2DAsync per input (a strided copy by the copy engines or the
//                 driver's kernel; one call per input)
//
// Run: myops --backend own_cuda --variant 3 --problem transpose:8192x8192
//      myops --backend own_cuda --variant 2 --problem permute:64x128x256:perm=0,2,1:fp16
//      myops --backend own_cuda --variant 2 --problem concat:4096x4096:inputs=4:axis=1
//
// Figures of a scratch harness (not myops; no run folder keeps them), over this code before its
// last edits; myops's measurements of the op suite: results/h200/20261124_ops_preset_pure/ and
// 20261124_ops_xlarge_pure/.
// Measured on the H200 (GB/s of bytes read + written, median of 5 x >= 30 ms of back-to-back
// launches, no graph; cudaMemcpy D2D of 1 GiB: 4270; PyTorch 2.11 on the same machine):
//   problem (fp32 / fp16)                   best variant          others               PyTorch
//   copy:16777216                           v1 3884 / 3593        v2 3592 / 3407       3909 / 3614
//   copy:67108864                           v1 4176 / 4090        v2 3813 / 3673
//   transpose:8192x8192                     v3 3350 / 2648        v2 934 / 472, v1 1043 / 561
//                                                                                      1154 / 619
//   transpose:16x2048x1024                  v3 3241 / 2564                             1153 / 646
//   permute:64x512x512:perm=0,2,1 (tiled)   v2 3122 / 2350        v1 983 / 520         1151 / 670
//   permute:64x512x512:perm=2,0,1 (tiled)   v2 3069 / 2328        v1 961 / 548         1139 / 620
//   permute:64x512x512:perm=1,0,2 (rows)    v2 3610 / 3413        v1 1144 / 590        2587 / 1519
//   permute:32x64x64x64:perm=0,2,1,3 (rows) v2 3349 / 2910        v1 960 / 520         2295 / 1472
//   concat:4096x4096 (axis 0)               v2 3867 / 3611        v3 3898 / 3567       3903 / 3776
//   concat:4096x4096:axis=1                 v2 3811 / 3613        v3 1634 / 1574       3864 / 3712
//   concat:4096x256:inputs=64:axis=1        v2 3828 / 3679        v3 1084 / 812        4003 / 3921
// (bf16 as fp16.) The row kernels (permute v2 rows, concat v2) ran there with 8 blocks of 256 per
// SM, which leaves a partial second wave at their 48-64 registers; they take the resident blocks
// (occupancy x SMs), unmeasured by the harness. The fp16 tiles move 2-byte words through shared
// memory and reach 62% of the copy bandwidth, fp32 78%.
//
// Concat: the one kernel with the pointer table (v2) beats cudaMemcpy2DAsync per input (v3)
// everywhere but axis 0, where each input is one contiguous block and both run at the copy
// bandwidth: 2.3x at axis 1 with 2 inputs, 3.5-4.5x with 64 inputs (a call per input, each a
// strided copy of short rows).
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "core/cuda/cuda_check.hpp"
#include "ops/cuda/kernels.hpp"
#include "ops/cuda/launch.cuh"
#include "ops/cuda/memory_index.hpp"

namespace ops::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxInputs = 64;  // concat (ops/problem.cpp)

__device__ __forceinline__ std::int64_t global_thread() {
  return std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_threads() {
  return std::int64_t(gridDim.x) * blockDim.x;
}

// kVec words of E moved as one access.
template <class E, int kVec>
struct alignas(kVec * sizeof(E)) Vec {
  E v[kVec];
};

bool aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// ---- Copy -------------------------------------------------------------------------------------

// Bytes in 16-byte vectors (both pointers 16-byte aligned), 4 vectors per thread in flight; the
// rest (or all, when misaligned) byte by byte.
__global__ void __launch_bounds__(kThreads)
    copy_kernel(const unsigned char* __restrict__ src, unsigned char* __restrict__ dst,
                std::int64_t bytes) {
  const bool vector = reinterpret_cast<std::uintptr_t>(src) % 16 == 0 &&
                      reinterpret_cast<std::uintptr_t>(dst) % 16 == 0;
  const std::int64_t nv = vector ? bytes / 16 : 0, stride = grid_threads();
  const uint4* s = reinterpret_cast<const uint4*>(src);
  uint4* d = reinterpret_cast<uint4*>(dst);
  std::int64_t i = global_thread();
  for (; i + 3 * stride < nv; i += 4 * stride) {
    uint4 r[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) r[u] = s[i + u * stride];
#pragma unroll
    for (int u = 0; u < 4; ++u) d[i + u * stride] = r[u];
  }
  for (; i < nv; i += stride) d[i] = s[i];
  for (std::int64_t b = nv * 16 + global_thread(); b < bytes; b += stride) dst[b] = src[b];
}

void launch_copy(const void* src, void* dst, std::int64_t bytes, cudaStream_t s) {
  const unsigned blocks = persistent_grid<&copy_kernel, kThreads>(bytes / 16, kThreads * 4);
  copy_kernel<<<blocks, kThreads, 0, s>>>(static_cast<const unsigned char*>(src),
                                          static_cast<unsigned char*>(dst), bytes);
  CUDA_CHECK_LAST_LAUNCH();
}

// ---- Generic permute: one thread per output element ------------------------------------------

template <class E>
__global__ void __launch_bounds__(kThreads)
    permute_generic(const E* __restrict__ in, E* __restrict__ out, PermutePlan plan) {
  for (std::int64_t o = global_thread(); o < plan.elements; o += grid_threads())
    out[o] = in[permute_source(plan, o)];
}

template <class E>
void launch_permute_generic(const void* in, void* out, const PermutePlan& plan, cudaStream_t s) {
  const unsigned blocks = unsigned(grid_blocks(plan.elements, kThreads, INT32_MAX));
  permute_generic<E>
      <<<blocks, kThreads, 0, s>>>(static_cast<const E*>(in), static_cast<E*>(out), plan);
  CUDA_CHECK_LAST_LAUNCH();
}

// ---- Rows: the output as rows, each a contiguous run of some input ----------------------------

// A group of 2^lanes_log2 lanes copies a segment of 4 * lanes vectors of a row (4 per lane in
// flight); groups stride over the segments of all rows. Source::row(r) is row r's first vector.
template <class V, class Source>
__global__ void __launch_bounds__(kThreads)
    gather_rows(V* __restrict__ out, Source src, std::int64_t rows, std::int64_t row_vecs,
                int lanes_log2) {
  const int lanes = 1 << lanes_log2, lane = int(threadIdx.x) & (lanes - 1);
  const std::int64_t seg_vecs = 4 * lanes, segs_per_row = (row_vecs + seg_vecs - 1) / seg_vecs;
  const std::int64_t segments = rows * segs_per_row, groups = grid_threads() >> lanes_log2;
  for (std::int64_t g = global_thread() >> lanes_log2; g < segments; g += groups) {
    const std::int64_t row = g / segs_per_row, first = (g % segs_per_row) * seg_vecs + lane;
    const V* in = src.row(row);
    V* o = out + row * row_vecs;
    V r[4];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (first + u * lanes < row_vecs) r[u] = in[first + u * lanes];
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (first + u * lanes < row_vecs) o[first + u * lanes] = r[u];
  }
}

template <class E, class V>
struct PermuteRows {
  const E* in;
  PermutePlan plan;
  __device__ __forceinline__ const V* row(std::int64_t r) const {
    return reinterpret_cast<const V*>(in + permute_row_source(plan, r));
  }
};

// The inputs' pointers by value (64 x 8 bytes, well inside the kernel parameter limit).
struct InputTable {
  const void* in[kMaxInputs];
};

template <class E, class V>
struct ConcatRows {
  InputTable table;
  int inputs;
  std::int64_t inner;
  __device__ __forceinline__ const V* row(std::int64_t r) const {
    const E* base = static_cast<const E*>(table.in[r % inputs]);
    return reinterpret_cast<const V*>(base + (r / inputs) * inner);
  }
};

template <class V, class Source>
void launch_rows(void* out, const Source& src, std::int64_t rows, std::int64_t row_vecs,
                 cudaStream_t s) {
  const int lanes = row_group_lanes(row_vecs);
  int lanes_log2 = 0;
  while ((1 << lanes_log2) < lanes) ++lanes_log2;
  const std::int64_t segments = rows * ((row_vecs + 4 * lanes - 1) / (4 * lanes));
  const unsigned blocks =
      persistent_grid<&gather_rows<V, Source>, kThreads>(segments, kThreads / lanes);
  gather_rows<V, Source>
      <<<blocks, kThreads, 0, s>>>(static_cast<V*>(out), src, rows, row_vecs, lanes_log2);
  CUDA_CHECK_LAST_LAUNCH();
}

// ---- Tiled transpose --------------------------------------------------------------------------

// A kTile x kTile tile per step (blocks stride over the batch's tiles): threads kTile/kVec wide
// and kRows high read rows of the tile as kVec-word vectors into shared memory, then write the
// tile's columns as vectors along the output rows, each gathered from kVec shared rows. kPad
// words of padding per shared row keep both phases free of bank conflicts (33 words a row for
// 4-byte words: lane-neighbours in a column fall into neighbouring banks).
template <class E, int kTile, int kRows, int kVec, int kPad>
__global__ void __launch_bounds__(kTile / kVec * kRows)
    transpose_tiled(const E* __restrict__ in, E* __restrict__ out, TilePlan plan,
                    std::int64_t tiles_x, std::int64_t tiles_y) {
  using V = Vec<E, kVec>;
  __shared__ E tile[kTile][kTile + kPad];
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  const std::int64_t tiles = tiles_x * tiles_y * plan.batches;
  for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const std::int64_t bx = t % tiles_x, rest = t / tiles_x, by = rest % tiles_y,
                       batch = rest / tiles_y;
    std::int64_t in_base = 0, out_base = 0;
    tile_batch_offsets(plan, batch, in_base, out_base);
    const std::int64_t x0 = bx * kTile, y0 = by * kTile;
    {
      const std::int64_t x = x0 + tx * kVec;  // whole vectors: kVec divides nx
#pragma unroll
      for (int r = ty; r < kTile; r += kRows)
        if (x < plan.nx && y0 + r < plan.ny) {
          const V v = *reinterpret_cast<const V*>(in + in_base + (y0 + r) * plan.in_stride_y + x);
#pragma unroll
          for (int k = 0; k < kVec; ++k) tile[r][tx * kVec + k] = v.v[k];
        }
    }
    __syncthreads();
    {
      const std::int64_t y = y0 + tx * kVec;  // whole vectors: kVec divides ny
#pragma unroll
      for (int c = ty; c < kTile; c += kRows)
        if (x0 + c < plan.nx && y < plan.ny) {
          V v;
#pragma unroll
          for (int k = 0; k < kVec; ++k) v.v[k] = tile[tx * kVec + k][c];
          *reinterpret_cast<V*>(out + out_base + (x0 + c) * plan.out_stride_x + y) = v;
        }
    }
    __syncthreads();  // the tile is refilled at the next step
  }
}

// One block per tile (measured on the H200 at 8192x8192: 5-15% faster than a grid of resident
// blocks striding over the tiles; the kernel's loop only serves grids past 2^31 - 1 tiles).
template <class E, int kTile, int kRows, int kVec, int kPad>
void launch_tiled(const void* in, void* out, const TilePlan& plan, cudaStream_t s) {
  const std::int64_t tiles_x = (plan.nx + kTile - 1) / kTile,
                     tiles_y = (plan.ny + kTile - 1) / kTile;
  const unsigned blocks = unsigned(grid_blocks(tiles_x * tiles_y * plan.batches, 1, INT32_MAX));
  transpose_tiled<E, kTile, kRows, kVec, kPad><<<blocks, dim3(kTile / kVec, kRows), 0, s>>>(
      static_cast<const E*>(in), static_cast<E*>(out), plan, tiles_x, tiles_y);
  CUDA_CHECK_LAST_LAUNCH();
}

// ---- Per-op launchers -------------------------------------------------------------------------

// v3's vector width in words of E: 16 bytes when both sides and both pointers allow, else 1.
template <class E>
int tiled_vector(const TilePlan& plan, const void* in, const void* out) {
  const int v = vector_width(int(sizeof(E)), {plan.nx, plan.ny});
  return v > 1 && aligned(in, 16) && aligned(out, 16) ? v : 1;
}

// Tile shapes measured on the H200 (GB/s of bytes read + written; cudaMemcpy moves 4270):
//   fp32 8192x8192: 32x32 tile, 8x16 threads of two float4 each 3350; 64x64, 32x16 threads of
//     float2 3380; 64x64, 16x16 of float4 2980; 32x32, 8x32 threads of one float4 2650; 32x32,
//     32x8 threads of 4 scalars 2670 (v3's fallback); 32x32, 32x32 threads of one scalar 930 (v2)
//   fp16 8192x8192: 64x64 tile, 8x16 threads of four 8-half vectors 2660-2730 (bf16 64x1024x1024
//     alike); 128x128 2610; 64x64 with 4-half vectors 2340; 32x32, 32x8 scalars 1420
template <class E>
void launch_tiled_v3(const void* in, void* out, const TilePlan& plan, cudaStream_t s) {
  if (tiled_vector<E>(plan, in, out) == 1)
    launch_tiled<E, 32, 8, 1, 1>(in, out, plan, s);
  else if constexpr (sizeof(E) == 4)
    launch_tiled<E, 32, 16, 4, 1>(in, out, plan, s);
  else
    launch_tiled<E, 64, 16, 8, 2>(in, out, plan, s);
}

// Rows of the folded permute, vectorized when the row and the pointers allow.
template <class E>
void launch_permute_rows(const void* in, void* out, const PermutePlan& plan, cudaStream_t s) {
  const std::int64_t len = plan.dims[plan.rank - 1], rows = plan.elements / len;
  const int v = vector_width(int(sizeof(E)), {len});
  if (v > 1 && aligned(in, 16) && aligned(out, 16)) {
    using V = Vec<E, 16 / sizeof(E)>;
    launch_rows<V>(out, PermuteRows<E, V>{static_cast<const E*>(in), plan}, rows, len / v, s);
  } else {
    launch_rows<E>(out, PermuteRows<E, E>{static_cast<const E*>(in), plan}, rows, len, s);
  }
}

// permute v2 and the fallback of transpose v2 and v3 for shapes that fold to a copy or rows.
template <class E>
void launch_permute_folded(const void* in, void* out, const PermutePlan& plan, int tiled_variant,
                           cudaStream_t s) {
  switch (permute_kind(plan)) {
    case PermuteKind::copy:
      return launch_copy(in, out, plan.elements * std::int64_t(sizeof(E)), s);
    case PermuteKind::rows:
      return launch_permute_rows<E>(in, out, plan, s);
    case PermuteKind::tiled:
      if (tiled_variant == 2) return launch_tiled<E, 32, 32, 1, 1>(in, out, plan_tiles(plan), s);
      return launch_tiled_v3<E>(in, out, plan_tiles(plan), s);
  }
}

template <class E>
__global__ void __launch_bounds__(kThreads)
    concat_generic(InputTable table, int inputs, std::int64_t inner, E* __restrict__ out,
                   std::int64_t n) {
  for (std::int64_t o = global_thread(); o < n; o += grid_threads()) {
    const std::int64_t k = o / inner;
    out[o] = static_cast<const E*>(table.in[k % inputs])[(k / inputs) * inner + o % inner];
  }
}

template <class E>
void launch_concat(const OpArgs& args, int variant) {
  const ConcatPlan c = plan_concat(*args.p);
  InputTable table{};
  bool all_aligned = aligned(args.output, 16);
  for (int t = 0; t < c.inputs; ++t) {
    table.in[t] = args.inputs[std::size_t(t)];
    all_aligned = all_aligned && aligned(table.in[t], 16);
  }
  const std::int64_t rows = c.outer * c.inputs, n = rows * c.inner;
  cudaStream_t s = args.stream;
  if (variant == 1) {
    concat_generic<E><<<unsigned(grid_blocks(n, kThreads, INT32_MAX)), kThreads, 0, s>>>(
        table, c.inputs, c.inner, static_cast<E*>(args.output), n);
    CUDA_CHECK_LAST_LAUNCH();
  } else if (variant == 3) {
    const std::size_t row_bytes = std::size_t(c.inner) * sizeof(E);
    for (int t = 0; t < c.inputs; ++t)
      CUDA_CHECK(cudaMemcpy2DAsync(static_cast<unsigned char*>(args.output) + t * row_bytes,
                                   row_bytes * std::size_t(c.inputs), table.in[t], row_bytes,
                                   row_bytes, std::size_t(c.outer), cudaMemcpyDeviceToDevice, s));
  } else if (vector_width(int(sizeof(E)), {c.inner}) > 1 && all_aligned) {
    using V = Vec<E, 16 / sizeof(E)>;
    launch_rows<V>(args.output, ConcatRows<E, V>{table, c.inputs, c.inner}, rows,
                   c.inner / (16 / std::int64_t(sizeof(E))), s);
  } else {
    launch_rows<E>(args.output, ConcatRows<E, E>{table, c.inputs, c.inner}, rows, c.inner, s);
  }
}

template <class E>
void launch_typed(const OpArgs& args, int variant) {
  const Problem& p = *args.p;
  const void* in = args.inputs[0];
  cudaStream_t s = args.stream;
  switch (p.op) {
    case Op::copy:
      if (variant == 1) {
        CUDA_CHECK(cudaMemcpyAsync(args.output, in, std::size_t(p.input_elements()) * sizeof(E),
                                   cudaMemcpyDeviceToDevice, s));
      } else {
        launch_copy(in, args.output, p.input_elements() * std::int64_t(sizeof(E)), s);
      }
      return;
    case Op::transpose:
    case Op::permute: {
      const PermutePlan plan = plan_permute(p.shape, permutation_of(p));
      if (variant == 1) return launch_permute_generic<E>(in, args.output, plan, s);
      // permute v2 takes v3's tiles; transpose v2 and v3 their own.
      return launch_permute_folded<E>(in, args.output, plan, p.op == Op::permute ? 3 : variant, s);
    }
    case Op::concat:
      return launch_concat<E>(args, variant);
    default:
      throw std::logic_error("memory: not a memory op: " + to_string(p.op));
  }
}

// ---- The family -------------------------------------------------------------------------------

std::vector<int> variants(const Problem& p) {
  switch (p.op) {
    case Op::copy:
      return {1, 2};
    case Op::transpose:
      return {3, 2, 1};
    case Op::permute:
      return {2, 1};
    case Op::concat:
      return {2, 3, 1};
    default:
      return {};
  }
}

std::size_t workspace_bytes(const Problem&, int) {
  return 0;
}

void launch(const OpArgs& args, int variant) {
  if (bench::storage_bytes(args.p->dtype) == 4)
    launch_typed<std::uint32_t>(args, variant);
  else
    launch_typed<std::uint16_t>(args, variant);
}

std::string describe_tiled(const Problem& p, const PermutePlan& plan, int variant) {
  const int bytes = bench::storage_bytes(p.dtype);
  switch (permute_kind(plan)) {
    case PermuteKind::copy:
      return "folds to a copy: copy kernel, 16-byte vectors";
    case PermuteKind::rows:
      return "folds to rows of " + std::to_string(plan.dims[plan.rank - 1]) +
             " elements: rows copied by lane groups, " +
             (vector_width(bytes, {plan.dims[plan.rank - 1]}) > 1 ? "16-byte vectors"
                                                                  : "scalar words");
    case PermuteKind::tiled:
      break;
  }
  const TilePlan t = plan_tiles(plan);
  const std::string shape = std::to_string(t.batches) + " x " + std::to_string(t.ny) + " x " +
                            std::to_string(t.nx) + " (batch x rows x columns)";
  if (variant == 2)
    return "32x32 tiles in shared memory (+1 padding), 32x32 threads, one element each, " + shape;
  const int v = vector_width(bytes, {t.nx, t.ny});
  if (v == 1)
    return "32x32 tiles in shared memory (+1 padding), 32x8 threads, 4 elements each, " + shape;
  return bytes == 4 ? "32x32 tiles in shared memory (+1 padding), 8x16 threads, 128-bit loads "
                      "and stores, 8 elements each, " +
                          shape
                    : "64x64 tiles in shared memory (+2 padding), 8x16 threads, 128-bit loads "
                      "and stores, 32 elements each, " +
                          shape;
}

std::string describe(const Problem& p, int variant) {
  const std::string v = "v" + std::to_string(variant) + " " + to_string(p.op) + ": ";
  switch (p.op) {
    case Op::copy:
      return v + (variant == 1 ? "cudaMemcpyAsync device to device"
                               : "grid-stride copy kernel, 16-byte vectors, 4 per thread in "
                                 "flight, the resident blocks of 256");
    case Op::transpose:
    case Op::permute: {
      const PermutePlan plan = plan_permute(p.shape, permutation_of(p));
      if (variant == 1)
        return v + "generic, one thread per output element, div/mod over " +
               std::to_string(plan.rank) + " folded axes";
      return v + describe_tiled(p, plan, p.op == Op::permute ? 3 : variant);
    }
    case Op::concat: {
      const ConcatPlan c = plan_concat(p);
      const std::string rows =
          std::to_string(c.outer * c.inputs) + " rows of " + std::to_string(c.inner) + " elements";
      if (variant == 1) return v + "generic, one thread per output element, pointer table";
      if (variant == 3) return v + "cudaMemcpy2DAsync per input (" + rows + ")";
      return v + "one kernel, pointer table by value, " + rows + " copied by lane groups, " +
             (vector_width(bench::storage_bytes(p.dtype), {c.inner}) > 1 ? "16-byte vectors"
                                                                         : "scalar words");
    }
    default:
      return v + "not a memory op";
  }
}

}  // namespace

const KernelFamily& memory_family() {
  static const KernelFamily family{variants, workspace_bytes, launch, describe};
  return family;
}

}  // namespace ops::cuda
