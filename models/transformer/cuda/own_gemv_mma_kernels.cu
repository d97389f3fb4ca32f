// The decode step's GEMV on tensor cores (fp16, bf16; batch >= GemvArgs::mma_from), beside the
// SIMT variants in own_decode_kernels.cu, whose norm_gemv launches it through launch_mma_gemv.
// Needs sm_80 or newer (mma.sync m16n8k16); built only with a CUDA LibTorch, with the rest of
// own_cuda.
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c models/transformer/cuda/own_gemv_mma_kernels.cu
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "models/transformer/cuda/own_gemv_device.cuh"

namespace transformer::cuda::own_device {
namespace {

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

// The input rows of a tensor-core GEMV with a prologue (norm_gemv with a.xn), made once: block b
// makes row b as stage_input does (the embedding, written to x_out too; the norm) and writes it
// to xn. It lets the GEMV start at once: the GEMV's weight loads overlap it.
template <typename T>
__global__ void __launch_bounds__(kNormRowsWarps * 32) norm_rows_kernel(GemvArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  launch_dependents();
  wait_for_previous();
  const std::size_t b = blockIdx.x;
  GemvArgs r = a;
  r.batch = 1;
  r.x = static_cast<const T*>(a.x) + b * a.k;
  if (a.ids) {
    r.ids = a.ids + b;
    r.x_out = a.x_out ? static_cast<T*>(a.x_out) + b * a.k : nullptr;
  }
  T* xs = reinterpret_cast<T*>(smem);
  stage_input<T>(r, xs, true);
  const uint4* src = reinterpret_cast<const uint4*>(xs);
  uint4* dst = reinterpret_cast<uint4*>(static_cast<T*>(a.xn) + b * a.k);
  for (int i = threadIdx.x; i < a.k / vec_elems<T>(); i += blockDim.x) dst[i] = src[i];
}

// The GEMV on tensor cores (fp16, bf16; batch >= GemvArgs::mma_from).
// - Tile: 8 row pairs (A rows 0-7 the pairs' r0, rows 8-15 their r1) x 8 NT batch rows (NT
//   n-tiles of 8). The block's warps split k; each walks its share of the tile in rounds of
//   kMmaUnroll 32-element steps, a warp's steps of a round adjacent (256 contiguous bytes of each
//   row).
// - Chunks: a warp's work is one sequence of chunks (one round of one tile and one pass of 8 NT
//   batch rows). The block's tiles come grid-strided, so every warp of the block sees the same
//   sequence. Two register buffers: each takes the chunk two ahead as soon as its last MMA is
//   issued, so the next chunk's loads are in flight while this one computes and while the tile is
//   summed. The first two chunks are loaded before the wait on the previous kernel (weights only:
//   no earlier kernel writes them).
// - Input rows: copied into shared memory where mma_stages (made there by stage_input's prologue
//   where the GEMV has one), else read from global memory.
// - Sums: after a tile's last round the warps' sums meet in shared memory (two buffers, so one
//   barrier a tile), and warps 0 .. NT-1 finish the rows as the SIMT kernel does.
// - k order: free inside an mma as long as A and B share it. Lane (g = lane / 4, t = lane % 4)
//   loads 8 consecutive elements (16 bytes) at k = 32 s + 8 t of its two weight rows and of x row
//   g, and feeds elements 0-3 to one mma, 4-7 to the next.
template <typename T, int NT>
__global__ void __launch_bounds__(kMmaMaxWarps * 32) mma_gemv_kernel(GemvArgs a) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int warps = blockDim.x / 32, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int pairs = pairs_of(a), tiles = (pairs + 7) / 8, kchunks = a.k / 8;
  const int steps = (kchunks + 3) / 4;  // 32 elements of k each
  const int rounds = (steps + warps * kMmaUnroll - 1) / (warps * kMmaUnroll);
  const int passes = (a.batch + 8 * NT - 1) / (8 * NT);
  const int units = passes * rounds;  // chunks a tile
  const int my_tiles =
      static_cast<int>(blockIdx.x) < tiles ? (tiles - 1 - blockIdx.x) / gridDim.x + 1 : 0;
  const int chunks = my_tiles * units;
  const T* W = static_cast<const T*>(a.w);
  const uint4 zero = make_uint4(0, 0, 0, 0);
  const auto tile_of = [&](int c) { return blockIdx.x + c / units * gridDim.x; };
  // Chunk c's weights: kMmaUnroll 16-byte vectors of each of the lane's two rows.
  const auto load = [&](int c, uint4* wa, uint4* wb) {
    const int pair = tile_of(c) * 8 + g, round = c % rounds;
    int r0 = 0, r1 = -1;
    if (pair < pairs) rows_of(a, pair, r0, r1);
    const uint4* w0 = reinterpret_cast<const uint4*>(W + std::size_t(r0) * a.k);
    const uint4* w1 = reinterpret_cast<const uint4*>(W + std::size_t(r1 < 0 ? r0 : r1) * a.k);
#pragma unroll
    for (int u = 0; u < kMmaUnroll; ++u) {
      const int s = (round * warps + warp) * kMmaUnroll + u, ch = s * 4 + t;
      const bool in = pair < pairs && ch < kchunks;
      wa[u] = in ? __ldcs(w0 + ch) : zero;
      wb[u] = in && r1 >= 0 ? __ldcs(w1 + ch) : zero;
    }
  };
  uint4 wa0[kMmaUnroll], wb0[kMmaUnroll], wa1[kMmaUnroll], wb1[kMmaUnroll];
  if (chunks > 0) load(0, wa0, wb0);  // while the previous kernel ends
  if (chunks > 1) load(1, wa1, wb1);
  launch_dependents();
  wait_for_previous();
  const bool staged = mma_stages(a, sizeof(T));
  const T* x = static_cast<const T*>(a.x);
  if (staged) {
    T* xs = reinterpret_cast<T*>(smem);
    stage_input<T>(a, xs);
    x = xs;
  }
  const std::size_t staged_bytes =
      staged ? (std::size_t(a.batch) * a.k * sizeof(T) + 15) / 16 * 16 : 0;
  // [2 buffers][warps][NT n-tiles][4][32 lanes]
  float* red = reinterpret_cast<float*>(smem + staged_bytes);
  float acc[NT][4];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[nt][i] = 0;
  // Chunk c from buffer (wa, wb); then the buffer takes chunk c + 2; after a tile's last round,
  // the tile's sums.
  const auto step = [&](int c, uint4* wa, uint4* wb) {
    const int round = c % rounds, unit = c / rounds, b0 = unit % passes * 8 * NT;
#pragma unroll
    for (int u = 0; u < kMmaUnroll; ++u) {
      const int s = (round * warps + warp) * kMmaUnroll + u, ch = s * 4 + t;
      if (s >= steps) break;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int n = b0 + nt * 8 + g;
        const uint4 xv =
            n < a.batch && ch < kchunks
                ? *reinterpret_cast<const uint4*>(x + std::size_t(n) * a.k + std::size_t(ch) * 8)
                : zero;
        const unsigned a_lo[4] = {wa[u].x, wb[u].x, wa[u].y, wb[u].y};
        const unsigned b_lo[2] = {xv.x, xv.y};
        mma_16816<T>(acc[nt], a_lo, b_lo);
        const unsigned a_hi[4] = {wa[u].z, wb[u].z, wa[u].w, wb[u].w};
        const unsigned b_hi[2] = {xv.z, xv.w};
        mma_16816<T>(acc[nt], a_hi, b_hi);
      }
    }
    if (c + 2 < chunks) load(c + 2, wa, wb);
    if (round != rounds - 1) return;
    float* buf = red + std::size_t(unit % 2) * warps * NT * 4 * 32;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        buf[((warp * NT + nt) * 4 + i) * 32 + lane] = acc[nt][i];
        acc[nt][i] = 0;
      }
    // One barrier a tile: the next tile writes the other buffer, and this one again only after
    // the next tile's barrier, which the warps reading it below reach after their reads.
    __syncthreads();
    const int pair = tile_of(c) * 8 + g;
    if (warp < NT && pair < pairs) {  // warp nt finishes n-tile nt
      const int nt = warp;
      float sum[4] = {0, 0, 0, 0};
      for (int w = 0; w < warps; ++w)
#pragma unroll
        for (int i = 0; i < 4; ++i) sum[i] += buf[((w * NT + nt) * 4 + i) * 32 + lane];
      int r0, r1;
      rows_of(a, pair, r0, r1);
      // sum[0..1]: row r0 at batch columns 2t, 2t + 1; sum[2..3]: row r1 at the same columns
      for (int j = 0; j < 2; ++j) {
        const int b = b0 + nt * 8 + 2 * t + j;
        if (b < a.batch) finish_rows<T>(a, b, pair, r0, r1, sum[j], sum[2 + j]);
      }
    }
  };
  for (int c = 0; c < chunks; c += 2) {  // the same trips for every warp of the block
    step(c, wa0, wb0);
    if (c + 1 < chunks) step(c + 1, wa1, wb1);
  }
}

template <typename T>
std::size_t& norm_rows_allowed() {
  static std::size_t bytes = 0;
  return bytes;
}

template <typename T, int NT>
std::size_t& mma_allowed() {
  static std::size_t bytes = 0;
  return bytes;
}

}  // namespace

void launch_mma_gemv(const GemvArgs& a, Elem e, int blocks, int warps, std::size_t shared, bool pdl,
                     cudaStream_t s) {
  dispatch(e, [&](auto t) {
    using T = decltype(t);
    if constexpr (!std::is_same_v<T, float>) {
      const auto go = [&](auto kernel, std::size_t& allowed) {
        allow_shared(kernel, shared, allowed);
        launch_pdl(kernel, dim3(blocks), dim3(warps * 32), shared, pdl, s, a);
      };
      if (a.batch <= 8)
        go(mma_gemv_kernel<T, 1>, mma_allowed<T, 1>());
      else
        go(mma_gemv_kernel<T, 2>, mma_allowed<T, 2>());
    }
  });
}

void launch_norm_rows(const GemvArgs& a, Elem e, bool pdl, cudaStream_t s) {
  dispatch(e, [&](auto t) {
    using T = decltype(t);
    const std::size_t shared = std::size_t(a.k) * sizeof(T);
    allow_shared(norm_rows_kernel<T>, shared, norm_rows_allowed<T>());
    launch_pdl(norm_rows_kernel<T>, dim3(a.batch), dim3(kNormRowsWarps * 32), shared, pdl, s, a);
  });
}

}  // namespace transformer::cuda::own_device
