#include "models/transformer/cuda/own_decode_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "models/transformer/cuda/own_attention_device.cuh"
#include "models/transformer/cuda/own_decode_device.cuh"
#include "models/transformer/cuda/own_decode_math.hpp"

namespace transformer::cuda {
namespace {

using namespace own_device;

constexpr int kAttentionThreads = 128;

// The last block of KV head (b, g) to finish merges the splits' partials
// (own::merge_split_softmax) into out, rounded once, and zeroes the counter for the next launch.
// Every thread of the block calls it after writing its partials.
template <typename T>
__device__ void merge_if_last(const AttentionArgs& a, int g, int b, int rep, int splits) {
  __shared__ bool is_last;
  const int d = a.d;
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

// Variant 1 (MYCONV_OWN_CUDA_KERNELS=1). Grid (splits, kv heads, batch): a block scores its
// chunk of positions for the rep = nq / nkv query heads of its KV head (each K row read once for
// them), keeps the split's softmax partial (max, sum, unnormalized output) in float32, and the last
// block of the KV head merges the splits (merge_if_last). Each warp walks its positions one by one.
template <typename T>
__global__ void __launch_bounds__(kAttentionThreads) attention_kernel_v1(AttentionArgs a) {
  extern __shared__ float sm[];
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
  merge_if_last<T>(a, g, b, rep, splits);
}

// Variant 2 (the default). Grid (splits, kv heads, batch), kAttentionThreads2 threads, one item
// of attention_item (own_attention_device.cuh) a block. Before the wait the block pulls its
// split's K and V rows into L2 (a fixed range inside the cache: no value of an earlier kernel is
// read).
constexpr int kAttentionThreads2 = 256;

__host__ __device__ inline int attention_tile(const AttentionArgs& a) {
  return attention_tile_of(a.chunk);
}

template <typename T>
__global__ void __launch_bounds__(kAttentionThreads2) attention_kernel_v2(AttentionArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int split = blockIdx.x, g = blockIdx.y, b = blockIdx.z, d = a.d, chunk = a.chunk;
  const std::int64_t t0 = std::int64_t(split) * chunk;
  const std::size_t head_base = (std::size_t(b) * a.nkv + g) * a.max_len * d;
  {  // the split's whole range, whatever *pos is: inside the cache's max_len rows
    const std::int64_t rows = a.max_len - t0 < chunk ? a.max_len - t0 : chunk;
    const std::size_t bytes = std::size_t(rows) * d * sizeof(T);
    const T* K = static_cast<const T*>(a.cache_k) + head_base + t0 * d;
    const T* Vc = static_cast<const T*>(a.cache_v) + head_base + t0 * d;
    prefetch_l2(K, bytes, std::size_t(threadIdx.x) * 128, std::size_t(blockDim.x) * 128);
    prefetch_l2(Vc, bytes, std::size_t(threadIdx.x) * 128, std::size_t(blockDim.x) * 128);
  }
  launch_dependents();
  wait_for_previous();
  attention_item<T>(a, split, g, b, gridDim.x, chunk, smem);
}

std::size_t attention_v2_shared_bytes(const AttentionArgs& a, Elem e) {
  const int splits = static_cast<int>((a.max_len + a.chunk - 1) / a.chunk);
  return attention_item_shared_bytes(a.nq / a.nkv, a.d, attention_tile(a), splits,
                                     static_cast<int>(elem_bytes(e)));
}

template <typename T>
std::size_t& attention_allowed_v2() {
  static std::size_t bytes = 0;
  return bytes;
}

}  // namespace

int attention_splits(const AttentionArgs& a) {
  return static_cast<int>((a.max_len + a.chunk - 1) / a.chunk);
}

int attention_chunk(std::int64_t max_len, int kernels, std::int64_t blocks_per_split, int sms) {
  if (kernels == 1) {  // 32 positions, more where the cache is long (at most 256 splits)
    const std::int64_t splits_at_32 = (max_len + 31) / 32;
    if (splits_at_32 <= 256) return 32;
    return static_cast<int>(((max_len + 255) / 256 + 31) / 32 * 32);
  }
  // About four blocks a multiprocessor (batch x KV heads x splits: one tile each where the
  // batch is large; at batch 1 the 16-position floor decides), at least 16 positions a split (a
  // block's fixed costs: the wait, the merge), at most 256 splits (the merge's loop).
  const std::int64_t per = blocks_per_split > 0 ? blocks_per_split : 1;
  const std::int64_t blocks = 4 * std::int64_t(std::max(sms, 1));
  const std::int64_t want = (max_len * per + blocks - 1) / blocks;
  const std::int64_t at_most_256 = (max_len + 255) / 256;
  const std::int64_t chunk = std::min(std::max<std::int64_t>({16, want, at_most_256}), max_len);
  return static_cast<int>((std::max<std::int64_t>(chunk, 1) + 15) / 16 * 16);
}

std::size_t attention_shared_bytes(const AttentionArgs& a, Elem e) {
  if (a.kernels == 1) {
    const int rep = a.nq / a.nkv;
    return sizeof(float) * std::size_t(rep) * std::size_t(a.d + a.chunk + 2);
  }
  return attention_v2_shared_bytes(a, e);
}

bool attention_supported(const AttentionArgs& a, Elem e, const char** why) {
  const auto fail = [&](const char* w) {
    if (why) *why = w;
    return false;
  };
  if (a.nkv <= 0 || a.nq % a.nkv != 0)
    return fail("the attention needs num_heads a multiple of num_key_value_heads");
  if (a.kernels == 1 && attention_shared_bytes(a, e) > 48 * 1024)
    return fail("the attention's block needs more than 48 KiB of shared memory");
  if (a.kernels != 1) {
    if (std::size_t(a.d) * elem_bytes(e) % 16 != 0)
      return fail(
          "the attention copies K and V rows in 16-byte pieces: head_dim x element "
          "size must be a multiple of 16 bytes");
    AttentionArgs worst = a;  // a full tile and the most splits attention_chunk makes
    worst.chunk = kAttentionTile;
    worst.max_len = std::int64_t(256) * kAttentionTile;
    if (attention_shared_bytes(worst, e) > kMaxShared)
      return fail("the attention's block needs more than 200 KiB of shared memory");
  }
  return true;
}

void split_kv_attention(const AttentionArgs& a, Elem e, bool pdl, cudaStream_t s) {
  const dim3 grid(static_cast<unsigned>(attention_splits(a)), static_cast<unsigned>(a.nkv),
                  static_cast<unsigned>(a.batch));
  const std::size_t shared = attention_shared_bytes(a, e);
  dispatch(e, [&](auto t) {
    using T = decltype(t);
    if (a.kernels == 1) {
      launch_pdl(attention_kernel_v1<T>, grid, dim3(kAttentionThreads), shared, pdl, s, a);
    } else {
      allow_shared(attention_kernel_v2<T>, shared, attention_allowed_v2<T>());
      launch_pdl(attention_kernel_v2<T>, grid, dim3(kAttentionThreads2), shared, pdl, s, a);
    }
  });
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace transformer::cuda
