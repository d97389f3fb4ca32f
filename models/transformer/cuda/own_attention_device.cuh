// The split-KV attention's block body that both the attention kernel (own_attention_kernels.cu,
// variant 2) and the persistent step (own_step_kernel.cu) run: one (split, KV head, batch row)
// item, its partial softmax over the split's positions, and the merge of the KV head's splits by
// the block that finishes last. Every thread of the block calls it.
#pragma once

#include <cmath>
#include <cstdint>

#include "models/transformer/cuda/own_decode_device.cuh"
#include "models/transformer/cuda/own_decode_kernels.hpp"
#include "models/transformer/cuda/own_decode_math.hpp"

namespace transformer::cuda::own_device {

// merge_if_last with the loads in parallel: a warp a head reads the splits' (max, sum) across its
// lanes and keeps each split's weight exp(m_s - max) in ws [rep][splits] (0 for a split with no
// position) and the denominator sum_s l_s w_s in den [rep]; then a thread a (head, element)
// sums o_s w_s over the splits, kMergeUnroll loads in flight, and rounds num / den once (the
// arithmetic of own::merge_split_softmax, its sums in another order).
constexpr int kMergeUnroll = 8;

template <typename T>
__device__ void merge_if_last_v2(const AttentionArgs& a, int g, int b, int rep, int splits,
                                 float* ws, float* den) {
  __shared__ bool is_last;
  const int d = a.d, warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __threadfence();  // the partials are visible before the count says so
  __syncthreads();
  if (threadIdx.x == 0)
    is_last = atomicAdd(a.counters + b * a.nkv + g, 1u) == static_cast<unsigned>(splits - 1);
  __syncthreads();
  if (!is_last) return;
  __threadfence();
  const std::size_t head0 = std::size_t(b) * a.nq + std::size_t(g) * rep;
  for (int h = warp; h < rep; h += warps) {
    // Other blocks wrote them: read from L2 (__ldcg), never a stale L1 line.
    const float* part_ml = a.partial_ml + 2 * (head0 + h) * splits;
    float big = -INFINITY;
    for (int s = lane; s < splits; s += 32) big = fmaxf(big, __ldcg(part_ml + 2 * s));
    big = warp_max(big);
    float sum = 0;
    for (int s = lane; s < splits; s += 32) {
      const float l = __ldcg(part_ml + 2 * s + 1);
      const float w = l == 0 ? 0.0f : expf(__ldcg(part_ml + 2 * s) - big);
      ws[h * splits + s] = w;
      sum += l * w;
    }
    sum = warp_sum(sum);
    if (lane == 0) den[h] = sum;
  }
  __syncthreads();
  T* out = static_cast<T*>(a.out) + head0 * d;
  for (int i = threadIdx.x; i < rep * d; i += blockDim.x) {
    const int h = i / d, e = i % d;
    const float* part_o = a.partial_o + (head0 + h) * splits * d + e;
    const float* w = ws + h * splits;
    float num = 0;
#pragma unroll kMergeUnroll
    for (int s = 0; s < splits; ++s) num += __ldcg(part_o + std::size_t(s) * d) * w[s];
    out[i] = from_f<T>(num / den[h]);
  }
  if (threadIdx.x == 0) a.counters[b * a.nkv + g] = 0;
}

// One item of the split-KV attention: split `split` of KV head g of batch row b, `chunk`
// positions a split, `splits` splits (the merge's count), shared memory `smem` laid out as
// attention_item_shared_bytes says. The split's positions at or before *pos go through shared
// memory in tiles of kAttentionTile positions: the tile's K and V rows are copied with 16-byte
// cp.async, every copy issued before any is used; the scores of all (head, position) pairs are
// computed at once, one thread each, from shared memory; a warp per head keeps the running max
// and sum (one tile: the plain softmax partial); the output, one thread per (head, element), sums
// the tile's V rows from shared memory. The split's partial (max, sum, unnormalized output) in
// float32 goes to partial_ml / partial_o and the last block of the KV head merges them
// (merge_if_last_v2), or as `finish` says. The first tile's copies are issued before q is read.
constexpr int kAttentionTile = 64;

__host__ __device__ inline int attention_tile_of(int chunk) {
  return chunk < kAttentionTile ? chunk : kAttentionTile;
}

__host__ __device__ inline std::size_t attention_item_shared_bytes(int rep, int d, int tile,
                                                                   int splits, int elem_size) {
  return 2 * std::size_t(tile) * d * elem_size +
         sizeof(float) * (2 * std::size_t(rep) * d + std::size_t(rep) * tile + 4 * rep +
                          std::size_t(rep) * splits);
}

// What an item does with its softmax partial: leaves it in partial_o / partial_ml (partials),
// and there the last block of the KV head merges the splits (merge_last), or, where the item is
// the only split, writes the output itself (direct).
enum class AttentionFinish { merge_last, partials, direct };

template <typename T>
__device__ void attention_item(const AttentionArgs& a, int split, int g, int b, int splits,
                               int chunk, unsigned char* smem,
                               AttentionFinish finish = AttentionFinish::merge_last) {
  constexpr int VE = vec_elems<T>();
  const int rep = a.nq / a.nkv, d = a.d, tile = attention_tile_of(chunk);
  const int warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  T* ks = reinterpret_cast<T*>(smem);                                // [tile][d]
  T* vs = ks + std::size_t(tile) * d;                                // [tile][d]
  float* qs = reinterpret_cast<float*>(vs + std::size_t(tile) * d);  // [rep][d]
  float* os = qs + rep * d;        // [rep][d]: the running output, thread i owns element i
  float* ps = os + rep * d;        // [rep][tile]: scores, then exp(score - max)
  float* ml = ps + rep * tile;     // [rep][2]: running max and sum
  float* fs = ml + 2 * rep;        // [rep]: a tile's rescale of the running numbers
  float* ws = fs + rep;            // [rep][splits]: the merge's weights (merge_if_last_v2)
  float* den = ws + rep * splits;  // [rep]: the merge's denominators
  const std::int64_t t0 = std::int64_t(split) * chunk;
  const std::size_t head_base = (std::size_t(b) * a.nkv + g) * a.max_len * d;
  const T* K = static_cast<const T*>(a.cache_k) + head_base + t0 * d;
  const T* Vc = static_cast<const T*>(a.cache_v) + head_base + t0 * d;
  const std::int64_t pos = *a.pos;
  const std::int64_t left = pos + 1 - t0;  // positions of this split at or before pos
  const int count = left <= 0 ? 0 : left < chunk ? static_cast<int>(left) : chunk;
  const float scale = 1.0f / sqrtf(float(d));
  const int chunks = d / VE;  // 16-byte pieces of a row
  const auto copy_tile = [&](int base, int n) {
    const uint4* ksrc = reinterpret_cast<const uint4*>(K + std::size_t(base) * d);
    const uint4* vsrc = reinterpret_cast<const uint4*>(Vc + std::size_t(base) * d);
    uint4* kdst = reinterpret_cast<uint4*>(ks);
    uint4* vdst = reinterpret_cast<uint4*>(vs);
    for (int i = threadIdx.x; i < n * chunks; i += blockDim.x) {
      cp_async16(kdst + i, ksrc + i);
      cp_async16(vdst + i, vsrc + i);
    }
  };
  copy_tile(0, count < tile ? count : tile);  // in flight while q is read
  const T* q = static_cast<const T*>(a.q) + (std::size_t(b) * a.nq + std::size_t(g) * rep) * d;
  for (int i = threadIdx.x; i < rep * d; i += blockDim.x) {
    qs[i] = to_f(q[i]);
    os[i] = 0;
  }
  for (int h = threadIdx.x; h < rep; h += blockDim.x) {
    ml[2 * h] = -INFINITY;
    ml[2 * h + 1] = 0;
  }
  for (int base = 0; base < count; base += tile) {
    const int n = count - base < tile ? count - base : tile;
    if (base > 0) {
      __syncthreads();  // the previous tile's K, V and ps are read
      copy_tile(base, n);
    }
    cp_async_wait_all();
    __syncthreads();  // the tile (and at the first, qs and ml) written
    for (int i = threadIdx.x; i < rep * n; i += blockDim.x) {
      const int h = i / n, t = i % n;
      const float* qh = qs + h * d;
      const uint4* kt = reinterpret_cast<const uint4*>(ks + std::size_t(t) * d);
      float s = 0;
      for (int c0 = 0; c0 < chunks; ++c0) {
        const int c = (c0 + t) % chunks;  // neighbouring positions start on different banks
        float kf[VE];
        unpack<T>(kt[c], kf);
#pragma unroll
        for (int j = 0; j < VE; ++j) s = fmaf(qh[c * VE + j], kf[j], s);
      }
      ps[h * tile + t] = s * scale;
    }
    __syncthreads();
    for (int h = warp; h < rep; h += warps) {
      float m = -INFINITY;
      for (int t = lane; t < n; t += 32) m = fmaxf(m, ps[h * tile + t]);
      m = warp_max(m);
      const float m_old = ml[2 * h], m_new = fmaxf(m_old, m);
      float l = 0;
      for (int t = lane; t < n; t += 32) {
        const float p = expf(ps[h * tile + t] - m_new);
        ps[h * tile + t] = p;
        l += p;
      }
      l = warp_sum(l);
      __syncwarp();  // every lane has read ml[2 h] (m_old) before lane 0 rewrites it
      if (lane == 0) {
        const float f = expf(m_old - m_new);  // 0 on the first tile (m_old = -inf)
        fs[h] = f;
        ml[2 * h] = m_new;
        ml[2 * h + 1] = ml[2 * h + 1] * f + l;
      }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < rep * d; i += blockDim.x) {
      const int h = i / d, e = i % d;
      const float* p = ps + h * tile;
      float o = 0;
      for (int t = 0; t < n; ++t) o = fmaf(p[t], to_f(vs[std::size_t(t) * d + e]), o);
      os[i] = os[i] * fs[h] + o;
    }
  }
  __syncthreads();                          // ml is final (and written where count is 0)
  if (finish == AttentionFinish::direct) {  // one split: softmax(s) v = o / l, rounded once
    T* out = static_cast<T*>(a.out) + (std::size_t(b) * a.nq + std::size_t(g) * rep) * d;
    for (int i = threadIdx.x; i < rep * d; i += blockDim.x)
      out[i] = from_f<T>(os[i] / ml[2 * (i / d) + 1]);
    return;
  }
  for (int i = threadIdx.x; i < rep * d; i += blockDim.x) {
    const int h = i / d, e = i % d;
    const std::size_t part = (std::size_t(b) * a.nq + std::size_t(g) * rep + h) * splits + split;
    a.partial_o[part * d + e] = os[i];
    if (e == 0) {
      a.partial_ml[2 * part] = ml[2 * h];
      a.partial_ml[2 * part + 1] = ml[2 * h + 1];
    }
  }
  if (finish == AttentionFinish::merge_last) merge_if_last_v2<T>(a, g, b, rep, splits, ws, den);
}

}  // namespace transformer::cuda::own_device
