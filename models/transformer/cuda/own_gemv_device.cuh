// What the decode step's GEMV kernels share (own_decode_kernels.cu: the SIMT variants 1 and 2 and
// the dispatch norm_gemv; own_gemv_mma_kernels.cu: the tensor-core GEMV): the row pairs a warp
// owns, the prologue that stages the input rows (embedding, RMSNorm or LayerNorm) in shared
// memory, the epilogue that finishes two output rows, and the tensor-core GEMV's launch.
#pragma once

#include <cstddef>
#include <cstdint>

#include "models/transformer/cuda/own_decode_device.cuh"
#include "models/transformer/cuda/own_decode_kernels.hpp"
#include "models/transformer/cuda/own_decode_math.hpp"

namespace transformer::cuda::own_device {

// Rows of the batch one pass of a warp carries (more rows: another pass over the same weight rows,
// from L2); 16-byte loads each lane keeps in flight per weight row.
constexpr int kBatchTile = 16;
constexpr int kUnroll = 4;
constexpr int kMaxWarps = 8;
// Warps of a block the shared prologue's reductions (stage_input) allow: the persistent step's
// blocks are larger than the GEMV kernels'.
constexpr int kMaxBlockWarps = 16;

__host__ __device__ inline int pairs_of(const GemvArgs& a) {
  return a.epilogue == Epilogue::rope_kv || a.epilogue == Epilogue::swiglu ? a.n / 2
                                                                           : (a.n + 1) / 2;
}

// The two output rows of a pair of a GEMV with epilogue e (head_dim d, n rows): the halves a RoPE
// rotation mixes (j, j + d/2 of a head), gate and up of one SwiGLU unit, else neighbours (r1 = -1
// past an odd n).
__host__ __device__ __forceinline__ void pair_rows(Epilogue e, int d, int n, int pair, int& r0,
                                                   int& r1) {
  if (e == Epilogue::rope_kv) {
    const int half = d / 2, head = pair / half, j = pair % half;
    r0 = head * d + j;
    r1 = r0 + half;
  } else if (e == Epilogue::swiglu) {
    r0 = pair;
    r1 = n / 2 + pair;
  } else {
    r0 = 2 * pair;
    r1 = r0 + 1 < n ? r0 + 1 : -1;
  }
}

__device__ __forceinline__ void rows_of(const GemvArgs& a, int pair, int& r0, int& r1) {
  pair_rows(a.epilogue, a.d, a.n, pair, r0, r1);
}

// Sum of v over the `g` warps of a group (group-major warps), through red[warps]: every thread
// of the block calls it (two barriers).
__device__ __forceinline__ float group_sum(float v, float* red, int g) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  v = warp_sum(v);
  __syncthreads();  // red's previous values are read
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float s = 0;
  const int first = warp / g * g;
  for (int w = 0; w < g && first + w < blockDim.x / 32; ++w) s += red[first + w];
  return s;
}

// 16-byte vectors a thread of stage_input keeps in flight while copying the input rows.
constexpr int kStageUnroll = 8;

// The block's input rows into xs [batch][k]: the embedding (written to x_out too, the residual
// stream, where write_out: block 0 of a GEMV) or a copy of x (16-byte vectors, kStageUnroll of them
// loaded before any is stored); then RMSNorm (float32 statistics, cast back, times the weight, as
// Qwen2RMSNorm) or LayerNorm (float32, one rounding, as at::layer_norm), a 16-byte vector of a row
// at a time. A row's statistics are summed by a group of warps (all of them at batch 1, one a row
// from batch = warps on). k is a multiple of 16 bytes of elements (gemv_supported).
template <typename T>
__device__ void stage_input(const GemvArgs& a, T* xs, bool write_out = blockIdx.x == 0) {
  constexpr int V = vec_elems<T>();
  const int k = a.k, total = a.batch * k;
  if (a.ids) {
    const T* wte = static_cast<const T*>(a.wte);
    const T* wpe = static_cast<const T*>(a.wpe);
    const std::int64_t pos = *a.pos;
    T* x_out = write_out ? static_cast<T*>(a.x_out) : nullptr;
    for (int i = threadIdx.x; i < total; i += blockDim.x) {
      const int b = i / k, c = i % k;
      T v = wte[a.ids[b] * k + c];
      if (wpe) v = from_f<T>(__fadd_rn(to_f(v), to_f(wpe[pos * k + c])));
      xs[i] = v;
      if (x_out) x_out[i] = v;
    }
  } else {
    const uint4* src = static_cast<const uint4*>(a.x);
    uint4* dst = reinterpret_cast<uint4*>(xs);
    const int vecs = total / V, step = blockDim.x * kStageUnroll;
    for (int i0 = threadIdx.x; i0 < vecs; i0 += step) {
      uint4 v[kStageUnroll];
#pragma unroll
      for (int u = 0; u < kStageUnroll; ++u)
        if (i0 + u * blockDim.x < vecs) v[u] = src[i0 + u * blockDim.x];
#pragma unroll
      for (int u = 0; u < kStageUnroll; ++u)
        if (i0 + u * blockDim.x < vecs) dst[i0 + u * blockDim.x] = v[u];
    }
  }
  __syncthreads();
  if (a.norm == NormKind::none) return;
  __shared__ float red[kMaxBlockWarps];
  const int warps = blockDim.x / 32, warp = threadIdx.x / 32;
  const int g = max(1, warps / a.batch), groups = warps / g;  // g warps a row, groups rows at once
  const int group = warp / g, t = (warp % g) * 32 + threadIdx.x % 32, stride = g * 32;
  const int kv = k / V;
  const T* w = static_cast<const T*>(a.norm_w);
  const T* bias = static_cast<const T*>(a.norm_b);
  const int rounds = (a.batch + groups - 1) / groups;
  for (int r = 0; r < rounds; ++r) {  // the same count for every thread: group_sum's barriers
    const int b = r * groups + group;
    const bool active = group < groups && b < a.batch;
    uint4* row = reinterpret_cast<uint4*>(xs + std::size_t(active ? b : 0) * k);
    // The vector c of the row, normalized: out[i] = f(x[i], element c V + i).
    const auto rewrite = [&](int c, auto f) {
      float x[V];
      unpack<T>(row[c], x);
      uint4 o;
      T* oe = reinterpret_cast<T*>(&o);
#pragma unroll
      for (int i = 0; i < V; ++i) oe[i] = from_f<T>(f(x[i], c * V + i));
      row[c] = o;
    };
    if (a.norm == NormKind::rms) {
      float ss = 0;
      if (active)
        for (int c = t; c < kv; c += stride) {
          float x[V];
          unpack<T>(row[c], x);
#pragma unroll
          for (int i = 0; i < V; ++i) ss += x[i] * x[i];
        }
      const float inv = rsqrtf(group_sum(ss, red, g) / float(k) + a.eps);
      if (active)
        for (int c = t; c < kv; c += stride)
          rewrite(c, [&](float x, int e) { return __fmul_rn(to_f(w[e]), round_to<T>(x * inv)); });
    } else {
      float s = 0;
      if (active)
        for (int c = t; c < kv; c += stride) {
          float x[V];
          unpack<T>(row[c], x);
#pragma unroll
          for (int i = 0; i < V; ++i) s += x[i];
        }
      const float mean = group_sum(s, red, g) / float(k);
      float v = 0;
      if (active)
        for (int c = t; c < kv; c += stride) {
          float x[V];
          unpack<T>(row[c], x);
#pragma unroll
          for (int i = 0; i < V; ++i) v += (x[i] - mean) * (x[i] - mean);
        }
      const float inv = rsqrtf(group_sum(v, red, g) / float(k) + a.eps);
      if (active)
        for (int c = t; c < kv; c += stride)
          rewrite(c, [&](float x, int e) {
            return (x - mean) * inv * to_f(w[e]) + (bias ? to_f(bias[e]) : 0);
          });
    }
  }
  __syncthreads();
}

// What the GEMV's sums y0, y1 (rows r0, r1, batch row b) become; roundings as the eager model's
// ATen ops make them: the linear's output, then each op after it.
template <typename T>
__device__ void finish_rows(const GemvArgs& a, int b, int pair, int r0, int r1, float y0,
                            float y1) {
  const T* bias = static_cast<const T*>(a.bias);
  if (bias) {
    y0 += to_f(bias[r0]);
    if (r1 >= 0) y1 += to_f(bias[r1]);
  }
  T* out = static_cast<T*>(a.out);
  const std::size_t row = std::size_t(b) * a.n;
  switch (a.epilogue) {
    case Epilogue::store:
      out[row + r0] = from_f<T>(y0);
      if (r1 >= 0) out[row + r1] = from_f<T>(y1);
      break;
    case Epilogue::gelu:
      out[row + r0] = from_f<T>(own::gelu_new_f(round_to<T>(y0)));
      if (r1 >= 0) out[row + r1] = from_f<T>(own::gelu_new_f(round_to<T>(y1)));
      break;
    case Epilogue::residual:
      out[row + r0] = from_f<T>(__fadd_rn(to_f(out[row + r0]), round_to<T>(y0)));
      if (r1 >= 0) out[row + r1] = from_f<T>(__fadd_rn(to_f(out[row + r1]), round_to<T>(y1)));
      break;
    case Epilogue::swiglu: {
      const int inter = a.n / 2;
      const float g = round_to<T>(y0), u = round_to<T>(y1);
      out[std::size_t(b) * inter + pair] = from_f<T>(__fmul_rn(round_to<T>(own::silu_f(g)), u));
      break;
    }
    case Epilogue::rope_kv: {
      const int half = a.d / 2, head = r0 / a.d, j = r0 % a.d;
      const std::int64_t pos = *a.pos;
      float v0 = round_to<T>(y0), v1 = round_to<T>(y1);
      if (a.inv_freq && head < a.nq + a.nkv) {  // x * cos + rotate_half(x) * sin
        const float f = __fmul_rn(static_cast<float>(pos), a.inv_freq[j]);
        const float c = round_to<T>(cosf(f)), s = round_to<T>(sinf(f));
        const float o0 =
            round_to<T>(__fadd_rn(round_to<T>(__fmul_rn(v0, c)), round_to<T>(__fmul_rn(-v1, s))));
        const float o1 =
            round_to<T>(__fadd_rn(round_to<T>(__fmul_rn(v1, c)), round_to<T>(__fmul_rn(v0, s))));
        v0 = o0;
        v1 = o1;
      }
      T* dst;
      if (head < a.nq) {
        dst = out + (std::size_t(b) * a.nq + head) * a.d;
      } else {
        const bool is_k = head < a.nq + a.nkv;
        const int kv_head = is_k ? head - a.nq : head - a.nq - a.nkv;
        dst = static_cast<T*>(is_k ? a.cache_k : a.cache_v) +
              ((std::size_t(b) * a.nkv + kv_head) * a.max_len + pos) * a.d;
      }
      dst[j] = from_f<T>(v0);
      dst[j + half] = from_f<T>(v1);
      break;
    }
  }
}

// The SIMT GEMV's pass (norm_gemv_kernel_v2, the persistent step): kBatchTile2 batch rows, and
// kUnroll2 16-byte vectors of each of a pair's rows a thread holds at once.
constexpr int kBatchTile2 = 4;
constexpr int kUnroll2 = 3;

// acc0[bb], acc1[bb] += the loaded vectors of rows r0, r1 times x row b0 + bb's.
template <typename T>
__device__ __forceinline__ void fma_rows(const uint4* wa, const uint4* wb, const T* x, int k,
                                         int b0, int nb, int t, int j0, int stride, int kvec,
                                         float* acc0, float* acc1) {
  constexpr int V = vec_elems<T>();
#pragma unroll
  for (int u = 0; u < kUnroll2; ++u) {
    const int v = t + (j0 + u) * stride;
    if (v >= kvec) break;
    float fa[V], fb[V];
    unpack<T>(wa[u], fa);
    unpack<T>(wb[u], fb);
#pragma unroll
    for (int bb = 0; bb < kBatchTile2; ++bb) {
      if (bb >= nb) break;
      const uint4 xv =
          *reinterpret_cast<const uint4*>(x + std::size_t(b0 + bb) * k + std::size_t(v) * V);
      float fx[V];
      unpack<T>(xv, fx);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        acc0[bb] = fmaf(fa[i], fx[i], acc0[bb]);
        acc1[bb] = fmaf(fb[i], fx[i], acc1[bb]);
      }
    }
  }
}

// The pass's sums of a row pair: lane bb of the group's lead warp (lead: warp % g == 0) gets
// batch row b0 + bb's sums of both rows in s0, s1 (the other lanes and warps: partial values).
// Every thread of the block calls it where g > 1 (the group's warps add up through red, two
// barriers).
__device__ __forceinline__ void pair_sums(const float* acc0, const float* acc1, int nbt, int g,
                                          float (*red)[2][kBatchTile2], float& s0, float& s1) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  s0 = s1 = 0;  // lane bb keeps batch row b0 + bb's sums
#pragma unroll
  for (int bb = 0; bb < kBatchTile2; ++bb) {
    if (bb >= nbt) break;
    const float t0 = warp_sum(acc0[bb]), t1 = warp_sum(acc1[bb]);
    if (lane == bb) {
      s0 = t0;
      s1 = t1;
    }
  }
  if (g > 1) {  // the group's warps: through shared memory
    if (lane < nbt) {
      red[warp][0][lane] = s0;
      red[warp][1][lane] = s1;
    }
    __syncthreads();
    if (warp % g == 0 && lane < nbt) {
      s0 = s1 = 0;
      for (int w = 0; w < g; ++w) {
        s0 += red[warp + w][0][lane];
        s1 += red[warp + w][1][lane];
      }
    }
    __syncthreads();  // red is read before the next pass writes it
  }
}

// Warps of a block: kMmaWarps (two blocks a multiprocessor: up to 128 registers a thread), or
// kMmaMaxWarps where the GEMV has fewer tiles than multiprocessors (its k split over more warps).
constexpr int kMmaWarps = 8;
constexpr int kMmaMaxWarps = 16;
constexpr int kMmaUnroll = 4;
// Shared memory of the tiles' sums: [2 buffers][kMmaMaxWarps][2 n-tiles][4][32 lanes] floats.
constexpr std::size_t kMmaSumBytes = sizeof(float) * 2 * kMmaMaxWarps * 2 * 4 * 32;

// Whether the tensor-core GEMV copies its input rows into shared memory (a prologue makes them
// there, or they fit beside the sums), else reads them from global memory in its MMA loop.
__host__ __device__ inline bool mma_stages(const GemvArgs& a, std::size_t elem) {
  return a.norm != NormKind::none || a.ids ||
         std::size_t(a.batch) * a.k * elem + kMmaSumBytes <= kMaxShared;
}

// Warps of norm_rows_kernel's block (one input row).
constexpr int kNormRowsWarps = 8;

// norm_rows_kernel (own_gemv_mma_kernels.cu): a's input rows (embedding, norm) into a.xn, a block
// a row, k elements of shared memory.
void launch_norm_rows(const GemvArgs& a, Elem e, bool pdl, cudaStream_t s);

// mma_gemv_kernel (own_gemv_mma_kernels.cu) for element type e (fp16, bf16) on `blocks` blocks of
// `warps` warps with `shared` bytes of shared memory (gemv_shared_bytes).
void launch_mma_gemv(const GemvArgs& a, Elem e, int blocks, int warps, std::size_t shared, bool pdl,
                     cudaStream_t s);

}  // namespace transformer::cuda::own_device
