// Our element ops (add sub mul div, the second operand the same shape or broadcast) and
// activations (relu sigmoid tanh gelu_erf gelu_tanh silu): the elementwise kernel family of the
// own_cuda backend (ops/cuda/kernels.hpp). Storage fp32, fp16 or bf16; every value is computed in
// float with the accurate functions (expf, tanhf, erff; no fast-math intrinsics: the activations'
// tolerance is a few fp32 ulps, ops/data.cpp) and rounded once to the output's type.
//
// Variants (the best for the problem first in variants(p)):
//   1  naive: one element per thread (grid-stride only past the grid's limit); the second
//      operand's offset by div/mod per folded dimension (memory_index.hpp)
//   2  grid-stride over 16-byte vectors (float4, 8 halves), two vectors per thread in flight, a
//      scalar tail; broadcast operands gathered element by element with the div/mod index
//   3  broadcast specialised (row: rhs vector at the column; column: one rhs value per vector;
//      scalar: one value per thread; general: the rhs row offset once per vector), vectorized
//      when the row length allows; the row/column position is carried from one grid-stride step
//      to the next by add-and-wrap, no division in the loop
//   4  one contiguous chunk of 2 vectors per thread per block, as many blocks as the data needs
//      (PyTorch's scheme); same shape and activations only
// Activations and same-shape element ops: {2, 4, 1}; broadcast element ops: {3, 2, 1}. The
// grid-stride variants take the resident blocks of 256 (occupancy x SMs, asked once per kernel).
//
// Run: myops --backend own_cuda --variant 2 --problem add:4096x4096+1x4096:fp16
//      myops --backend own_cuda --variant 1 --problem gelu_tanh:16777216:bf16
//
// Figures of a scratch harness (not myops; no run folder keeps them), over this code before its
// last edits; myops's measurements of the op suite: results/h200/20261124_ops_preset_pure/ and
// 20261124_ops_xlarge_pure/.
// Measured on the H200 (GB/s of Problem::bytes(), median of 5 x >= 30 ms of back-to-back
// launches, no graph; cudaMemcpy D2D of 1 GiB: 4270; PyTorch 2.11 on the same machine):
//   op (fp32 / fp16)                  v2 or v3 (best)  v1           PyTorch
//   add:4096x1024 (4M, same)          4278 / 5213      2078 / 2092  3826 / 4500
//   add:4096x4096 (16M, same)         3924 / 3734      2283 / 1515  4064 / 3859
//   add:8192x8192 (64M, same)         3990 / 3954      2357 / 1556
//   add:4096x4096+1x4096 (row)        3596 / 3464 v3   1284 /  652  2645 / 1550
//   add:4096x4096+4096x1 (column)     3643 / 3441 v3   1282 /  652  2574 / 1542
//   add:4096x4096+1x1 (scalar)        3640 / 3449 v3   1528 /  790  2762 / 1663
//   add:16x1024x1024+16x1x1024        3126 / 2897 v3   1100 /  553  2494 / 1404
//   relu 4M / 16M                     5304 / 4274, 3600 / 3590      5044 / 2503, 3864 / 3429
//   gelu_tanh 4M / 16M                4951 / 2711, 3534 / 2860      5224 / 2664, 3858 / 3120
//   gelu_erf, silu, sigmoid, tanh 16M 3449-3572 / 2603-3418         3837-3859 / 2820-3563
// (bf16 as fp16 within a few percent.) Those v2/v3 figures predate the occupancy-sized grids:
// they ran 8 blocks of 256 per SM, which left a partial second wave for kernels of more than 32
// registers (the 16-bit activations, the broadcast gathers); v4 is unmeasured: compare v2 and
// v4 before changing the order.
//
// Expected speed: v2, v3 and v4 near the device copy bandwidth at 16M and more (v2 at 92-93% for
// add, 83-84% for the fp32 activations, 61-80% for the 16-bit transcendental ones); v1 at about
// half of it (a 2- or 4-byte access per thread), broadcasts lower (64-bit div/mod per element).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
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
constexpr int kUnroll = 2;  // v2: vectors per thread in flight
constexpr int kChunk = 2;   // v4: vectors per thread

// ---- Storage types and the functions --------------------------------------------------------

template <class T>
__device__ __forceinline__ float to_float(T v);
template <>
__device__ __forceinline__ float to_float(float v) {
  return v;
}
template <>
__device__ __forceinline__ float to_float(__half v) {
  return __half2float(v);
}
template <>
__device__ __forceinline__ float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_float(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float(float v) {
  return __float2bfloat16_rn(v);
}

// 16 bytes of T: one LDG.128 / STG.128.
template <class T>
struct alignas(16) Pack {
  static constexpr int kSize = 16 / int(sizeof(T));
  T v[kSize];
};

template <Op kOp>
__device__ __forceinline__ float binary(float a, float b) {
  if constexpr (kOp == Op::add) return a + b;
  if constexpr (kOp == Op::sub) return a - b;
  if constexpr (kOp == Op::mul) return a * b;
  if constexpr (kOp == Op::div) return a / b;  // IEEE division (nvcc's -prec-div default)
  return 0.0f;
}

// The formulas of ops/ref_ops.cpp in float.
template <Op kOp>
__device__ __forceinline__ float unary(float x) {
  if constexpr (kOp == Op::relu) return x > 0.0f ? x : 0.0f;
  if constexpr (kOp == Op::sigmoid) return 1.0f / (1.0f + expf(-x));
  if constexpr (kOp == Op::tanh) return tanhf(x);
  if constexpr (kOp == Op::gelu_erf) return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  if constexpr (kOp == Op::gelu_tanh) {
    const float c = 0.79788456080286536f;  // sqrt(2 / pi)
    return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
  }
  if constexpr (kOp == Op::silu) return x / (1.0f + expf(-x));
  return 0.0f;
}

__device__ __forceinline__ std::int64_t global_thread() {
  return std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_threads() {
  return std::int64_t(gridDim.x) * blockDim.x;
}

// ---- Variant 1: one element per thread --------------------------------------------------------

template <Op kOp, class T>
__global__ void __launch_bounds__(kThreads) unary_v1(const T* x, T* y, std::int64_t n) {
  for (std::int64_t i = global_thread(); i < n; i += grid_threads())
    y[i] = from_float<T>(unary<kOp>(to_float(x[i])));
}

template <Op kOp, class T>
__global__ void __launch_bounds__(kThreads)
    binary_v1(const T* a, const T* b, T* y, std::int64_t n, BroadcastPlan plan) {
  for (std::int64_t i = global_thread(); i < n; i += grid_threads()) {
    const std::int64_t j = plan.kind == Broadcast::same ? i : broadcast_offset(plan, i);
    y[i] = from_float<T>(binary<kOp>(to_float(a[i]), to_float(b[j])));
  }
}

// ---- Variant 2: grid-stride over 16-byte vectors ----------------------------------------------

template <Op kOp, class T>
__global__ void __launch_bounds__(kThreads) unary_v2(const T* x, T* y, std::int64_t n) {
  using P = Pack<T>;
  const std::int64_t nv = n / P::kSize, stride = grid_threads();
  const P* xv = reinterpret_cast<const P*>(x);
  P* yv = reinterpret_cast<P*>(y);
  std::int64_t i = global_thread();
  // kUnroll vectors loaded before any is used: more bytes in flight per thread.
  for (; i + (kUnroll - 1) * stride < nv; i += kUnroll * stride) {
    P r[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) r[u] = xv[i + u * stride];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < P::kSize; ++k) r[u].v[k] = from_float<T>(unary<kOp>(to_float(r[u].v[k])));
      yv[i + u * stride] = r[u];
    }
  }
  for (; i < nv; i += stride) {
    P r = xv[i];
#pragma unroll
    for (int k = 0; k < P::kSize; ++k) r.v[k] = from_float<T>(unary<kOp>(to_float(r.v[k])));
    yv[i] = r;
  }
  const std::int64_t t = nv * P::kSize + global_thread();  // the tail: fewer than kSize
  if (t < n) y[t] = from_float<T>(unary<kOp>(to_float(x[t])));
}

// kSame: b has a's shape (vector loads); else b's element by the div/mod index of each element.
template <Op kOp, class T, bool kSame>
__global__ void __launch_bounds__(kThreads)
    binary_v2(const T* a, const T* b, T* y, std::int64_t n, BroadcastPlan plan) {
  using P = Pack<T>;
  const std::int64_t nv = n / P::kSize, stride = grid_threads();
  const P* av = reinterpret_cast<const P*>(a);
  const P* bv = reinterpret_cast<const P*>(b);
  P* yv = reinterpret_cast<P*>(y);
  auto load_b = [&](std::int64_t i) {
    if constexpr (kSame) {
      return bv[i];
    } else {
      P r;
#pragma unroll
      for (int k = 0; k < P::kSize; ++k) r.v[k] = b[broadcast_offset(plan, i * P::kSize + k)];
      return r;
    }
  };
  std::int64_t i = global_thread();
  for (; i + (kUnroll - 1) * stride < nv; i += kUnroll * stride) {
    P ra[kUnroll], rb[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      ra[u] = av[i + u * stride];
      rb[u] = load_b(i + u * stride);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < P::kSize; ++k)
        ra[u].v[k] = from_float<T>(binary<kOp>(to_float(ra[u].v[k]), to_float(rb[u].v[k])));
      yv[i + u * stride] = ra[u];
    }
  }
  for (; i < nv; i += stride) {
    P ra = av[i];
    const P rb = load_b(i);
#pragma unroll
    for (int k = 0; k < P::kSize; ++k)
      ra.v[k] = from_float<T>(binary<kOp>(to_float(ra.v[k]), to_float(rb.v[k])));
    yv[i] = ra;
  }
  const std::int64_t t = nv * P::kSize + global_thread();
  if (t < n) {
    const std::int64_t j = kSame ? t : broadcast_offset(plan, t);
    y[t] = from_float<T>(binary<kOp>(to_float(a[t]), to_float(b[j])));
  }
}

// ---- Variant 3: broadcast specialised ---------------------------------------------------------

// Steps of kVec elements (16 bytes, or 1 where the row length or a pointer does not allow); a row
// of plan.cols elements holds a whole number of steps, so a step never crosses a row.
template <int kVec, class T>
struct alignas(kVec * sizeof(T)) Step {
  T v[kVec];
};

template <Op kOp, class T, Broadcast kKind, int kVec>
__global__ void __launch_bounds__(kThreads)
    binary_v3(const T* a, const T* b, T* y, std::int64_t n, BroadcastPlan plan) {
  using S = Step<kVec, T>;
  const S* as = reinterpret_cast<const S*>(a);
  S* ys = reinterpret_cast<S*>(y);
  const std::int64_t ns = n / kVec, cols = plan.cols / kVec, stride = grid_threads();
  std::int64_t i = global_thread();
  // The (row, column) of step i, carried across grid-stride steps by add-and-wrap.
  std::int64_t row = i / cols, col = i % cols;
  const std::int64_t row_step = stride / cols, col_step = stride % cols;
  const float scalar = kKind == Broadcast::scalar ? to_float(b[0]) : 0.0f;
  for (; i < ns; i += stride) {
    S r = as[i];
    if constexpr (kKind == Broadcast::row ||
                  kKind == Broadcast::general) {  // one rhs value per element, or per step
      const std::int64_t base = kKind == Broadcast::row ? 0 : broadcast_row_offset(plan, row);
      if (kKind == Broadcast::general && plan.inner_broadcast) {
        const float s = to_float(__ldg(b + base));
#pragma unroll
        for (int k = 0; k < kVec; ++k) r.v[k] = from_float<T>(binary<kOp>(to_float(r.v[k]), s));
      } else {
        // The rhs row is small and read by every row: L1 and L2 keep it.
        const S rb = *reinterpret_cast<const S*>(b + base + col * kVec);
#pragma unroll
        for (int k = 0; k < kVec; ++k)
          r.v[k] = from_float<T>(binary<kOp>(to_float(r.v[k]), to_float(rb.v[k])));
      }
    } else {
      const float s = kKind == Broadcast::scalar ? scalar : to_float(__ldg(b + row));
#pragma unroll
      for (int k = 0; k < kVec; ++k) r.v[k] = from_float<T>(binary<kOp>(to_float(r.v[k]), s));
    }
    ys[i] = r;
    col += col_step;
    row += row_step;
    if (col >= cols) {
      col -= cols;
      ++row;
    }
  }
}

// ---- Variant 4: one contiguous chunk per block -----------------------------------------------

// Block b moves vectors [b, b + 1) * kThreads * kChunk, thread t the vectors t + u * kThreads of
// it: the grid is as large as the data (PyTorch's vectorized_elementwise_kernel's scheme), so the
// blocks in flight at any moment cover one contiguous window of memory. The last block also does
// the scalar tail. kSame (binary): b has a's shape.
template <Op kOp, class T, int kChunk>
__global__ void __launch_bounds__(kThreads) unary_v4(const T* x, T* y, std::int64_t n) {
  using P = Pack<T>;
  const std::int64_t nv = n / P::kSize;
  const std::int64_t first = std::int64_t(blockIdx.x) * kThreads * kChunk + threadIdx.x;
  const P* xv = reinterpret_cast<const P*>(x);
  P* yv = reinterpret_cast<P*>(y);
  P r[kChunk];
#pragma unroll
  for (int u = 0; u < kChunk; ++u)
    if (first + u * kThreads < nv) r[u] = xv[first + u * kThreads];
#pragma unroll
  for (int u = 0; u < kChunk; ++u)
    if (first + u * kThreads < nv) {
#pragma unroll
      for (int k = 0; k < P::kSize; ++k) r[u].v[k] = from_float<T>(unary<kOp>(to_float(r[u].v[k])));
      yv[first + u * kThreads] = r[u];
    }
  if (blockIdx.x == gridDim.x - 1) {
    const std::int64_t t = nv * P::kSize + threadIdx.x;  // fewer than kSize
    if (t < n) y[t] = from_float<T>(unary<kOp>(to_float(x[t])));
  }
}

template <Op kOp, class T, int kChunk>
__global__ void __launch_bounds__(kThreads)
    binary_v4(const T* a, const T* b, T* y, std::int64_t n) {
  using P = Pack<T>;
  const std::int64_t nv = n / P::kSize;
  const std::int64_t first = std::int64_t(blockIdx.x) * kThreads * kChunk + threadIdx.x;
  const P* av = reinterpret_cast<const P*>(a);
  const P* bv = reinterpret_cast<const P*>(b);
  P* yv = reinterpret_cast<P*>(y);
  P ra[kChunk], rb[kChunk];
#pragma unroll
  for (int u = 0; u < kChunk; ++u)
    if (first + u * kThreads < nv) {
      ra[u] = av[first + u * kThreads];
      rb[u] = bv[first + u * kThreads];
    }
#pragma unroll
  for (int u = 0; u < kChunk; ++u)
    if (first + u * kThreads < nv) {
#pragma unroll
      for (int k = 0; k < P::kSize; ++k)
        ra[u].v[k] = from_float<T>(binary<kOp>(to_float(ra[u].v[k]), to_float(rb[u].v[k])));
      yv[first + u * kThreads] = ra[u];
    }
  if (blockIdx.x == gridDim.x - 1) {
    const std::int64_t t = nv * P::kSize + threadIdx.x;
    if (t < n) y[t] = from_float<T>(binary<kOp>(to_float(a[t]), to_float(b[t])));
  }
}

// ---- Dispatch ---------------------------------------------------------------------------------

template <Op kOp>
using OpTag = std::integral_constant<Op, kOp>;

template <class F>
void with_type(DataType dt, F&& f) {
  switch (dt) {
    case DataType::fp32:
      return f(float{});
    case DataType::fp16:
      return f(__half{});
    case DataType::bf16:
      return f(__nv_bfloat16{});
    case DataType::tf32:
      break;
  }
  throw std::logic_error("elementwise: no kernel for " + bench::to_string(dt));
}

template <class F>
void with_binary_op(Op op, F&& f) {
  switch (op) {
    case Op::add:
      return f(OpTag<Op::add>{});
    case Op::sub:
      return f(OpTag<Op::sub>{});
    case Op::mul:
      return f(OpTag<Op::mul>{});
    case Op::div:
      return f(OpTag<Op::div>{});
    default:
      throw std::logic_error("elementwise: not an element op: " + to_string(op));
  }
}

template <class F>
void with_unary_op(Op op, F&& f) {
  switch (op) {
    case Op::relu:
      return f(OpTag<Op::relu>{});
    case Op::sigmoid:
      return f(OpTag<Op::sigmoid>{});
    case Op::tanh:
      return f(OpTag<Op::tanh>{});
    case Op::gelu_erf:
      return f(OpTag<Op::gelu_erf>{});
    case Op::gelu_tanh:
      return f(OpTag<Op::gelu_tanh>{});
    case Op::silu:
      return f(OpTag<Op::silu>{});
    default:
      throw std::logic_error("elementwise: not an activation: " + to_string(op));
  }
}

bool aligned16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

bool is_broadcast(const Problem& p) {
  return p.category() == Category::element &&
         plan_broadcast(p.shape, p.rhs).kind != Broadcast::same;
}

// v3: 16-byte steps when the row length (all of it for a scalar) allows.
int v3_vector(const Problem& p, const BroadcastPlan& plan) {
  return vector_width(bench::storage_bytes(p.dtype), {plan.cols});
}

std::vector<int> variants(const Problem& p) {
  if (p.category() == Category::activation) return {2, 4, 1};
  if (p.category() != Category::element) return {};
  return is_broadcast(p) ? std::vector<int>{3, 2, 1} : std::vector<int>{2, 4, 1};
}

std::size_t workspace_bytes(const Problem&, int) {
  return 0;
}

void launch(const OpArgs& args, int variant) {
  const Problem& p = *args.p;
  const std::int64_t n = p.output_elements();
  const BroadcastPlan plan = plan_broadcast(p.shape, p.rhs);
  const bool unary_op = p.category() == Category::activation;
  const bool all_aligned = aligned16(args.inputs[0]) && aligned16(args.output) &&
                           (unary_op || aligned16(args.inputs[1]));
  // v2 and v3 fall back to v1's kernel where a pointer is not 16-byte aligned (cudaMalloc's are).
  if (variant != 1 && !all_aligned) variant = 1;
  cudaStream_t s = args.stream;
  with_type(p.dtype, [&](auto type_tag) {
    using T = decltype(type_tag);
    const T* a = static_cast<const T*>(args.inputs[0]);
    T* y = static_cast<T*>(args.output);
    const std::int64_t vec = Pack<T>::kSize;
    if (unary_op) {
      with_unary_op(p.op, [&](auto op_tag) {
        constexpr Op kOp = decltype(op_tag)::value;
        if (variant == 1) {
          unary_v1<kOp, T>
              <<<unsigned(grid_blocks(n, kThreads, INT32_MAX)), kThreads, 0, s>>>(a, y, n);
        } else if (variant == 4) {
          const unsigned blocks = unsigned(grid_blocks(n / vec, kThreads * kChunk, INT32_MAX));
          unary_v4<kOp, T, kChunk><<<blocks, kThreads, 0, s>>>(a, y, n);
        } else {
          const unsigned blocks =
              persistent_grid<&unary_v2<kOp, T>, kThreads>(n / vec, kThreads * kUnroll);
          unary_v2<kOp, T><<<blocks, kThreads, 0, s>>>(a, y, n);
        }
        CUDA_CHECK_LAST_LAUNCH();
      });
      return;
    }
    const T* b = static_cast<const T*>(args.inputs[1]);
    with_binary_op(p.op, [&](auto op_tag) {
      constexpr Op kOp = decltype(op_tag)::value;
      const bool same = plan.kind == Broadcast::same;
      if (variant == 1) {
        binary_v1<kOp, T>
            <<<unsigned(grid_blocks(n, kThreads, INT32_MAX)), kThreads, 0, s>>>(a, b, y, n, plan);
      } else if (variant == 4 && same) {
        const unsigned blocks = unsigned(grid_blocks(n / vec, kThreads * kChunk, INT32_MAX));
        binary_v4<kOp, T, kChunk><<<blocks, kThreads, 0, s>>>(a, b, y, n);
      } else if (variant == 2 || same) {
        const std::int64_t per_block = kThreads * kUnroll;
        if (same)
          binary_v2<kOp, T, true>
              <<<persistent_grid<&binary_v2<kOp, T, true>, kThreads>(n / vec, per_block), kThreads,
                 0, s>>>(a, b, y, n, plan);
        else
          binary_v2<kOp, T, false>
              <<<persistent_grid<&binary_v2<kOp, T, false>, kThreads>(n / vec, per_block), kThreads,
                 0, s>>>(a, b, y, n, plan);
      } else {
        const bool wide = v3_vector(p, plan) > 1;
        auto go = [&](auto kind_tag) {
          constexpr Broadcast kKind = decltype(kind_tag)::value;
          constexpr int kVec = Pack<T>::kSize;
          if (wide)
            binary_v3<kOp, T, kKind, kVec>
                <<<persistent_grid<&binary_v3<kOp, T, kKind, kVec>, kThreads>(n / kVec, kThreads),
                   kThreads, 0, s>>>(a, b, y, n, plan);
          else
            binary_v3<kOp, T, kKind, 1>
                <<<persistent_grid<&binary_v3<kOp, T, kKind, 1>, kThreads>(n, kThreads), kThreads,
                   0, s>>>(a, b, y, n, plan);
        };
        switch (plan.kind) {
          case Broadcast::scalar:
            go(std::integral_constant<Broadcast, Broadcast::scalar>{});
            break;
          case Broadcast::row:
            go(std::integral_constant<Broadcast, Broadcast::row>{});
            break;
          case Broadcast::column:
            go(std::integral_constant<Broadcast, Broadcast::column>{});
            break;
          default:
            go(std::integral_constant<Broadcast, Broadcast::general>{});
        }
      }
      CUDA_CHECK_LAST_LAUNCH();
    });
  });
}

// The grid of the grid-stride variants (2, 3).
const char* const kPersistentGrid = "grid-stride over the resident blocks (occupancy x SMs) x 256";

std::string describe(const Problem& p, int variant) {
  const int bytes = bench::storage_bytes(p.dtype), vec = 16 / bytes;
  const std::int64_t n = p.output_elements();
  const BroadcastPlan plan = plan_broadcast(p.shape, p.rhs);
  const std::string what = p.category() == Category::activation ? "activation" : "elementwise";
  const std::string rhs = plan.kind == Broadcast::same     ? ""
                          : plan.kind == Broadcast::scalar ? "scalar rhs"
                          : plan.kind == Broadcast::row    ? "row rhs"
                          : plan.kind == Broadcast::column ? "column rhs"
                                                           : "general broadcast rhs";
  switch (variant) {
    case 1:
      return "v1 " + what + ": naive, one element per thread" +
             (rhs.empty() ? "" : ", " + rhs + " by div/mod per dimension") + ", " +
             std::to_string(grid_blocks(n, kThreads, INT32_MAX)) + " blocks x " +
             std::to_string(kThreads);
    case 2:
      return "v2 " + what + ": grid-stride, 128-bit loads, " + std::to_string(vec) + " " +
             bench::to_string(p.dtype) + " per vector, " + std::to_string(kUnroll) +
             " vectors per thread in flight" +
             (rhs.empty() ? "" : ", " + rhs + " gathered by div/mod per element") + ", " +
             kPersistentGrid;
    case 3: {
      const int v = plan.kind == Broadcast::same ? vec : v3_vector(p, plan);
      const std::string how = plan.kind == Broadcast::row      ? "rhs vector at the column"
                              : plan.kind == Broadcast::column ? "one rhs value per row"
                              : plan.kind == Broadcast::scalar ? "rhs value held per thread"
                                                               : "rhs row offset per step";
      return "v3 elementwise: " + rhs + " specialised (" + how + "), grid-stride, " +
             (v > 1 ? "128-bit loads, " + std::to_string(v) + " per step"
                    : "scalar steps (row length not a multiple of 16 bytes)") +
             ", " + kPersistentGrid;
    }
    case 4:
      return "v4 " + what + ": one contiguous chunk per block, 128-bit loads, " +
             std::to_string(vec) + " " + bench::to_string(p.dtype) + " per vector, " +
             std::to_string(kChunk) + " vectors per thread, " +
             std::to_string(grid_blocks(n / vec, kThreads * kChunk, INT32_MAX)) + " blocks x " +
             std::to_string(kThreads);
    default:
      return "v" + std::to_string(variant) + " elementwise: no such variant";
  }
}

}  // namespace

const KernelFamily& elementwise_family() {
  static const KernelFamily family{variants, workspace_bytes, launch, describe};
  return family;
}

}  // namespace ops::cuda
