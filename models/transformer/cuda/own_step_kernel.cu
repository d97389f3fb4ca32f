// own_cuda's persistent decode step (own_step.hpp): the kernel, its weight stream and the host's
// plan and launch. Built only with a CUDA LibTorch, with the rest of own_cuda; the kernel needs
// sm_90 (bulk copies, mbarriers).
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c models/transformer/cuda/own_step_kernel.cu
#include "models/transformer/cuda/own_step.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "models/transformer/cuda/own_attention_device.cuh"
#include "models/transformer/cuda/own_gemv_device.cuh"
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#include "core/cuda/mbarrier_ptx.cuh"
#endif

namespace transformer::cuda {
namespace {

using namespace own_device;

// Warps of a block: 16 (one block a multiprocessor; with 8 the GEMV pieces' loads and FMAs ran
// latency-bound, 0.29 warps eligible a scheduler in ncu). stage_input allows kMaxBlockWarps.
constexpr int kStepWarps = 16;
static_assert(kStepWarps <= kMaxBlockWarps, "stage_input's reduction array");
constexpr int kStepThreads = kStepWarps * 32;
constexpr int kMaxSlots = 16;
// Dynamic shared memory at most (an H100 block may have 227 KiB; the rest: the static arrays).
constexpr std::size_t kStepShared = 220 * 1024;
// A block that waits longer than this at a grid barrier stops the kernel (a trap: an error the
// host reports) instead of hanging (about 17 s at 2 GHz).
constexpr long long kBarrierCycles = 1LL << 35;

// The pieces of a block's share: pairs [q, q + count) of a GEMV with epilogue e (head_dim d), at
// most chunk_pairs (one slot) and, for the QKV GEMV, inside one head (its rows then make two
// contiguous ranges). The weight stream and the consumers both cut the shares with it.
__host__ __device__ inline int piece_pairs(Epilogue e, int d, int chunk_pairs, int q, int q1) {
  int c = q1 - q < chunk_pairs ? q1 - q : chunk_pairs;
  if (e == Epilogue::rope_kv) {
    const int half = d / 2, left = half - q % half;
    c = c < left ? c : left;
  }
  return c;
}

// Whether a piece's rows are two ranges in the slot (the r0 rows, then the r1 rows: RoPE's halves,
// SwiGLU's gate and up) or one (r0, r1 neighbours: rows 2q .. 2q + 2 count - 1).
__host__ __device__ inline bool split_rows(Epilogue e) {
  return e == Epilogue::rope_kv || e == Epilogue::swiglu;
}

// Shared memory merge_partials needs past the staged rows: the splits' (max, sum) of every head,
// then their denominators.
__host__ __device__ inline std::size_t merge_shared_bytes(int rows, int splits) {
  return sizeof(float) * (std::size_t(rows) * splits * 2 + rows);
}

// What the weight stream needs of a phase, in shared memory (built once a step): the weight, its
// row bytes and rows, the block's share of pairs [q0, q1) (empty for the attention), pairs a
// piece at most, and what maps pairs to rows (the epilogue, head_dim: pair_rows).
struct StreamDesc {
  const unsigned char* w;
  unsigned row_bytes;
  int n, q0, q1, chunk_pairs, d;
  Epilogue epilogue;
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
namespace sm90 = bench::sm90;

// The block's share of a GEMV's pairs: [q0, q1).
__device__ __forceinline__ void share_of(int pairs, int& q0, int& q1) {
  q0 = static_cast<int>(static_cast<long long>(pairs) * blockIdx.x / gridDim.x);
  q1 = static_cast<int>(static_cast<long long>(pairs) * (blockIdx.x + 1) / gridDim.x);
}

// Arrive, then wait until every block has arrived `target / gridDim.x` times (every block once at
// each phase's end): the writes of the phase before it are then visible (the block's writes
// ordered before the count by the CTA barrier and the release, the others' after it by the
// acquire and the CTA barrier).
__device__ void grid_barrier(unsigned* counter, unsigned target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counter) : "memory");
    const long long start = clock64();
    for (;;) {
      unsigned v;
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(counter) : "memory");
      if (v >= target) break;
      if (clock64() - start > kBarrierCycles) __trap();
    }
  }
  __syncthreads();
}

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ StreamDesc stream_desc(const StepPhase& p, int elem_size) {
  StreamDesc s{};
  if (p.kind != StepPhase::gemv) return s;
  const GemvArgs& g = p.g;
  s.w = static_cast<const unsigned char*>(g.w);
  s.row_bytes = static_cast<unsigned>(g.k) * static_cast<unsigned>(elem_size);
  s.n = g.n;
  share_of(pairs_of(g), s.q0, s.q1);
  s.chunk_pairs = p.chunk_pairs;
  s.d = g.d;
  s.epilogue = g.epilogue;
  return s;
}

// A piece of the weight stream: one or two contiguous byte ranges of a weight.
struct Piece {
  const unsigned char* src0;
  const unsigned char* src1;  // null: one range
  std::uint32_t bytes0, bytes1;
};

// A position in a block's weight stream: the phase and the next pair of the block's share.
struct Cursor {
  int phase = -1, q = 0, q1 = 0;

  // The block's next piece in the order the phases consume them (false past the last): at most
  // chunk_pairs pairs, inside one head for the QKV GEMV.
  __device__ bool next(const StreamDesc* descs, int count, Piece& p) {
    while (q >= q1) {  // the next phase with pairs for this block
      if (++phase >= count) return false;
      q = descs[phase].q0;
      q1 = descs[phase].q1;
    }
    const StreamDesc& d = descs[phase];
    const int c = piece_pairs(d.epilogue, d.d, d.chunk_pairs, q, q1);
    int r0, r1;
    pair_rows(d.epilogue, d.d, d.n, q, r0, r1);
    p.src0 = d.w + std::size_t(r0) * d.row_bytes;
    if (split_rows(d.epilogue)) {
      p.bytes0 = p.bytes1 = static_cast<std::uint32_t>(c * d.row_bytes);
      p.src1 = d.w + std::size_t(r1) * d.row_bytes;
    } else {
      const int rows = 2 * c < d.n - r0 ? 2 * c : d.n - r0;  // the last pair of an odd n: one
      p.bytes0 = static_cast<std::uint32_t>(rows * d.row_bytes);
      p.src1 = nullptr;
      p.bytes1 = 0;
    }
    q += c;
    return true;
  }
};

// The weight stream of a block (thread 0's registers): the block's pieces in the order the phases
// consume them, each into the next slot of the ring; piece `seq` goes to slot seq % slots and
// completes phase (seq / slots) % 2 of its mbarrier. Only shared memory is read to issue one.
struct WeightStream {
  const StreamDesc* descs;
  int count, slots;
  unsigned slot_bytes;
  unsigned char* ring;
  std::uint64_t* full;
  Cursor issue;
  int issued = 0;

  // Issues pieces while a slot is free (consumed: the pieces the block has finished with).
  __device__ void top_up(int consumed) {
    Piece p;
    while (issued < consumed + slots && issue.next(descs, count, p)) {
      const int slot = issued % slots;
      unsigned char* dst = ring + std::size_t(slot) * slot_bytes;
      std::uint64_t* bar = full + slot;
      sm90::mbar_expect_tx(bar, p.bytes0 + p.bytes1);
      sm90::bulk_copy_g2s(dst, p.src0, p.bytes0, bar);
      if (p.src1) sm90::bulk_copy_g2s(dst + p.bytes0, p.src1, p.bytes1, bar);
      ++issued;
    }
  }
};

// The attention's splits: at least kAttentionTile positions (one shared-memory tile; fewer splits
// make less for every block to merge), more where batch x KV heads x splits would exceed a block
// an item, at most kStepMaxSplits; a multiple of 16.
__device__ __forceinline__ int step_attention_splits(const AttentionArgs& a, int& chunk) {
  const long long positions = *a.pos + 1, per = static_cast<long long>(a.batch) * a.nkv;
  long long c = (positions * per + gridDim.x - 1) / gridDim.x;
  c = max(c, (positions + kStepMaxSplits - 1) / kStepMaxSplits);
  c = (max(c, static_cast<long long>(kAttentionTile)) + 15) / 16 * 16;
  chunk = static_cast<int>(c);
  return static_cast<int>((positions + c - 1) / c);
}

// The attention phase: the blocks take the items (attention_item) in turn; one split writes the
// output, several leave their partials for the next phase to merge (merge_partials).
template <typename T>
__device__ void attention_phase(const AttentionArgs& a, unsigned char* smem) {
  int chunk;
  const int splits = step_attention_splits(a, chunk);
  const long long items = static_cast<long long>(a.batch) * a.nkv * splits;
  for (long long item = blockIdx.x; item < items; item += gridDim.x) {
    const int split = static_cast<int>(item % splits);
    const long long rest = item / splits;
    attention_item<T>(a, split, static_cast<int>(rest % a.nkv), static_cast<int>(rest / a.nkv),
                      splits, chunk, smem,
                      splits == 1 ? AttentionFinish::direct : AttentionFinish::partials);
    __syncthreads();  // the item's shared memory is read before the next one writes it
  }
}

// The o-proj's input rows [batch][nq d] into xs: every block merges the attention's split partials
// of every head itself (as own::merge_split_softmax: each split rescaled to the largest max),
// rounded once to T. The (max, sum) pairs go to shared memory (mls) in one round of loads, a
// thread a head makes the weights and the denominator, then a thread four elements of a head sums
// the splits' outputs, its loads issued together.
template <typename T>
__device__ void merge_partials(const AttentionArgs& a, T* xs, float* mls) {
  int chunk;
  const int splits = step_attention_splits(a, chunk), d = a.d, rows = a.batch * a.nq;
  float* den = mls + std::size_t(rows) * splits * 2;
  // Other blocks wrote the partials: read from L2 (__ldcg), never a stale L1 line.
  for (int i = threadIdx.x; i < rows * splits * 2; i += blockDim.x)
    mls[i] = __ldcg(a.partial_ml + i);
  __syncthreads();
  for (int row = threadIdx.x; row < rows; row += blockDim.x) {
    float* r = mls + std::size_t(row) * splits * 2;
    float big = -INFINITY;
    for (int s = 0; s < splits; ++s) big = fmaxf(big, r[2 * s]);
    float sum = 0;
    for (int s = 0; s < splits; ++s) {
      const float l = r[2 * s + 1], w = l == 0 ? 0.0f : expf(r[2 * s] - big);
      r[2 * s] = w;
      sum += l * w;
    }
    den[row] = sum;
  }
  __syncthreads();
  const int quads = d / 4;
  for (int u = threadIdx.x; u < rows * quads; u += blockDim.x) {
    const int row = u / quads, e4 = u % quads;
    const float4* o =
        reinterpret_cast<const float4*>(a.partial_o + std::size_t(row) * splits * d) + e4;
    const float* w = mls + std::size_t(row) * splits * 2;
    float4 acc = make_float4(0, 0, 0, 0);
#pragma unroll 16
    for (int s = 0; s < splits; ++s) {
      const float4 v = __ldcg(o + std::size_t(s) * quads);
      acc.x += v.x * w[2 * s];
      acc.y += v.y * w[2 * s];
      acc.z += v.z * w[2 * s];
      acc.w += v.w * w[2 * s];
    }
    T* out = xs + std::size_t(row) * d + 4 * e4;
    out[0] = from_f<T>(acc.x / den[row]);
    out[1] = from_f<T>(acc.y / den[row]);
    out[2] = from_f<T>(acc.z / den[row]);
    out[3] = from_f<T>(acc.w / den[row]);
  }
  __syncthreads();
}

__device__ __forceinline__ void prefetch_l1(const void* p, std::size_t bytes, int lane) {
  const char* c = static_cast<const char*>(p);
  for (std::size_t off = std::size_t(lane) * 128; off < bytes; off += 32 * 128)
    asm volatile("prefetch.global.L1 [%0];" ::"l"(c + off));
}

// The small inputs of a GEMV phase's epilogue into L1 while its rows are staged (a warp each):
// the block's rows of the residual stream, RoPE's frequencies and the position. All are final
// once the phase's barrier has passed.
__device__ void prefetch_phase_inputs(const GemvArgs& a, int elem_size) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (warp == 2 && a.epilogue == Epilogue::residual) {
    int q0, q1;
    share_of(pairs_of(a), q0, q1);
    const char* out = static_cast<const char*>(a.out);
    for (int b = 0; b < a.batch; ++b)
      prefetch_l1(out + (std::size_t(b) * a.n + 2 * std::size_t(q0)) * elem_size,
                  2 * std::size_t(q1 - q0) * elem_size, lane);
  }
  if (warp == 3 && a.epilogue == Epilogue::rope_kv) {
    if (a.inv_freq) prefetch_l1(a.inv_freq, std::size_t(a.d / 2) * sizeof(float), lane);
    if (lane == 0) prefetch_l1(a.pos, sizeof(std::int64_t), 0);
  }
}

// A GEMV phase: the input rows staged (stage_input; after the attention, merge_partials), then the
// block's pieces as they arrive, a group of group_warps warps a row pair (k split over its threads,
// kUnroll2 vectors a round), the epilogue (finish_rows) by the group's lead lanes. seq: the pieces
// the block has consumed.
template <typename T>
__device__ void gemv_phase(const StepPhase& ph, T* xs, WeightStream& stream, int& seq,
                           float (*red)[2][kBatchTile2], const AttentionArgs* merge_from,
                           unsigned long long* mark) {
  constexpr int V = vec_elems<T>();
  const GemvArgs& a = ph.g;
  prefetch_phase_inputs(a, static_cast<int>(sizeof(T)));
  cp_async_wait_all();  // the norm's weights (load_phase); stage_input's barrier publishes them
  int chunk;
  if (merge_from && step_attention_splits(*merge_from, chunk) > 1)
    merge_partials<T>(*merge_from, xs,
                      reinterpret_cast<float*>(xs + (std::size_t(a.batch) * a.k + 3) / 4 * 4));
  else
    stage_input<T>(a, xs);
  if (mark && threadIdx.x == 0) mark[1] = global_ns();
  const int g = ph.group_warps, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int groups = kStepWarps / g, group = warp / g;
  const int t = (warp % g) * 32 + lane, stride = 32 * g, kvec = a.k / V;
  const int per = (kvec + stride - 1) / stride;  // vectors of a row a thread
  const bool split = split_rows(a.epilogue);
  const uint4 zero = make_uint4(0, 0, 0, 0);
  int q, q1;
  share_of(pairs_of(a), q, q1);
  while (q < q1) {
    const int c = piece_pairs(a.epilogue, a.d, ph.chunk_pairs, q, q1);
    const int slot = seq % stream.slots;
    const unsigned long long waited = mark && threadIdx.x == 0 ? global_ns() : 0;
    sm90::mbar_wait(stream.full + slot, static_cast<std::uint32_t>(seq / stream.slots) & 1u);
    if (mark && threadIdx.x == 0) mark[3] += global_ns() - waited;
    const T* W = reinterpret_cast<const T*>(stream.ring + std::size_t(slot) * stream.slot_bytes);
    for (int base = 0; base < c; base += groups) {  // the same trips for the block
      const int i = base + group;
      const bool valid = i < c;
      int r0 = 0, r1 = -1;
      if (valid) rows_of(a, q + i, r0, r1);
      const uint4* w0 = reinterpret_cast<const uint4*>(W + std::size_t(split ? i : 2 * i) * a.k);
      const uint4* w1 = reinterpret_cast<const uint4*>(split ? W + std::size_t(c + i) * a.k
                                                             : W + std::size_t(2 * i + 1) * a.k);
      for (int b0 = 0; b0 < a.batch; b0 += kBatchTile2) {
        const int nbt = min(kBatchTile2, a.batch - b0);
        float acc0[kBatchTile2], acc1[kBatchTile2];
#pragma unroll
        for (int bb = 0; bb < kBatchTile2; ++bb) acc0[bb] = acc1[bb] = 0;
        if (valid) {
          for (int j0 = 0; j0 < per; j0 += kUnroll2) {
            uint4 wa[kUnroll2], wb[kUnroll2];
#pragma unroll
            for (int u = 0; u < kUnroll2; ++u) {
              const int v = t + (j0 + u) * stride;
              wa[u] = v < kvec ? w0[v] : zero;
              wb[u] = v < kvec && r1 >= 0 ? w1[v] : zero;
            }
            fma_rows<T>(wa, wb, xs, a.k, b0, nbt, t, j0, stride, kvec, acc0, acc1);
          }
        }
        float s0, s1;
        pair_sums(acc0, acc1, nbt, g, red, s0, s1);
        if (valid && warp % g == 0 && lane < nbt)
          finish_rows<T>(a, b0 + lane, q + i, r0, r1, s0, s1);
      }
    }
    __syncthreads();  // every thread is done with the slot
    ++seq;
    q += c;
    if (threadIdx.x == 0) stream.top_up(seq);
  }
}

#endif

// Dynamic shared memory: the stream's descriptors (count of them, from 0) and the norm's weight
// and bias copies (from the next 128 bytes), the staged rows or the attention's (from desc_bytes),
// the ring's slots (from desc_bytes + aux_bytes). trace (or null): per phase and block, the time
// the phase began (after its barrier), its input rows were staged (a GEMV) and its work ended
// (before the next barrier).
template <typename T>
__global__ void __launch_bounds__(kStepThreads, 1)
    persistent_step_kernel(const StepPhase* phases, int count, int slots, unsigned slot_bytes,
                           unsigned desc_bytes, unsigned aux_bytes, unsigned* barrier,
                           unsigned long long* trace) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) std::uint64_t full[kMaxSlots];
  constexpr int kWords = (sizeof(StepPhase) + 3) / 4;
  __shared__ __align__(16) int cur_words[2][kWords];  // phase p in cur_words[p % 2]
  __shared__ float red[kStepWarps][2][kBatchTile2];
  StreamDesc* descs = reinterpret_cast<StreamDesc*>(smem);
  unsigned char* aux = smem + desc_bytes;
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    descs[i] = stream_desc(phases[i], static_cast<int>(sizeof(T)));
  // The norm's weight and bias of the phase to come, copied with cp.async where its descriptor is
  // read (before the barrier: weights depend on nothing the step computes); the descriptor then
  // points at the copies (stage_input reads them from shared memory).
  unsigned char* norms = smem + (std::size_t(count) * sizeof(StreamDesc) + 127) / 128 * 128;
  const auto load_phase = [&](int p) {
    const int* src = reinterpret_cast<const int*>(phases + p);
    for (int i = threadIdx.x; i < kWords; i += blockDim.x) cur_words[p % 2][i] = src[i];
    const StepPhase& next = phases[p];
    const bool norm = next.kind == StepPhase::gemv && next.g.norm != NormKind::none;
    const std::size_t bytes = norm ? std::size_t(next.g.k) * sizeof(T) : 0;
    const int vecs = static_cast<int>(bytes / 16);
    for (int i = threadIdx.x; i < vecs; i += blockDim.x) {
      cp_async16(norms + 16 * std::size_t(i), static_cast<const uint4*>(next.g.norm_w) + i);
      if (next.g.norm_b)
        cp_async16(norms + bytes + 16 * std::size_t(i),
                   static_cast<const uint4*>(next.g.norm_b) + i);
    }
    __syncthreads();  // the descriptor's words are written
    if (norm && threadIdx.x == 0) {
      StepPhase& c = *reinterpret_cast<StepPhase*>(cur_words[p % 2]);
      c.g.norm_w = norms;
      if (c.g.norm_b) c.g.norm_b = norms + bytes;
    }
  };
  load_phase(0);
  __syncthreads();
  WeightStream stream{descs, count, slots, slot_bytes, aux + aux_bytes, full};
  if (threadIdx.x == 0) {
    for (int i = 0; i < slots; ++i) sm90::mbar_init(full + i, 1);
    sm90::mbar_init_fence();
    stream.top_up(0);
  }
  __syncthreads();  // the barriers are initialized
  int seq = 0;
  for (int p = 0; p < count; ++p) {
    unsigned long long* mark =
        trace ? trace + (std::size_t(p) * gridDim.x + blockIdx.x) * 4 : nullptr;
    if (mark && threadIdx.x == 0) mark[0] = global_ns();
    const StepPhase& cur = *reinterpret_cast<const StepPhase*>(cur_words[p % 2]);
    const StepPhase& prev = *reinterpret_cast<const StepPhase*>(cur_words[(p + 1) % 2]);
    if (cur.kind == StepPhase::gemv)
      gemv_phase<T>(cur, reinterpret_cast<T*>(aux), stream, seq, red,
                    p > 0 && prev.kind == StepPhase::attention ? &prev.a : nullptr, mark);
    else
      attention_phase<T>(cur.a, aux);
    if (p + 1 == count) break;
    // Into the previous phase's buffer (its last reader, merge_partials, is past a block barrier);
    // grid_barrier syncs the block.
    load_phase(p + 1);
    if (mark && threadIdx.x == 0) mark[2] = global_ns();
    grid_barrier(barrier, static_cast<unsigned>(p + 1) * gridDim.x);
  }
  if (trace && threadIdx.x == 0)
    trace[(std::size_t(count - 1) * gridDim.x + blockIdx.x) * 4 + 2] = global_ns();
#else
  __trap();
#endif
}

template <typename T>
std::size_t& step_allowed() {
  static std::size_t bytes = 0;
  return bytes;
}

}  // namespace

bool plan_persistent_step(std::vector<StepPhase>& phases, Elem e, int sms, StepPlan* plan,
                          const char** why) {
  const auto fail = [&](const char* w) {
    if (why) *why = w;
    return false;
  };
  const std::size_t es = elem_bytes(e);
  std::size_t aux = 0, pair = 0, small_pair = std::numeric_limits<std::size_t>::max();
  for (const StepPhase& p : phases) {
    if (p.kind == StepPhase::gemv) {
      const GemvArgs& g = p.g;
      if (g.batch < 1 || g.batch >= kMmaFromBatch)
        return fail("the persistent step runs batch 1 to 3 (the SIMT GEMV's rows)");
      if (g.k % static_cast<int>(16 / es) != 0)
        return fail("a GEMV's input width must be a multiple of 16 bytes of elements");
      aux = std::max(aux, std::size_t(g.batch) * std::size_t(g.k) * es);
      pair = std::max(pair, 2 * std::size_t(g.k) * es);
      small_pair = std::min(small_pair, 2 * std::size_t(g.k) * es);
    } else {
      const AttentionArgs& a = p.a;
      if (a.nkv <= 0 || a.nq % a.nkv != 0 || std::size_t(a.d) * es % 16 != 0)
        return fail("the attention needs nq a multiple of nkv and 16-byte K and V rows");
      aux = std::max(aux, attention_item_shared_bytes(a.nq / a.nkv, a.d, kAttentionTile,
                                                      kStepMaxSplits, static_cast<int>(es)));
      // The o-proj's staged rows (rounded to 16 bytes) and the merge's.
      aux = std::max(aux, (std::size_t(a.batch) * a.nq * a.d * es + 15) / 16 * 16 +
                              merge_shared_bytes(a.batch * a.nq, kStepMaxSplits));
    }
  }
  aux = (aux + 127) / 128 * 128;
  std::size_t norms = 0;  // the norm's weight and bias copies (load_phase)
  for (const StepPhase& p : phases)
    if (p.kind == StepPhase::gemv && p.g.norm != NormKind::none)
      norms = std::max(norms, std::size_t(p.g.k) * es * (p.g.norm_b ? 2 : 1));
  const std::size_t descs =
      (phases.size() * sizeof(StreamDesc) + 127) / 128 * 128 + (norms + 127) / 128 * 128;
  // A slot holds the longest row pair, and kStepWarps pairs of the shortest where three slots
  // still fit (a piece then gives each warp a pair: no reduction across warps).
  if (pair == 0 || descs + aux + 2 * pair > kStepShared)
    return fail(
        "the staged rows, the phases' descriptors and two slots of a weight row pair exceed "
        "220 KiB of shared memory");
  const std::size_t ring = kStepShared - descs - aux;
  const std::size_t slot =
      std::max((pair + 127) / 128 * 128, std::min(kStepWarps * small_pair, ring / 3) / 128 * 128);
  const int slots = static_cast<int>(std::min<std::size_t>(kMaxSlots, ring / slot));
  if (slots < 2) return fail("fewer than two weight slots fit in shared memory");
  for (StepPhase& p : phases) {
    if (p.kind != StepPhase::gemv) continue;
    p.chunk_pairs = static_cast<int>(slot / (2 * std::size_t(p.g.k) * es));
    // A warp a pair where a piece keeps most warps busy; else the fewest warps a pair that
    // give every group of warps a pair.
    int g = 1;
    if (p.chunk_pairs < kStepWarps * 3 / 4) {
      g = kStepWarps;
      while (g > 1 && kStepWarps / (g / 2) <= p.chunk_pairs) g /= 2;
    }
    p.group_warps = g;
  }
  plan->desc_bytes = descs;
  plan->blocks = std::max(1, sms);
  plan->slots = slots;
  plan->slot_bytes = slot;
  plan->aux_bytes = aux;
  return true;
}

void persistent_step(const StepPhase* phases, int count, const StepPlan& plan, unsigned* barrier,
                     unsigned long long* trace, Elem e, cudaStream_t s) {
  CUDA_CHECK(cudaMemsetAsync(barrier, 0, sizeof(unsigned), s));
  if (trace)
    CUDA_CHECK(cudaMemsetAsync(trace, 0, sizeof(unsigned long long) * 4 * count * plan.blocks, s));
  dispatch(e, [&](auto t) {
    using T = decltype(t);
    allow_shared(persistent_step_kernel<T>, plan.shared(), step_allowed<T>());
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(static_cast<unsigned>(plan.blocks));
    config.blockDim = dim3(kStepThreads);
    config.dynamicSmemBytes = plan.shared();
    config.stream = s;
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeCooperative;  // every block resident: the grid barrier
    attribute[0].val.cooperative = 1;
    config.attrs = attribute;
    config.numAttrs = 1;
    CUDA_CHECK(cudaLaunchKernelEx(&config, persistent_step_kernel<T>, phases, count, plan.slots,
                                  static_cast<unsigned>(plan.slot_bytes),
                                  static_cast<unsigned>(plan.desc_bytes),
                                  static_cast<unsigned>(plan.aux_bytes), barrier, trace));
  });
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace transformer::cuda
