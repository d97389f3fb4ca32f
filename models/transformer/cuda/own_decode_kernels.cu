// own_cuda's GEMV (norm_gemv, own_decode_kernels.hpp): the SIMT kernels (variant 2, the default,
// and variant 1) and the host side that sizes and dispatches every GEMV launch, the tensor-core
// kernel (own_gemv_mma_kernels.cu) included; the pieces the kernels share: own_gemv_device.cuh.
// Built only with a CUDA LibTorch.
#include "models/transformer/cuda/own_decode_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "models/transformer/cuda/own_gemv_device.cuh"

namespace transformer::cuda {
namespace {

using namespace own_device;

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
      float s0, s1;
      pair_sums(acc0, acc1, nbt, g, red, s0, s1);
      if (valid && lead && lane < nbt) finish_rows<T>(a, b0 + lane, pair, r0, r1, s0, s1);
    }
  };
  for (int base = first; base < pairs; base += 2 * step) {  // the same trips for the block
    one_pair(base, wa, wb);
    if (base + step < pairs) one_pair(base + step, na, nb);
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

}  // namespace

bool use_mma(const GemvArgs& a, Elem e) {
  return e != Elem::f32 && a.batch >= a.mma_from;
}

std::size_t gemv_shared_bytes(const GemvArgs& a, Elem e) {
  const std::size_t staged = a.norm == NormKind::none && !a.ids
                                 ? 0
                                 : std::size_t(a.batch) * std::size_t(a.k) * elem_bytes(e);
  if (!use_mma(a, e)) return staged;
  const std::size_t rows =
      mma_stages(a, elem_bytes(e)) ? std::size_t(a.batch) * std::size_t(a.k) * elem_bytes(e) : 0;
  return (rows + 15) / 16 * 16 + kMmaSumBytes;
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

// The tensor-core GEMV's input rows are made apart (norm_rows) where it has a prologue and a
// scratch for them.
bool rows_apart(const GemvArgs& a, Elem e) {
  return use_mma(a, e) && (a.norm != NormKind::none || a.ids) && a.xn;
}

int gemv_launches(const GemvArgs& a, Elem e) {
  return rows_apart(a, e) ? 2 : 1;
}

void norm_gemv(const GemvArgs& args, Elem e, int sms, bool pdl, cudaStream_t s) {
  GemvArgs a = args;
  if (rows_apart(a, e)) {
    launch_norm_rows(a, e, pdl, s);
    CUDA_CHECK(cudaGetLastError());
    a.x = a.xn;
    a.norm = NormKind::none;
    a.ids = nullptr;
    a.x_out = nullptr;
  }
  const int pairs = pairs_of(a);
  const bool staged = a.norm != NormKind::none || a.ids;
  if (use_mma(a, e)) {
    // No more blocks than fit at once (two of kMmaWarps a multiprocessor where their shared
    // memory allows, one of kMmaMaxWarps where there are fewer tiles than multiprocessors): each
    // block walks its tiles with the next chunk's loads in flight.
    const int tiles = (pairs + 7) / 8;
    const std::size_t shared = gemv_shared_bytes(a, e);
    const int warps = tiles < sms ? kMmaMaxWarps : kMmaWarps;
    const int per_sm = warps == kMmaMaxWarps || 2 * shared > kSharedPerSm ? 1 : 2;
    const int blocks = std::max(1, std::min(tiles, per_sm * sms));
    launch_mma_gemv(a, e, blocks, warps, shared, pdl, s);
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
      launch_pdl(norm_gemv_kernel_v1<T>, dim3(blocks), dim3(warps * 32), shared, pdl, s, a);
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
    launch_pdl(norm_gemv_kernel_v2<T>, dim3(blocks), dim3(warps * 32), shared, pdl, s, a, g);
  });
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace transformer::cuda
