#include "models/transformer/own_decode_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/cuda/cuda_check.hpp"
#include "models/transformer/elem.cuh"
#include "models/transformer/own_decode_math.hpp"

namespace transformer::cuda {
namespace {

// Rows of the batch one pass of a warp carries (more rows: another pass over the same weight rows,
// from L2); 16-byte loads each lane keeps in flight per weight row.
constexpr int kBatchTile = 16;
constexpr int kUnroll = 4;
constexpr int kMaxWarps = 8;
constexpr int kAttentionThreads = 128;

template <typename T>
__host__ __device__ constexpr int vec_elems() {
  return 16 / static_cast<int>(sizeof(T));
}

template <typename T>
__device__ __forceinline__ void unpack(const uint4& u, float* f) {
  const T* e = reinterpret_cast<const T*>(&u);
#pragma unroll
  for (int i = 0; i < vec_elems<T>(); ++i) f[i] = to_f(e[i]);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

__host__ __device__ inline int pairs_of(const GemvArgs& a) {
  return a.epilogue == Epilogue::rope_kv || a.epilogue == Epilogue::swiglu ? a.n / 2
                                                                           : (a.n + 1) / 2;
}

// The two output rows of a warp's pair: the halves a RoPE rotation mixes (j, j + d/2 of a head),
// gate and up of one SwiGLU unit, else neighbours (r1 = -1 past an odd n).
__device__ __forceinline__ void rows_of(const GemvArgs& a, int pair, int& r0, int& r1) {
  if (a.epilogue == Epilogue::rope_kv) {
    const int half = a.d / 2, head = pair / half, j = pair % half;
    r0 = head * a.d + j;
    r1 = r0 + half;
  } else if (a.epilogue == Epilogue::swiglu) {
    r0 = pair;
    r1 = a.n / 2 + pair;
  } else {
    r0 = 2 * pair;
    r1 = r0 + 1 < a.n ? r0 + 1 : -1;
  }
}

// Programmatic dependent launch (sm_90): what a kernel does before wait() reads nothing an
// earlier kernel writes (only weights); wait() returns once the kernels before it are complete
// and their writes visible (a no-op when launched without the attribute); launch_dependents()
// lets the next kernel's blocks be scheduled once every block of this one has started.
__device__ __forceinline__ void wait_for_previous() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}
__device__ __forceinline__ void launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;" :::);
}

// Pulls the first `bytes` of a weight row into L2 (one 128-byte line a lane at a time): issued
// before wait_for_previous(), the row's DRAM latency overlaps the previous kernel's tail.
__device__ __forceinline__ void prefetch_l2(const void* row, std::size_t bytes, int lane) {
  const char* p = static_cast<const char*>(row);
  for (std::size_t off = std::size_t(lane) * 128; off < bytes; off += 32 * 128)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p + off));
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

// The block's input rows into xs [batch][k]: the embedding (block 0 also writes it to x_out, the
// residual stream) or a copy of x; then RMSNorm (float32 statistics, cast back, times the weight,
// as Qwen2RMSNorm) or LayerNorm (float32, one rounding, as at::layer_norm). A row's statistics
// are summed by a group of warps (all of them at batch 1, one a row from batch = warps on).
template <typename T>
__device__ void stage_input(const GemvArgs& a, T* xs) {
  const int k = a.k, total = a.batch * k;
  if (a.ids) {
    const T* wte = static_cast<const T*>(a.wte);
    const T* wpe = static_cast<const T*>(a.wpe);
    const std::int64_t pos = *a.pos;
    T* x_out = blockIdx.x == 0 ? static_cast<T*>(a.x_out) : nullptr;
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
    for (int i = threadIdx.x; i < total / vec_elems<T>(); i += blockDim.x) dst[i] = src[i];
  }
  __syncthreads();
  if (a.norm == NormKind::none) return;
  __shared__ float red[kMaxWarps];
  const int warps = blockDim.x / 32, warp = threadIdx.x / 32;
  const int g = max(1, warps / a.batch), groups = warps / g;  // g warps a row, groups rows at once
  const int group = warp / g, t = (warp % g) * 32 + threadIdx.x % 32, stride = g * 32;
  const T* w = static_cast<const T*>(a.norm_w);
  const T* bias = static_cast<const T*>(a.norm_b);
  const int rounds = (a.batch + groups - 1) / groups;
  for (int r = 0; r < rounds; ++r) {  // the same count for every thread: group_sum's barriers
    const int b = r * groups + group;
    const bool active = group < groups && b < a.batch;
    T* row = xs + std::size_t(active ? b : 0) * k;
    if (a.norm == NormKind::rms) {
      float ss = 0;
      if (active)
        for (int c = t; c < k; c += stride) ss += to_f(row[c]) * to_f(row[c]);
      const float inv = rsqrtf(group_sum(ss, red, g) / float(k) + a.eps);
      if (active)
        for (int c = t; c < k; c += stride)
          row[c] = from_f<T>(__fmul_rn(to_f(w[c]), round_to<T>(to_f(row[c]) * inv)));
    } else {
      float s = 0;
      if (active)
        for (int c = t; c < k; c += stride) s += to_f(row[c]);
      const float mean = group_sum(s, red, g) / float(k);
      float v = 0;
      if (active)
        for (int c = t; c < k; c += stride) v += (to_f(row[c]) - mean) * (to_f(row[c]) - mean);
      const float inv = rsqrtf(group_sum(v, red, g) / float(k) + a.eps);
      if (active)
        for (int c = t; c < k; c += stride)
          row[c] = from_f<T>((to_f(row[c]) - mean) * inv * to_f(w[c]) + (bias ? to_f(bias[c]) : 0));
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

template <typename T>
__global__ void __launch_bounds__(kMaxWarps * 32) norm_gemv_kernel(GemvArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int V = vec_elems<T>();
  const int warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int pairs = pairs_of(a), kvec = a.k / V;
  const T* W = static_cast<const T*>(a.w);
  if (blockIdx.x * warps + warp <
      pairs) {  // this warp's first rows, while the previous kernel ends
    int r0, r1;
    rows_of(a, blockIdx.x * warps + warp, r0, r1);
    const std::size_t row_bytes = std::size_t(a.k) * sizeof(T);
    const std::size_t bytes = row_bytes < 16384 ? row_bytes : 16384;
    prefetch_l2(W + std::size_t(r0) * a.k, bytes, lane);
    if (r1 >= 0) prefetch_l2(W + std::size_t(r1) * a.k, bytes, lane);
  }
  launch_dependents();
  wait_for_previous();
  const T* x = static_cast<const T*>(a.x);
  if (a.norm != NormKind::none || a.ids) {
    T* xs = reinterpret_cast<T*>(smem);
    stage_input<T>(a, xs);
    x = xs;
  }
  for (int pair = blockIdx.x * warps + warp; pair < pairs; pair += gridDim.x * warps) {
    int r0, r1;
    rows_of(a, pair, r0, r1);
    const uint4* w0 = reinterpret_cast<const uint4*>(W + std::size_t(r0) * a.k);
    const uint4* w1 = reinterpret_cast<const uint4*>(W + std::size_t(r1 < 0 ? r0 : r1) * a.k);
    for (int b0 = 0; b0 < a.batch; b0 += kBatchTile) {
      const int nb = min(kBatchTile, a.batch - b0);
      float acc0[kBatchTile], acc1[kBatchTile];
#pragma unroll
      for (int bb = 0; bb < kBatchTile; ++bb) acc0[bb] = acc1[bb] = 0;
      for (int base = lane; base < kvec; base += 32 * kUnroll) {
        uint4 wa[kUnroll], wb[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {  // every load issued before any use
          const int v = base + 32 * u;
          wa[u] = v < kvec ? __ldcs(w0 + v) : make_uint4(0, 0, 0, 0);
          wb[u] = v < kvec ? __ldcs(w1 + v) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int v = base + 32 * u;
          if (v >= kvec) break;
          float fa[V], fb[V];
          unpack<T>(wa[u], fa);
          unpack<T>(wb[u], fb);
#pragma unroll
          for (int bb = 0; bb < kBatchTile; ++bb) {
            if (bb >= nb) break;
            const uint4 xv = *reinterpret_cast<const uint4*>(x + std::size_t(b0 + bb) * a.k +
                                                             std::size_t(v) * V);
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
      float s0 = 0, s1 = 0;  // lane bb keeps batch row b0 + bb's sums
#pragma unroll
      for (int bb = 0; bb < kBatchTile; ++bb) {
        if (bb >= nb) break;
        const float t0 = warp_sum(acc0[bb]), t1 = warp_sum(acc1[bb]);
        if (lane == bb) {
          s0 = t0;
          s1 = t1;
        }
      }
      if (lane < nb) finish_rows<T>(a, b0 + lane, pair, r0, r1, s0, s1);
    }
  }
}

// From batch 4 on, 16-bit weights go through tensor cores: the SIMT GEMV reads every x row from
// shared memory again for each pair of weight rows (x traffic = batch x 16 bytes per 32 bytes of
// weights), an mma.sync m16n8k16 reads it once per 16 rows.
constexpr int kMmaMinBatch = 4;
constexpr int kMmaWarps = 8;
constexpr int kMmaUnroll = 4;

// c (m16n8, float32) += a (m16k16, row-major: weight rows) x b (k16n8: x rows), 16-bit inputs.
template <typename T>
__device__ __forceinline__ void mma_16816(float* c, const unsigned* a, const unsigned* b) {
  if constexpr (std::is_same_v<T, __half>)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// The GEMV on tensor cores (fp16, bf16; batch >= kMmaMinBatch): a block's tile is 8 row pairs
// (A rows 0-7 the pairs' r0, rows 8-15 their r1), its warps split k, a smem sum across warps, then
// finish_rows as the SIMT kernel. The k order inside an mma is free as long as A and B share it:
// lane (g = lane / 4, t = lane % 4) loads 8 consecutive elements (16 bytes) at k = 32 s + 8 t of
// its two weight rows and of x row g, and feeds elements 0-3 to one mma, 4-7 to the next.
template <typename T>
__global__ void __launch_bounds__(kMmaWarps * 32) mma_gemv_kernel(GemvArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int pairs = pairs_of(a), tiles = (pairs + 7) / 8, kchunks = a.k / 8;
  const int steps = (kchunks + 3) / 4;  // 32 elements of k each
  const T* W = static_cast<const T*>(a.w);
  if (static_cast<int>(blockIdx.x) < tiles && blockIdx.x * 8 + g < pairs) {
    int r0, r1;
    rows_of(a, blockIdx.x * 8 + g, r0, r1);
    const std::size_t row_bytes = std::size_t(a.k) * sizeof(T);
    const std::size_t slice = (row_bytes + kMmaWarps * 4 - 1) / (kMmaWarps * 4);
    const std::size_t start = slice * std::size_t(warp * 4 + t);
    if (start < row_bytes) {  // lane (warp, g, t) pulls a slice of rows r0 and r1
      const std::size_t n = row_bytes - start < slice ? row_bytes - start : slice;
      const char* p0 = reinterpret_cast<const char*>(W + std::size_t(r0) * a.k) + start;
      for (std::size_t off = 0; off < n; off += 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(p0 + off));
      if (r1 >= 0) {
        const char* p1 = reinterpret_cast<const char*>(W + std::size_t(r1) * a.k) + start;
        for (std::size_t off = 0; off < n; off += 128)
          asm volatile("prefetch.global.L2 [%0];" ::"l"(p1 + off));
      }
    }
  }
  launch_dependents();
  wait_for_previous();
  const bool staged = a.norm != NormKind::none || a.ids;
  const T* x = static_cast<const T*>(a.x);
  if (staged) {
    T* xs = reinterpret_cast<T*>(smem);
    stage_input<T>(a, xs);
    x = xs;
  }
  const std::size_t staged_bytes =
      staged ? (std::size_t(a.batch) * a.k * sizeof(T) + 15) / 16 * 16 : 0;
  float* red = reinterpret_cast<float*>(smem + staged_bytes);  // [warps][2 n-tiles][4][32 lanes]
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const int pair = tile * 8 + g;
    const bool valid = pair < pairs;
    int r0 = 0, r1 = -1;
    if (valid) rows_of(a, pair, r0, r1);
    const uint4* w0 = valid ? reinterpret_cast<const uint4*>(W + std::size_t(r0) * a.k) : nullptr;
    const uint4* w1 =
        valid && r1 >= 0 ? reinterpret_cast<const uint4*>(W + std::size_t(r1) * a.k) : nullptr;
    for (int b0 = 0; b0 < a.batch; b0 += 16) {
      const int nb = min(16, a.batch - b0);
      float c[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
      for (int s0 = warp; s0 < steps; s0 += kMmaWarps * kMmaUnroll) {
        uint4 wa[kMmaUnroll], wb[kMmaUnroll];
#pragma unroll
        for (int u = 0; u < kMmaUnroll; ++u) {  // every load issued before any use
          const int s = s0 + u * kMmaWarps, ch = s * 4 + t;
          const bool in = s < steps && ch < kchunks;
          wa[u] = in && w0 ? __ldcs(w0 + ch) : zero;
          wb[u] = in && w1 ? __ldcs(w1 + ch) : zero;
        }
#pragma unroll
        for (int u = 0; u < kMmaUnroll; ++u) {
          const int s = s0 + u * kMmaWarps, ch = s * 4 + t;
          if (s >= steps) break;
#pragma unroll
          for (int nt = 0; nt < 2; ++nt) {
            if (nt * 8 >= nb) break;
            const int n = b0 + nt * 8 + g;
            const uint4 xv = n < a.batch && ch < kchunks
                                 ? *reinterpret_cast<const uint4*>(x + std::size_t(n) * a.k +
                                                                   std::size_t(ch) * 8)
                                 : zero;
            const unsigned a_lo[4] = {wa[u].x, wb[u].x, wa[u].y, wb[u].y};
            const unsigned b_lo[2] = {xv.x, xv.y};
            mma_16816<T>(c[nt], a_lo, b_lo);
            const unsigned a_hi[4] = {wa[u].z, wb[u].z, wa[u].w, wb[u].w};
            const unsigned b_hi[2] = {xv.z, xv.w};
            mma_16816<T>(c[nt], a_hi, b_hi);
          }
        }
      }
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) red[((warp * 2 + nt) * 4 + i) * 32 + lane] = c[nt][i];
      __syncthreads();
      if (warp < 2 && warp * 8 < nb && valid) {  // warp nt finishes n-tile nt
        const int nt = warp;
        float sum[4] = {0, 0, 0, 0};
        for (int w = 0; w < kMmaWarps; ++w)
#pragma unroll
          for (int i = 0; i < 4; ++i) sum[i] += red[((w * 2 + nt) * 4 + i) * 32 + lane];
        // sum[0..1]: row r0 at batch columns 2t, 2t + 1; sum[2..3]: row r1 at the same columns
        for (int j = 0; j < 2; ++j) {
          const int b = b0 + nt * 8 + 2 * t + j;
          if (b < a.batch) finish_rows<T>(a, b, pair, r0, r1, sum[j], sum[2 + j]);
        }
      }
      __syncthreads();  // red is read before the next pass writes it
    }
  }
}

// Grid (splits, kv heads, batch): a block scores its chunk of positions for the rep = nq / nkv
// query heads of its KV head (each K row read once for them), keeps the split's softmax partial
// (max, sum, unnormalized output) in float32, and the last block of the KV head to finish merges
// the splits (own::merge_split_softmax) into out, rounded once, and zeroes the counter.
template <typename T>
__global__ void __launch_bounds__(kAttentionThreads) attention_kernel(AttentionArgs a) {
  extern __shared__ float sm[];
  __shared__ bool is_last;
  const int split = blockIdx.x, g = blockIdx.y, b = blockIdx.z, splits = gridDim.x;
  const int rep = a.nq / a.nkv, d = a.d, chunk = a.chunk;
  const int warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* qs = sm;                // [rep][d]
  float* ps = qs + rep * d;      // [rep][chunk]: scores, then exp(score - max)
  float* ml = ps + rep * chunk;  // [rep][2]
  launch_dependents();
  wait_for_previous();
  const std::int64_t pos = *a.pos, t0 = std::int64_t(split) * chunk;
  const std::int64_t left = pos + 1 - t0;  // positions of this split at or before pos
  const int count = left <= 0 ? 0 : left < chunk ? static_cast<int>(left) : chunk;
  const float scale = 1.0f / sqrtf(float(d));
  const T* q = static_cast<const T*>(a.q) + (std::size_t(b) * a.nq + std::size_t(g) * rep) * d;
  for (int i = threadIdx.x; i < rep * d; i += blockDim.x) qs[i] = to_f(q[i]);
  __syncthreads();
  const std::size_t head_base = (std::size_t(b) * a.nkv + g) * a.max_len * d;
  const T* K = static_cast<const T*>(a.cache_k) + head_base + t0 * d;
  const T* Vc = static_cast<const T*>(a.cache_v) + head_base + t0 * d;
  for (int t = warp; t < count; t += warps) {
    const T* krow = K + std::size_t(t) * d;
    for (int h = 0; h < rep; ++h) {
      float s = 0;
      for (int e = lane; e < d; e += 32) s += qs[h * d + e] * to_f(krow[e]);
      s = warp_sum(s);
      if (lane == 0) ps[h * chunk + t] = s * scale;
    }
  }
  __syncthreads();
  for (int h = warp; h < rep; h += warps) {
    float m = -INFINITY;
    for (int t = lane; t < count; t += 32) m = fmaxf(m, ps[h * chunk + t]);
    m = warp_max(m);
    float l = 0;
    for (int t = lane; t < count; t += 32) {
      const float p = expf(ps[h * chunk + t] - m);
      ps[h * chunk + t] = p;
      l += p;
    }
    l = warp_sum(l);
    if (lane == 0) {
      ml[2 * h] = m;
      ml[2 * h + 1] = l;
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < rep * d; i += blockDim.x) {
    const int h = i / d, e = i % d;
    float o = 0;
    for (int t = 0; t < count; ++t) o += ps[h * chunk + t] * to_f(Vc[std::size_t(t) * d + e]);
    const std::size_t part = (std::size_t(b) * a.nq + std::size_t(g) * rep + h) * splits + split;
    a.partial_o[part * d + e] = o;
    if (e == 0) {
      a.partial_ml[2 * part] = ml[2 * h];
      a.partial_ml[2 * part + 1] = ml[2 * h + 1];
    }
  }
  __threadfence();  // the partials are visible before the count says so
  __syncthreads();
  if (threadIdx.x == 0)
    is_last = atomicAdd(a.counters + b * a.nkv + g, 1u) == static_cast<unsigned>(splits - 1);
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  T* out = static_cast<T*>(a.out) + (std::size_t(b) * a.nq + std::size_t(g) * rep) * d;
  for (int i = threadIdx.x; i < rep * d; i += blockDim.x) {
    const int h = i / d, e = i % d;
    const std::size_t first = (std::size_t(b) * a.nq + std::size_t(g) * rep + h) * splits;
    const float* part_ml = a.partial_ml + 2 * first;
    const float* part_o = a.partial_o + first * d + e;
    // Other blocks wrote them: read from L2 (__ldcg), never a stale L1 line.
    out[i] = from_f<T>(own::merge_split_softmax(
        splits, [&](int s) { return __ldcg(part_ml + 2 * s); },
        [&](int s) { return __ldcg(part_ml + 2 * s + 1); },
        [&](int s) { return __ldcg(part_o + std::size_t(s) * d); }));
  }
  if (threadIdx.x == 0) a.counters[b * a.nkv + g] = 0;
}

// A launch on s, with programmatic stream serialization where pdl is set (the kernel may start
// while the previous one ends; its wait_for_previous() keeps the order of the data).
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared, bool pdl,
            cudaStream_t s, Args... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared;
  config.stream = s;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = pdl ? 1 : 0;
  CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}

template <typename F>
void dispatch(Elem e, F&& f) {
  switch (e) {
    case Elem::f32:
      f(float{});
      break;
    case Elem::f16:
      f(__half{});
      break;
    case Elem::bf16:
      f(__nv_bfloat16{});
      break;
  }
}

std::size_t elem_bytes(Elem e) {
  return e == Elem::f32 ? 4 : 2;
}

constexpr std::size_t kMaxShared = 200 * 1024;

// Raises a kernel's dynamic shared memory limit past the default 48 KiB once per size (the
// eager step before a capture raises it: the capture then makes no such call).
template <typename K>
void allow_shared(K kernel, std::size_t bytes, std::size_t& allowed) {
  if (bytes <= 48 * 1024 || bytes <= allowed) return;
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)));
  allowed = bytes;
}

template <typename T>
std::size_t& gemv_allowed() {
  static std::size_t bytes = 0;
  return bytes;
}

template <typename T>
std::size_t& mma_allowed() {
  static std::size_t bytes = 0;
  return bytes;
}

template <typename T>
std::size_t& attention_allowed() {
  static std::size_t bytes = 0;
  return bytes;
}

}  // namespace

bool use_mma(const GemvArgs& a, Elem e) {
  return e != Elem::f32 && a.batch >= kMmaMinBatch;
}

std::size_t gemv_shared_bytes(const GemvArgs& a, Elem e) {
  const std::size_t staged = a.norm == NormKind::none && !a.ids
                                 ? 0
                                 : std::size_t(a.batch) * std::size_t(a.k) * elem_bytes(e);
  if (!use_mma(a, e)) return staged;
  return (staged + 15) / 16 * 16 + sizeof(float) * kMmaWarps * 2 * 4 * 32;
}

bool gemv_supported(const GemvArgs& a, Elem e, const char** why) {
  const auto fail = [&](const char* w) {
    if (why) *why = w;
    return false;
  };
  if (a.k % static_cast<int>(16 / elem_bytes(e)) != 0)
    return fail("a GEMV's input width must be a multiple of 16 bytes of elements");
  if (gemv_shared_bytes(a, e) > kMaxShared)
    return fail("batch x hidden size elements exceed the 200 KiB the GEMV's prologue stages");
  if (a.epilogue == Epilogue::rope_kv && (a.d % 2 != 0 || a.n != (a.nq + 2 * a.nkv) * a.d))
    return fail("the QKV GEMV needs an even head_dim and (nq + 2 nkv) head_dim rows");
  if (a.epilogue == Epilogue::swiglu && a.n % 2 != 0) return fail("SwiGLU needs 2 x inter rows");
  return true;
}

void norm_gemv(const GemvArgs& a, Elem e, int sms, bool pdl, cudaStream_t s) {
  const int pairs = pairs_of(a);
  const bool staged = a.norm != NormKind::none || a.ids;
  if (use_mma(a, e)) {
    const int tiles = (pairs + 7) / 8;
    const int blocks = std::max(1, std::min(tiles, staged ? 2 * sms : 8 * sms));
    const std::size_t shared = gemv_shared_bytes(a, e);
    dispatch(e, [&](auto t) {
      using T = decltype(t);
      if constexpr (!std::is_same_v<T, float>) {
        allow_shared(mma_gemv_kernel<T>, shared, mma_allowed<T>());
        launch(mma_gemv_kernel<T>, dim3(blocks), dim3(kMmaWarps * 32), shared, pdl, s, a);
      }
    });
    CUDA_CHECK(cudaGetLastError());
    return;
  }
  int warps = kMaxWarps;  // fewer warps a block where there are too few rows to fill every SM
  while (warps > 1 && (pairs + warps - 1) / warps < sms) warps /= 2;
  const int cap = staged ? 2 * sms : 8 * sms;  // a staged block's prologue is paid per block
  const int blocks = std::max(1, std::min((pairs + warps - 1) / warps, cap));
  const std::size_t shared = gemv_shared_bytes(a, e);
  dispatch(e, [&](auto t) {
    using T = decltype(t);
    allow_shared(norm_gemv_kernel<T>, shared, gemv_allowed<T>());
    launch(norm_gemv_kernel<T>, dim3(blocks), dim3(warps * 32), shared, pdl, s, a);
  });
  CUDA_CHECK(cudaGetLastError());
}

int attention_splits(const AttentionArgs& a) {
  return static_cast<int>((a.max_len + a.chunk - 1) / a.chunk);
}

std::size_t attention_shared_bytes(const AttentionArgs& a) {
  const int rep = a.nq / a.nkv;
  return sizeof(float) * std::size_t(rep) * std::size_t(a.d + a.chunk + 2);
}

void split_kv_attention(const AttentionArgs& a, Elem e, bool pdl, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(attention_splits(a)), static_cast<unsigned>(a.nkv),
                  static_cast<unsigned>(a.batch));
  const std::size_t shared = attention_shared_bytes(a);
  dispatch(e, [&](auto t) {
    using T = decltype(t);
    allow_shared(attention_kernel<T>, shared, attention_allowed<T>());
    launch(attention_kernel<T>, grid, dim3(kAttentionThreads), shared, pdl, s, a);
  });
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace transformer::cuda
