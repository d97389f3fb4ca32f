// im2col + GEMM convolution on CUDA cores, FP32: numbered variants side by side (llm.c style),
// each with its launcher. The backend conv/cuda/im2col_gemm_cuda.cpp runs one of them
// (BackendOptions::variant, "" = the default, the fastest); each is checked against the float64
// reference by tests/conv/test_backends_gpu.cpp and timed by myconv like any backend.
//
// Build (part of the normal build when CUDA is found; pick the GPU's architecture to build fast):
//   cmake -S . -B build -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build build
// Registers and spills of every kernel:
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c conv/cuda/im2col_gemm_kernels.cu -o /dev/null
// Run one variant (on a GPU):
//   build/experiments/myconv --backend im2col_gemm_cuda --variant 1 --problem mb32ic64ih56oc64kh3
//   build/tests/test_backends_gpu   (every variant against the reference)
//
// Variants:
//   1  im2col + GEMM, the textbook two-kernel form: one kernel writes the column matrix of every
//      group to a workspace (G*K*M floats), then the tiled SGEMM below multiplies each group's
//      weights by it. Costs the workspace and a round trip of K times the input through memory.
//   2  implicit GEMM: the same SGEMM, with the im2col gather fused into its shared-memory load
//      stage, so no column matrix exists. Row offsets (k -> channel, tap) computed on the fly.
//   3  implicit GEMM with precomputed rows: variant 2 reading each k's offset and tap
//      displacement from a K-entry table built once, instead of dividing per element.
//
// Measured on an NVIDIA H200 (CUDA 13.0, sm_90 build, cuDNN 9 with CUDNN_FMA_MATH), median GPU
// time in ms, nchw / nhwc, ResNet-50 layers at batch 32 unless noted. v3 is the default: fastest
// of ours on most shapes and ahead of cuDNN's IMPLICIT_PRECOMP_GEMM on the large-M ones; where the
// grid has fewer blocks than the GPU has SMs (7x7 maps, batch 1) all variants are latency-bound
// and v1 (float4 loads only) leads (the table below, before split-K).
//   problem                      v1            v2            v3            cudnn heuristic
//   mb32ic3ih224oc64kh7sh2ph3    0.764/0.794   0.431/0.294   0.269/0.272   0.396/0.425
//   mb32ic64ih56oc64kh3ph1       0.731/0.755   0.434/0.307   0.256/0.276   0.306/0.348
//   mb32ic64ih56oc256kh1         0.175/0.181   0.157/0.134   0.131/0.133   0.301/0.435
//   mb32ic128ih28oc128kh3ph1     0.511/0.518   0.399/0.296   0.309/0.293   0.164/0.334 (FFT)
//   mb32ic256ih14oc256kh3ph1     0.394/0.394   0.497/0.344   0.371/0.345   0.327/0.355
//   mb32ic512ih7oc512kh3ph1      0.597/0.602   0.982/0.679   0.734/0.682   0.383/0.479
//   g32mb32ic32ih56oc32kh3ph1    0.427/0.466   0.285/0.244   0.179/0.219   0.052/0.199
//   mb1ic256ih14oc256kh3ph1      0.272/0.272   0.493/0.342   0.368/0.343   0.128/0.147
// Split-K (choose_fp32_splits: grids under 1.4 blocks per SM, FP32 partials summed in split order,
// deterministic) then took v3 to, nchw / nhwc with cuDNN beside: res4 0.326/0.306 (0.260/0.278),
// res5 0.337/0.310 (0.340/0.362), mb1ic256ih14oc256kh3ph1 0.036/0.034 (0.062/0.079).
//
// The SGEMM core all three share: per group, out[oc][m] = sum_k wei[oc][k] * col[k][m], one
// thread block per BM x BN output tile (blockIdx.z = group, times splits with split-K); k advances
// in BK slices staged in shared memory, double-buffered (the next slice is loaded into registers
// while the current one is multiplied, one barrier per slice); each thread accumulates a TM x TN
// block in registers, taken as 4-wide slices spread across the tile so that its shared-memory
// float4 reads are conflict-free; weights are read as float4 along k when K % 4 == 0; every edge
// (any M, N, K) is guarded with zero fill; the epilogue stores float4 where 4 outputs are
// contiguous and aligned.
#include "conv/cuda/im2col_gemm_kernels.hpp"

#include <cstdint>
#include <stdexcept>

#include "core/cuda/cuda_check.hpp"

namespace conv {
namespace {

// ---- The SGEMM core -----------------------------------------------------------------------------

template <int BM_, int BN_, int BK_, int TM_, int TN_, int kMinBlocks_>
struct Tile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_;
  // Blocks per SM the register allocation must allow (__launch_bounds__): caps registers per
  // thread at 65536 / (kThreads * kMinBlocks), at most 255.
  static constexpr int kMinBlocks = kMinBlocks_;
  static constexpr int kThreadRows = BM / TM, kThreadCols = BN / TN;
  static constexpr int kThreads = kThreadRows * kThreadCols;
  // A thread's TM rows are TM/4 slices of 4 consecutive rows, one in each BM/(TM/4) band.
  static constexpr int kRowSlices = TM / 4, kColSlices = TN / 4;
  static constexpr int kRowBand = BM / kRowSlices, kColBand = BN / kColSlices;
  // Shared rows padded by 4 floats: transposed stores spread over banks, float4 reads aligned.
  static constexpr int kPad = 4;
  // Weights: float4 groups along k.
  static constexpr int kAGroups = BM * BK / 4;
  static constexpr int kAPerThread = (kAGroups + kThreads - 1) / kThreads;
  // Column matrix: elements per thread.
  static constexpr int kBPerThread = BK * BN / kThreads;
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "4-wide slices");
  static_assert(BK * BN % kThreads == 0, "B slice must split evenly over the threads");
  static_assert(kThreads % BN == 0 && kThreads % BK == 0, "gather mappings");
};
using Tile128x128 = Tile<128, 128, 8, 8, 8, 2>;
using Tile64x128 = Tile<64, 128, 8, 8, 8, 4>;
using Tile32x128 = Tile<32, 128, 8, 4, 8, 4>;

// The weights' part of one k slice: rows oc0.. of the group's (OC/G x K) matrix, columns k0..
// Four consecutive floats of a row-major matrix with `cols` columns: one 16-byte load when the
// rows are 16-byte aligned and the row is in range, else element by element with zeros past
// the edges (a row out of range reads as zeros too).
__device__ __forceinline__ float4 load_row_float4(const float* p, bool row_ok, int col, int cols,
                                                  bool vector_ok) {
  if (vector_ok && row_ok && col < cols) return *reinterpret_cast<const float4*>(p);
  float4 v;
  v.x = row_ok && col + 0 < cols ? p[0] : 0.0f;
  v.y = row_ok && col + 1 < cols ? p[1] : 0.0f;
  v.z = row_ok && col + 2 < cols ? p[2] : 0.0f;
  v.w = row_ok && col + 3 < cols ? p[3] : 0.0f;
  return v;
}

template <class T>
struct WeightSlice {
  float4 v[T::kAPerThread];

  __device__ __forceinline__ void load(const Im2colGeometry& g, const float* __restrict__ wei,
                                       int oc0, int k0, int tid) {
    const bool vector_ok = g.k % 4 == 0;  // row starts 16-byte aligned
#pragma unroll
    for (int j = 0; j < T::kAPerThread; ++j) {
      const int id = tid + j * T::kThreads;
      const int oc = oc0 + id / (T::BK / 4), k = k0 + (id % (T::BK / 4)) * 4;
      if (T::kAGroups % T::kThreads != 0 && id >= T::kAGroups) break;
      v[j] = load_row_float4(wei + std::int64_t(oc) * g.k + k, oc < g.ocg, k, g.k, vector_ok);
    }
  }
  // Stored transposed, As[k][oc], so that the multiply reads float4 along oc.
  __device__ __forceinline__ void store(float (*As)[T::BM + T::kPad], int tid) const {
#pragma unroll
    for (int j = 0; j < T::kAPerThread; ++j) {
      const int id = tid + j * T::kThreads;
      if (T::kAGroups % T::kThreads != 0 && id >= T::kAGroups) break;
      const int row = id / (T::BK / 4), kq = (id % (T::BK / 4)) * 4;
      As[kq + 0][row] = v[j].x;
      As[kq + 1][row] = v[j].y;
      As[kq + 2][row] = v[j].z;
      As[kq + 3][row] = v[j].w;
    }
  }
};

// The GEMM of one output tile. BLoader fills the column-matrix part of each k slice (Bs[k][m]):
// from a column buffer (variant 1) or by gathering from the input (variants 2, 3). It provides
// Shared (its block-wide state), begin() (before the first barrier), load() and store().
// Split-K (splits > 1): blockIdx.z = group * splits + split; split s multiplies the k slices
// [mma_split_begin(s), mma_split_begin(s + 1)) and writes its partial output to
// dst + s * (M * OC), in the output's layout; launch_fp32_split_reduce sums them in split order.
template <class T, class BLoader>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocks)
    im2col_gemm_kernel(const Im2colGeometry g, const float* __restrict__ wei,
                       const typename BLoader::Params params, float* __restrict__ dst, int splits) {
  __shared__ __align__(16) float As[2][T::BK][T::BM + T::kPad];
  __shared__ __align__(16) float Bs[2][T::BK][T::BN + T::kPad];
  __shared__ typename BLoader::Shared bshared;

  const int tid = threadIdx.x;
  const int m0 = blockIdx.x * T::BN, oc0 = blockIdx.y * T::BM;
  const int group = blockIdx.z / splits, split = blockIdx.z - group * splits;
  if (splits > 1) dst += std::int64_t(split) * g.m * g.oc;
  const int all_slices = (g.k + T::BK - 1) / T::BK;
  const int first = mma_split_begin(all_slices, splits, split);
  const int slices = mma_split_begin(all_slices, splits, split + 1) - first;
  const float* wei_group = wei + std::int64_t(group) * g.ocg * g.k;
  BLoader bload(params);
  bload.begin(g, group, m0, tid, bshared);
  __syncthreads();

  WeightSlice<T> aslice;
  aslice.load(g, wei_group, oc0, first * T::BK, tid);
  bload.load(g, first * T::BK, m0, tid, bshared);
  aslice.store(As[0], tid);
  bload.store(Bs[0], tid);
  __syncthreads();

  const int ty = tid / T::kThreadCols, tx = tid % T::kThreadCols;
  float acc[T::TM][T::TN];
#pragma unroll
  for (int i = 0; i < T::TM; ++i)
#pragma unroll
    for (int j = 0; j < T::TN; ++j) acc[i][j] = 0.0f;

  for (int s = 0; s < slices; ++s) {
    const int cur = s & 1;
    const bool more = s + 1 < slices;
    if (more) {  // next slice into registers; its latency hides behind the multiply below
      aslice.load(g, wei_group, oc0, (first + s + 1) * T::BK, tid);
      bload.load(g, (first + s + 1) * T::BK, m0, tid, bshared);
    }
#pragma unroll
    for (int kk = 0; kk < T::BK; ++kk) {
      float a[T::TM], b[T::TN];
#pragma unroll
      for (int r = 0; r < T::kRowSlices; ++r) {
        const float4 x = *reinterpret_cast<const float4*>(&As[cur][kk][r * T::kRowBand + ty * 4]);
        a[r * 4 + 0] = x.x;
        a[r * 4 + 1] = x.y;
        a[r * 4 + 2] = x.z;
        a[r * 4 + 3] = x.w;
      }
#pragma unroll
      for (int c = 0; c < T::kColSlices; ++c) {
        const float4 x = *reinterpret_cast<const float4*>(&Bs[cur][kk][c * T::kColBand + tx * 4]);
        b[c * 4 + 0] = x.x;
        b[c * 4 + 1] = x.y;
        b[c * 4 + 2] = x.z;
        b[c * 4 + 3] = x.w;
      }
#pragma unroll
      for (int i = 0; i < T::TM; ++i)
#pragma unroll
        for (int j = 0; j < T::TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    if (more) {  // the other buffer: everyone finished reading it before the last barrier
      aslice.store(As[cur ^ 1], tid);
      bload.store(Bs[cur ^ 1], tid);
    }
    __syncthreads();
  }

  // Epilogue: acc[i][j] is out[oc0 + row(i)][m0 + col(j)] of this group. Columns outermost, so
  // that each pixel's output offset is computed once and not held across the whole epilogue.
  const std::int64_t channel_stride = im2col_dst_channel_stride(g);
  const int channel0 = group * g.ocg;
  if (!g.nhwc && (g.oh * g.ow) % 4 == 0) {
    // nchw: 4 consecutive pixels of one image are contiguous and 16-byte aligned.
#pragma unroll
    for (int c = 0; c < T::kColSlices; ++c) {
      const int m = m0 + c * T::kColBand + tx * 4;
      if (m >= g.m) continue;
      float* out = dst + im2col_dst_column(g, m);
#pragma unroll
      for (int i = 0; i < T::TM; ++i) {
        const int oc = oc0 + (i / 4) * T::kRowBand + ty * 4 + i % 4;
        if (oc >= g.ocg) continue;
        *reinterpret_cast<float4*>(out + std::int64_t(channel0 + oc) * channel_stride) =
            make_float4(acc[i][c * 4 + 0], acc[i][c * 4 + 1], acc[i][c * 4 + 2], acc[i][c * 4 + 3]);
      }
    }
  } else if (g.nhwc && g.ocg % 4 == 0) {
    // nhwc: 4 consecutive channels of one pixel are contiguous and 16-byte aligned.
#pragma unroll
    for (int j = 0; j < T::TN; ++j) {
      const int m = m0 + (j / 4) * T::kColBand + tx * 4 + j % 4;
      if (m >= g.m) continue;
      float* out = dst + im2col_dst_column(g, m) + channel0;
#pragma unroll
      for (int r = 0; r < T::kRowSlices; ++r) {
        const int oc = oc0 + r * T::kRowBand + ty * 4;
        if (oc >= g.ocg) continue;
        *reinterpret_cast<float4*>(out + oc) =
            make_float4(acc[r * 4 + 0][j], acc[r * 4 + 1][j], acc[r * 4 + 2][j], acc[r * 4 + 3][j]);
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < T::TN; ++j) {
      const int m = m0 + (j / 4) * T::kColBand + tx * 4 + j % 4;
      if (m >= g.m) continue;
      float* out = dst + im2col_dst_column(g, m);
#pragma unroll
      for (int i = 0; i < T::TM; ++i) {
        const int oc = oc0 + (i / 4) * T::kRowBand + ty * 4 + i % 4;
        if (oc < g.ocg) out[std::int64_t(channel0 + oc) * channel_stride] = acc[i][j];
      }
    }
  }
}

// dst: the output, or with split-K the partials (splits * M * OC floats).
template <class T, class BLoader>
void launch_gemm(const Im2colGeometry& g, const float* wei, const typename BLoader::Params& params,
                 float* dst, int splits, cudaStream_t stream) {
  if (splits < 1 || g.groups * splits > 65535) throw std::logic_error("split-K: bad split count");
  const dim3 grid(unsigned((g.m + T::BN - 1) / T::BN), unsigned((g.ocg + T::BM - 1) / T::BM),
                  unsigned(g.groups * splits));
  im2col_gemm_kernel<T, BLoader><<<grid, T::kThreads, 0, stream>>>(g, wei, params, dst, splits);
  CUDA_CHECK_LAST_LAUNCH();
}

// Runs launch_gemm<Tile, Loader<Tile>> for the tile chosen at run time.
template <template <class> class Loader, class Params>
void dispatch_tile(const Im2colGeometry& g, GemmTile tile, const float* wei, const Params& params,
                   float* dst, int splits, cudaStream_t stream) {
  switch (tile) {
    case GemmTile::t128x128:
      launch_gemm<Tile128x128, Loader<Tile128x128>>(g, wei, params, dst, splits, stream);
      break;
    case GemmTile::t64x128:
      launch_gemm<Tile64x128, Loader<Tile64x128>>(g, wei, params, dst, splits, stream);
      break;
    case GemmTile::t32x128:
      launch_gemm<Tile32x128, Loader<Tile32x128>>(g, wei, params, dst, splits, stream);
      break;
  }
}

// ---- Variant 1: im2col kernel + SGEMM from the column buffer ------------------------------------

// col[group][k][m] for every group: one thread per column m (its decomposition done once), the
// block's rows k strided over blockIdx.y. Writes are coalesced along m; reads follow the input.
__global__ void im2col_kernel(const Im2colGeometry g, const float* __restrict__ src,
                              float* __restrict__ col) {
  const int m = blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= g.m) return;
  const Im2colColumn column = im2col_column(g, m);
  const int rows = g.groups * g.k;
  for (int gk = blockIdx.y; gk < rows; gk += gridDim.y) {
    const int group = gk / g.k, k = gk - group * g.k;
    const std::int64_t off =
        im2col_combine(g, im2col_group_offset(g, group), column, im2col_row(g, k));
    col[std::int64_t(gk) * g.m + m] = off >= 0 ? src[off] : 0.0f;
  }
}

// Bs from the group's (K x M) column matrix, float4 along m when M % 4 == 0.
struct ColumnBufferParams {
  const float* col;  // all groups' column matrices
};
template <class T>
struct ColumnBufferLoader {
  using Params = ColumnBufferParams;
  struct Shared {};
  static constexpr int kGroups = T::BK * T::BN / 4;
  static constexpr int kPerThread = kGroups / T::kThreads;
  static_assert(kGroups % T::kThreads == 0, "float4 groups must split evenly");
  const float* col;
  float4 v[kPerThread];

  __device__ explicit ColumnBufferLoader(const Params& p) : col(p.col) {}
  __device__ __forceinline__ void begin(const Im2colGeometry& g, int group, int, int, Shared&) {
    col += std::int64_t(group) * g.k * g.m;  // this group's matrix
  }
  __device__ __forceinline__ void load(const Im2colGeometry& g, int k0, int m0, int tid,
                                       const Shared&) {
    const bool vector_ok = g.m % 4 == 0;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int id = tid + j * T::kThreads;
      const int k = k0 + id / (T::BN / 4), m = m0 + (id % (T::BN / 4)) * 4;
      v[j] = load_row_float4(col + std::int64_t(k) * g.m + m, k < g.k, m, g.m, vector_ok);
    }
  }
  __device__ __forceinline__ void store(float (*Bs)[T::BN + T::kPad], int tid) const {
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int id = tid + j * T::kThreads;
      *reinterpret_cast<float4*>(&Bs[id / (T::BN / 4)][(id % (T::BN / 4)) * 4]) = v[j];
    }
  }
};

}  // namespace

std::size_t im2col_buffer_elements(const Im2colGeometry& g) {
  return std::size_t(g.groups) * std::size_t(g.k) * std::size_t(g.m);
}

void launch_im2col(const Im2colGeometry& g, const float* src, float* col, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int rows = g.groups * g.k;
  const dim3 grid(unsigned((g.m + kThreads - 1) / kThreads), unsigned(rows < 65535 ? rows : 65535));
  im2col_kernel<<<grid, kThreads, 0, stream>>>(g, src, col);
  CUDA_CHECK_LAST_LAUNCH();
}

void launch_gemm_from_columns(const Im2colGeometry& g, GemmTile tile, const float* wei,
                              const float* col, float* dst, cudaStream_t stream, int splits,
                              float* partial) {
  dispatch_tile<ColumnBufferLoader>(g, tile, wei, ColumnBufferParams{col},
                                    splits > 1 ? partial : dst, splits, stream);
}

// ---- Variants 2 and 3: implicit GEMM ------------------------------------------------------------

namespace {

// Bs gathered straight from the input. The block's BN columns (output pixels) are decomposed
// once into shared memory; rows (k) come from im2col_row() (variant 2) or the table (variant 3).
// Thread mapping: along m for nchw (neighbouring pixels are neighbours in memory), along k for
// nhwc (neighbouring channels are).
struct GatherParams {
  const float* src;
  const Im2colRow* rows;  // variant 3 only
};
template <class T, bool kAlongK, bool kTable>
struct GatherLoader {
  using Params = GatherParams;
  struct Shared {
    Im2colColumn columns[T::BN];
  };
  const float* src;
  const Im2colRow* rows;
  float v[T::kBPerThread];

  __device__ explicit GatherLoader(const Params& p) : src(p.src), rows(p.rows) {}

  __device__ __forceinline__ void begin(const Im2colGeometry& g, int group, int m0, int tid,
                                        Shared& s) {
    // The group's channel offset is folded into the column bases, once per block.
    const std::int64_t group_offset = im2col_group_offset(g, group);
    for (int i = tid; i < T::BN; i += T::kThreads) {
      Im2colColumn c = im2col_column(g, m0 + i);
      c.base += group_offset;
      s.columns[i] = c;
    }
  }
  __device__ __forceinline__ Im2colRow row(const Im2colGeometry& g, int k) const {
    if constexpr (kTable) {
      return k < g.k ? rows[k] : Im2colRow{0, kIm2colOutside, kIm2colOutside};
    } else {
      return im2col_row(g, k);
    }
  }
  __device__ __forceinline__ float fetch(const Im2colGeometry& g, const Im2colColumn& c,
                                         const Im2colRow& r) const {
    const std::int64_t off = im2col_combine(g, 0, c, r);
    return off >= 0 ? src[off] : 0.0f;
  }
  __device__ __forceinline__ void load(const Im2colGeometry& g, int k0, int, int tid,
                                       const Shared& s) {
    if constexpr (kAlongK) {
      const Im2colRow r = row(g, k0 + tid % T::BK);
#pragma unroll
      for (int j = 0; j < T::kBPerThread; ++j)
        v[j] = fetch(g, s.columns[tid / T::BK + j * (T::kThreads / T::BK)], r);
    } else {
      const Im2colColumn c = s.columns[tid % T::BN];
#pragma unroll
      for (int j = 0; j < T::kBPerThread; ++j)
        v[j] = fetch(g, c, row(g, k0 + tid / T::BN + j * (T::kThreads / T::BN)));
    }
  }
  __device__ __forceinline__ void store(float (*Bs)[T::BN + T::kPad], int tid) const {
#pragma unroll
    for (int j = 0; j < T::kBPerThread; ++j) {
      if constexpr (kAlongK)
        Bs[tid % T::BK][tid / T::BK + j * (T::kThreads / T::BK)] = v[j];
      else
        Bs[tid / T::BN + j * (T::kThreads / T::BN)][tid % T::BN] = v[j];
    }
  }
};

template <class T>
using GatherNchw = GatherLoader<T, false, false>;
template <class T>
using GatherNhwc = GatherLoader<T, true, false>;
template <class T>
using GatherTableNchw = GatherLoader<T, false, true>;
template <class T>
using GatherTableNhwc = GatherLoader<T, true, true>;

}  // namespace

void launch_implicit_gemm(const Im2colGeometry& g, GemmTile tile, const float* src,
                          const float* wei, float* dst, cudaStream_t stream, int splits,
                          float* partial) {
  const GatherParams params{src, nullptr};
  float* out = splits > 1 ? partial : dst;
  if (g.nhwc)
    dispatch_tile<GatherNhwc>(g, tile, wei, params, out, splits, stream);
  else
    dispatch_tile<GatherNchw>(g, tile, wei, params, out, splits, stream);
}

std::vector<Im2colRow> im2col_row_table(const Im2colGeometry& g) {
  std::vector<Im2colRow> rows(std::size_t(g.k));
  for (int k = 0; k < g.k; ++k) rows[std::size_t(k)] = im2col_row(g, k);
  return rows;
}

void launch_implicit_gemm_precomp(const Im2colGeometry& g, GemmTile tile, const float* src,
                                  const float* wei, const Im2colRow* rows, float* dst,
                                  cudaStream_t stream, int splits, float* partial) {
  const GatherParams params{src, rows};
  float* out = splits > 1 ? partial : dst;
  if (g.nhwc)
    dispatch_tile<GatherTableNhwc>(g, tile, wei, params, out, splits, stream);
  else
    dispatch_tile<GatherTableNchw>(g, tile, wei, params, out, splits, stream);
}

int choose_fp32_splits(const Im2colGeometry& g, GemmTile tile, int sm_count) {
  const int bm = tile == GemmTile::t128x128 ? 128 : tile == GemmTile::t64x128 ? 64 : 32;
  const std::int64_t blocks = (std::int64_t(g.m) + 127) / 128 * ((g.ocg + bm - 1) / bm) * g.groups;
  // Measured on the H200, ms without / with split-K: res5 mb32ic512ih7oc512kh3ph1 0.708 / 0.336
  // (6 splits), res4 mb32ic256ih14oc256kh3ph1 0.360 / 0.324 (3), mb8ic512ih7oc512kh3ph1 0.706 /
  // 0.098 (16); res3 mb32ic128ih28oc128kh3ph1 (196 blocks) 0.281 / 0.299 with 2, so a grid of
  // mma_unsplit_blocks or more stays whole.
  if (blocks >= mma_unsplit_blocks(sm_count)) return 1;
  return choose_split_k(blocks, (g.k + 7) / 8, g.groups, 2 * sm_count, 16, 16);
}

// ---- Tile choice and build facts ----------------------------------------------------------------

GemmTile choose_gemm_tile(const Im2colGeometry& g) {
  if (g.ocg > 64) return GemmTile::t128x128;
  if (g.ocg > 32) return GemmTile::t64x128;
  return GemmTile::t32x128;
}

std::string gemm_tile_name(GemmTile tile) {
  switch (tile) {
    case GemmTile::t128x128:
      return "128x128x8 tile, 8x8 per thread, 256 threads";
    case GemmTile::t64x128:
      return "64x128x8 tile, 8x8 per thread, 128 threads";
    case GemmTile::t32x128:
      return "32x128x8 tile, 4x8 per thread, 128 threads";
  }
  return "unknown tile";
}

#define MYCONV_STR2(...) #__VA_ARGS__
#define MYCONV_STR(...) MYCONV_STR2(__VA_ARGS__)

std::string im2col_gemm_build_info() {
  std::string s =
      "nvcc " + std::to_string(__CUDACC_VER_MAJOR__) + "." + std::to_string(__CUDACC_VER_MINOR__);
#if defined(__CUDA_ARCH_LIST__)
  s += ", CUDA architectures " MYCONV_STR(__CUDA_ARCH_LIST__);
#endif
  return s;
}

}  // namespace conv
