#include "models/transformer/own_decode_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "models/transformer/own_decode_device.cuh"
#include "models/transformer/own_decode_math.hpp"

namespace transformer::cuda {
namespace {

using namespace own_device;

// Rows of the batch one pass of a warp carries (more rows: another pass over the same weight rows,
// from L2); 16-byte loads each lane keeps in flight per weight row.
constexpr int kBatchTile = 16;
constexpr int kUnroll = 4;
constexpr int kMaxWarps = 8;

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

// Variant 1 of the SIMT GEMV (MYCONV_OWN_CUDA_KERNELS=1): a warp a row pair, k over its lanes
// in rounds of kUnroll vectors, the first rows prefetched into L2 before the wait.
template <typename T>
__global__ void __launch_bounds__(kMaxWarps * 32) norm_gemv_kernel_v1(GemvArgs a) {
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
    prefetch_l2(W + std::size_t(r0) * a.k, bytes, std::size_t(lane) * 128, 32 * 128);
    if (r1 >= 0) prefetch_l2(W + std::size_t(r1) * a.k, bytes, std::size_t(lane) * 128, 32 * 128);
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

// Variant 2 of the SIMT GEMV (the default; MYCONV_OWN_CUDA_KERNELS=1 selects variant 1 above).
// A group of g warps (g a power of two, the same for the block) owns a row pair; thread t of the
// group holds vectors v = t + j * 32 g of both rows, so that where a row's share is at most
// kUnroll2 vectors a thread (g chosen for it on the host: up to k = 6144 in fp16 and bf16) every
// load of the pair goes out at once, in one round. Then the group's first two pairs are loaded
// into registers before wait_for_previous() (weights only: no earlier kernel writes them), and
// each of the two register buffers takes the pair two steps on as soon as its last FMA is issued:
// that pair's loads are in flight during the current pair's sums and the next pair's FMAs. Longer
// rows go in rounds of kUnroll2 vectors as variant 1. Sums: warp shuffles, then shared memory over
// the group's warps; finish_rows as variant 1. kBatchTile2 batch rows a pass.
constexpr int kBatchTile2 = 4;
constexpr int kUnroll2 = 3;
// Warps of norm_gemv_kernel_v2 a multiprocessor holds: 119-128 registers a thread (ptxas, sm_90)
// x 256 threads = two blocks of kMaxWarps in 64 K registers.
constexpr int kResidentWarps2 = 16;

// Thread t's vectors j0 .. j0 + kUnroll2 - 1 of the pair's rows r0, r1 (zero past the row's end
// and where r1 < 0).
template <typename T>
__device__ __forceinline__ void load_rows(const GemvArgs& a, int pair, int t, int j0, int stride,
                                          int kvec, uint4* wa, uint4* wb) {
  int r0, r1;
  rows_of(a, pair, r0, r1);
  const T* W = static_cast<const T*>(a.w);
  const uint4* w0 = reinterpret_cast<const uint4*>(W + std::size_t(r0) * a.k);
  const uint4* w1 = reinterpret_cast<const uint4*>(W + std::size_t(r1 < 0 ? r0 : r1) * a.k);
  const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
  for (int u = 0; u < kUnroll2; ++u) {
    const int v = t + (j0 + u) * stride;
    wa[u] = v < kvec ? __ldcs(w0 + v) : zero;
    wb[u] = v < kvec && r1 >= 0 ? __ldcs(w1 + v) : zero;
  }
}

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

template <typename T>
__global__ void __launch_bounds__(kMaxWarps * 32) norm_gemv_kernel_v2(GemvArgs a, int g) {
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ float red[kMaxWarps][2][kBatchTile2];
  constexpr int V = vec_elems<T>();
  const int warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int groups = warps / g, group = warp / g, lead = warp % g == 0;
  const int t = (warp % g) * 32 + lane, stride = 32 * g;
  const int pairs = pairs_of(a), kvec = a.k / V;
  const int per = (kvec + stride - 1) / stride;  // vectors of a row a thread
  const bool one_round = per <= kUnroll2;
  const int first = blockIdx.x * groups, step = gridDim.x * groups;
  // one_round: the weights of the group's pairs base + group (wa, wb) and base + step + group
  // (na, nb); a buffer takes the pair two steps on as soon as its last FMA is issued.
  uint4 wa[kUnroll2], wb[kUnroll2], na[kUnroll2], nb[kUnroll2];
  if (first + group < pairs) {  // while the previous kernel ends
    if (one_round) {
      load_rows<T>(a, first + group, t, 0, stride, kvec, wa, wb);
      if (first + group + step < pairs)
        load_rows<T>(a, first + group + step, t, 0, stride, kvec, na, nb);
    } else {
      int r0, r1;
      rows_of(a, first + group, r0, r1);
      const T* W = static_cast<const T*>(a.w);
      const std::size_t row_bytes = std::size_t(a.k) * sizeof(T);
      const std::size_t bytes = row_bytes < 16384 ? row_bytes : 16384;
      const std::size_t from = std::size_t(t) * 128, by = std::size_t(stride) * 128;
      prefetch_l2(W + std::size_t(r0) * a.k, bytes, from, by);
      if (r1 >= 0) prefetch_l2(W + std::size_t(r1) * a.k, bytes, from, by);
    }
  }
  launch_dependents();
  wait_for_previous();
  const T* x = static_cast<const T*>(a.x);
  if (a.norm != NormKind::none || a.ids) {
    T* xs = reinterpret_cast<T*>(smem);
    stage_input<T>(a, xs);
    x = xs;
  }
  // The group's pair base + group, its weights in ca, cb where one_round. Every thread of the
  // block calls it for the same bases (the barriers of the group sums).
  const auto one_pair = [&](int base, uint4* ca, uint4* cb) {
    const int pair = base + group;
    const bool valid = pair < pairs;
    int r0 = 0, r1 = -1;
    if (valid) rows_of(a, pair, r0, r1);
    for (int b0 = 0; b0 < a.batch; b0 += kBatchTile2) {
      const int nbt = min(kBatchTile2, a.batch - b0);
      float acc0[kBatchTile2], acc1[kBatchTile2];
#pragma unroll
      for (int bb = 0; bb < kBatchTile2; ++bb) acc0[bb] = acc1[bb] = 0;
      if (valid) {
        if (one_round) {
          fma_rows<T>(ca, cb, x, a.k, b0, nbt, t, 0, stride, kvec, acc0, acc1);
        } else {
          for (int j0 = 0; j0 < per; j0 += kUnroll2) {
            uint4 ra[kUnroll2], rb[kUnroll2];
            load_rows<T>(a, pair, t, j0, stride, kvec, ra, rb);
            fma_rows<T>(ra, rb, x, a.k, b0, nbt, t, j0, stride, kvec, acc0, acc1);
          }
        }
      }
      // After the last pass's FMAs: the buffer's next pair, in flight during the sums below
      // and the other buffer's pair.
      if (one_round && b0 + kBatchTile2 >= a.batch && pair + 2 * step < pairs)
        load_rows<T>(a, pair + 2 * step, t, 0, stride, kvec, ca, cb);
      float s0 = 0, s1 = 0;  // lane bb keeps batch row b0 + bb's sums
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
        if (lead && lane < nbt) {
          s0 = s1 = 0;
          for (int w = 0; w < g; ++w) {
            s0 += red[warp + w][0][lane];
            s1 += red[warp + w][1][lane];
          }
        }
        __syncthreads();  // red is read before the next pass writes it
      }
      if (valid && lead && lane < nbt) finish_rows<T>(a, b0 + lane, pair, r0, r1, s0, s1);
    }
  };
  for (int base = first; base < pairs; base += 2 * step) {  // the same trips for the block
    one_pair(base, wa, wb);
    if (base + step < pairs) one_pair(base + step, na, nb);
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

template <typename T>
std::size_t& gemv_allowed() {
  static std::size_t bytes = 0;
  return bytes;
}

template <typename T>
std::size_t& gemv_v2_allowed() {
  static std::size_t bytes = 0;
  return bytes;
}

template <typename T>
std::size_t& mma_allowed() {
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
  const std::size_t shared = gemv_shared_bytes(a, e);
  if (a.kernels == 1) {
    const int cap = staged ? 2 * sms : 8 * sms;  // a staged block's prologue is paid per block
    int warps = kMaxWarps;  // fewer warps a block where there are too few rows to fill every SM
    while (warps > 1 && (pairs + warps - 1) / warps < sms) warps /= 2;
    const int blocks = std::max(1, std::min((pairs + warps - 1) / warps, cap));
    dispatch(e, [&](auto t) {
      using T = decltype(t);
      allow_shared(norm_gemv_kernel_v1<T>, shared, gemv_allowed<T>());
      launch(norm_gemv_kernel_v1<T>, dim3(blocks), dim3(warps * 32), shared, pdl, s, a);
    });
    CUDA_CHECK(cudaGetLastError());
    return;
  }
  // Warps a row pair: the fewest that hold a row in one round of kUnroll2 16-byte loads a thread.
  const int kvec = a.k / static_cast<int>(16 / elem_bytes(e));
  int g = 1;
  while (g < kMaxWarps && (kvec + 32 * g - 1) / (32 * g) > kUnroll2) g *= 2;
  int warps = kMaxWarps;  // fewer pairs a block where there are too few to fill every SM
  while (warps > g && (pairs + warps / g - 1) / (warps / g) < sms) warps /= 2;
  const int groups = warps / g;
  // No more blocks than fit at once (kResidentWarps2 a multiprocessor): a group then walks
  // several pairs with the next one's loads in flight, and every block's first loads overlap the
  // previous kernel, where a second wave of blocks would start only as the first one ends.
  const int resident = sms * std::max(1, kResidentWarps2 / warps);
  const int blocks = std::max(1, std::min((pairs + groups - 1) / groups, resident));
  dispatch(e, [&](auto t) {
    using T = decltype(t);
    allow_shared(norm_gemv_kernel_v2<T>, shared, gemv_v2_allowed<T>());
    launch(norm_gemv_kernel_v2<T>, dim3(blocks), dim3(warps * 32), shared, pdl, s, a, g);
  });
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace transformer::cuda
