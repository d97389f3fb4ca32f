// The decode step's GEMV on tensor cores (fp16, bf16; batch >= kMmaMinBatch), beside the SIMT
// variants in own_decode_kernels.cu, whose norm_gemv launches it through launch_mma_gemv. Needs
// sm_80 or newer (mma.sync m16n8k16); built only with a CUDA LibTorch, with the rest of own_cuda.
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
std::size_t& mma_allowed() {
  static std::size_t bytes = 0;
  return bytes;
}

}  // namespace

void launch_mma_gemv(const GemvArgs& a, Elem e, int blocks, std::size_t shared, bool pdl,
                     cudaStream_t s) {
  dispatch(e, [&](auto t) {
    using T = decltype(t);
    if constexpr (!std::is_same_v<T, float>) {
      allow_shared(mma_gemv_kernel<T>, shared, mma_allowed<T>());
      launch(mma_gemv_kernel<T>, dim3(blocks), dim3(kMmaWarps * 32), shared, pdl, s, a);
    }
  });
}

}  // namespace transformer::cuda::own_device
