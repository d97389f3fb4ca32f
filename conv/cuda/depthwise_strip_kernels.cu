// The depthwise strip kernels (sub-variant 8.2 of im2col_gemm_cuda): 3x3 depthwise convolution at
// stride 1 or 2, multiplier 1, nchw and nhwc, fp32 (and tf32's storage), fp16 and bf16 storage;
// products and sums in FP32, each output rounded once. Configuration:
// conv/cuda/depthwise_strip_config.hpp; index math and the per-thread algorithm, shared with the
// CPU emulation: conv/cuda/depthwise_strip.hpp. Why these shapes, and the measured numbers:
// conv/cuda/depthwise_kernels.cu's header (variant 8 as a whole).
//
// Registers and spills of every instantiation (sm_90, no GPU needed):
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c conv/cuda/depthwise_strip_kernels.cu -o /dev/null
// gives, with no spills anywhere (CUDA 12, sm_90):
//   nchw <T, S, P, LV> (256 threads, 2 blocks per SM, cap 128): fp32 <1,8,4> 115, <1,4,4> 80,
//     <1,7,1> 128, <2,4,4> 103, <2,4,2> 98, <2,4,1> 106; fp16 / bf16 <1,8,8> 95, <1,4,4> 76-77,
//     <1,7,1> 95-96, <2,4,8> 79, <2,4,2> 72, <2,4,1> 72;
//   nhwc <T, S, P> (8.2; 128 threads, fp32 4 blocks per SM, cap 128; 16-bit 3, cap 168): fp32
//     <1,2> 114, <2,1> 110; fp16 <1,1> 141, <2,1> 146; bf16 <1,1> 152, <2,1> 153;
//   nhwc pipelined <T, S> (8.3; same caps): fp32 124 / 128, fp16 157 / 151, bf16 168 / 168.
//
// The design in short: no shared memory, no barrier. A thread loads its filter once, then walks
// down a band of output rows; each input row of its strip is loaded once (16-byte channel vectors
// in nhwc; LV-element vectors plus two halo elements in nchw), converted once, and feeds the
// ceil(3/S) output rows that use it from registers. The loads of the next row are issued before
// the current row is used. Horizontal neighbours (the next strip, the next channel vector) are
// the next threads of the block, so the halo columns two strips share are L1 hits; the halo rows
// two bands share are L1 or L2 hits. nchw loads run ceil(3/S) output rows ahead (a few registers
// a row); nhwc, whose 9 * V filter registers leave less room, one output row ahead.
#include "conv/cuda/depthwise_strip_kernels.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "conv/cuda/depthwise_io.cuh"
#include "conv/cuda/depthwise_pipe.hpp"
#include "conv/cuda/depthwise_strip.hpp"
#include "core/cuda/cuda_check.hpp"

namespace conv {
namespace {

using depthwise_io::load1;
using depthwise_io::store_rounded;
using depthwise_io::Words;

constexpr int kTaps = kDepthwiseStripK * kDepthwiseStripK;

constexpr int nhwc_blocks_per_sm(int elem_bytes) {
  return elem_bytes == 4 ? kDepthwiseStripNhwcBlocksFp32 : kDepthwiseStripNhwcBlocks16;
}

// ---- nhwc --------------------------------------------------------------------------------------

// The rows of one thread: V channels (one 16-byte vector) of C = (P - 1) * S + 3 input pixels per
// input row, P output pixels per output row.
template <class T, int S, int P>
struct NhwcRows {
  static constexpr int V = 16 / int(sizeof(T));
  static constexpr int C = (P - 1) * S + kDepthwiseStripK;
  struct Raw {
    Words<T, V> col[C];
  };
  const T* img;  // input image n at the thread's first channel
  T* out;        // output image n at the thread's first channel, pixel (oy0, ox0)
  int h, w, c, ow, oc;
  int iy0, ix0;  // input row of band row 0, input column of window column 0
  int ox0;

  __device__ __forceinline__ Raw fetch(int row) const {
    Raw r;
    const int iy = iy0 + row;
    const bool row_in = unsigned(iy) < unsigned(h);
#pragma unroll
    for (int j = 0; j < C; ++j) {
      const int ix = ix0 + j;
      if (row_in && unsigned(ix) < unsigned(w))
        r.col[j].template load<V>(0, img + (iy * w + ix) * c);
      else
        r.col[j].zero();
    }
    return r;
  }
  __device__ __forceinline__ void convert(const Raw& r, float (&x)[C][V]) const {
#pragma unroll
    for (int j = 0; j < C; ++j)
#pragma unroll
      for (int e = 0; e < V; ++e) x[j][e] = r.col[j].get(e);
  }
  __device__ __forceinline__ void store(int b, const float (&acc)[P][V]) const {
    T* const o = out + b * ow * oc;
#pragma unroll
    for (int p = 0; p < P; ++p)
      if (ox0 + p < ow) store_rounded<T, V>(o + p * oc, acc[p]);
  }
};

// The taps of V = 16 / sizeof(T) channels from `channel` (a multiple of V): 9 * V consecutive
// elements, channel-major, 16-byte aligned (9 * V elements are 144 bytes); w[tap][j].
template <class T>
__device__ __forceinline__ void load_nhwc_taps(const T* __restrict__ wei, int channel,
                                               float (&w)[kTaps][16 / sizeof(T)]) {
  constexpr int V = 16 / int(sizeof(T));
  Words<T, kTaps * V> wr;
#pragma unroll
  for (int i = 0; i < kTaps; ++i) wr.template load<V>(i * V, wei + channel * kTaps + i * V);
#pragma unroll
  for (int tap = 0; tap < kTaps; ++tap)
#pragma unroll
    for (int j = 0; j < V; ++j) w[tap][j] = wr.get(j * kTaps + tap);
}

template <class T, int S, int P>
__global__ void __launch_bounds__(kDepthwiseStripNhwcThreads, nhwc_blocks_per_sm(int(sizeof(T))))
    depthwise_strip_nhwc_kernel(const Im2colGeometry g, const DepthwiseStripConfig s,
                                const T* __restrict__ src, const T* __restrict__ wei,
                                T* __restrict__ dst) {
  constexpr int V = 16 / int(sizeof(T));
  const int tid = int(blockIdx.x) * int(blockDim.x) + int(threadIdx.x);
  if (tid >= s.work) return;  // no barrier in this kernel
  const DepthwiseStripThread t = depthwise_strip_thread(g, s, tid);
  float w[kTaps][V];
  load_nhwc_taps<T>(wei, t.channel, w);

  NhwcRows<T, S, P> rows;
  rows.img = src + t.image * (std::int64_t(g.h) * g.w * g.c) + t.channel;
  rows.out = dst + t.image * (std::int64_t(g.oh) * g.ow * g.oc) + (t.oy0 * g.ow + t.ox0) * g.oc +
             t.channel;
  rows.h = g.h;
  rows.w = g.w;
  rows.c = g.c;
  rows.ow = g.ow;
  rows.oc = g.oc;
  rows.iy0 = depthwise_strip_iy(g, t, 0);
  rows.ix0 = depthwise_strip_ix(g, t, 0);
  rows.ox0 = t.ox0;
  depthwise_strip_band<S, P, V, 1>(rows, t.rows, w);
}

// ---- nchw --------------------------------------------------------------------------------------

// The rows of one thread: one plane; per input row the left halo element, the core of P * S
// elements (LV-element loads) and, at stride 1, the right halo element; P outputs per output row
// stored as LV / S element vectors.
template <class T, int S, int P, int LV>
struct NchwRows {
  using Window = DepthwiseStripNchwWindow<S, P>;
  static constexpr int C = Window::kCols, kCore = Window::kCore, kRight = Window::kRightHalo;
  static constexpr int SV = LV / S > 0 ? LV / S : 1;
  static_assert(kCore % LV == 0 && P % SV == 0, "strip shape");
  struct Raw {
    Words<T, kCore> core;
    Words<T, 2> halo;  // element 0: left, element 1: right
  };
  const T* plane;  // input plane
  T* out;          // output plane at (oy0, ox0)
  int h, w, ow;
  int iy0;  // input row of band row 0
  int cx;   // input column of the core's first element: ox0 * S
  int ox0;
  bool core_in;  // the core lies inside the row

  __device__ __forceinline__ Raw fetch(int row) const {
    Raw r;
    const int iy = iy0 + row;
    const bool row_in = unsigned(iy) < unsigned(h);
    const int at = iy * w + cx;  // element offset of the core in the plane (when row_in)
    r.halo.zero();
    if (row_in && cx >= 1) r.halo.template load<1>(0, plane + at - 1);
    if constexpr (kRight > 0) {
      if (row_in && cx + kCore < w) r.halo.template load<1>(1, plane + at + kCore);
    }
    if (row_in && core_in) {
#pragma unroll
      for (int k = 0; k < kCore; k += LV) r.core.template load<LV>(k, plane + at + k);
    } else {
      r.core.zero();
      if (row_in) {
#pragma unroll
        for (int e = 0; e < kCore; ++e)
          if (cx + e < w) r.core.template load<1>(e, plane + at + e);
      }
    }
    return r;
  }
  __device__ __forceinline__ void convert(const Raw& r, float (&x)[C][1]) const {
    x[0][0] = r.halo.get(0);
#pragma unroll
    for (int e = 0; e < kCore; ++e) x[1 + e][0] = r.core.get(e);
    if constexpr (kRight > 0) x[C - 1][0] = r.halo.get(1);
  }
  __device__ __forceinline__ void store(int b, const float (&acc)[P][1]) const {
    T* const o = out + b * ow;
#pragma unroll
    for (int q = 0; q < P; q += SV) {
      if (ox0 + q + SV <= ow) {
        store_rounded<T, SV>(o + q, &acc[q][0]);
      } else {
#pragma unroll
        for (int i = 0; i < SV; ++i)
          if (ox0 + q + i < ow) store_rounded<T, 1>(o + q + i, &acc[q + i][0]);
      }
    }
  }
};

template <class T, int S, int P, int LV>
__global__ void __launch_bounds__(kDepthwiseStripNchwThreads, kDepthwiseStripNchwBlocks)
    depthwise_strip_nchw_kernel(const Im2colGeometry g, const DepthwiseStripConfig s,
                                const T* __restrict__ src, const T* __restrict__ wei,
                                T* __restrict__ dst) {
  const int tid = int(blockIdx.x) * int(blockDim.x) + int(threadIdx.x);
  if (tid >= s.work) return;  // no barrier in this kernel
  const DepthwiseStripThread t = depthwise_strip_thread(g, s, tid);
  float w[kTaps][1];
#pragma unroll
  for (int tap = 0; tap < kTaps; ++tap) w[tap][0] = load1(wei + t.channel * kTaps + tap);

  NchwRows<T, S, P, LV> rows;
  rows.plane = src + t.image * (std::int64_t(g.h) * g.w);
  rows.out = dst + t.image * (std::int64_t(g.oh) * g.ow) + t.oy0 * g.ow + t.ox0;
  rows.h = g.h;
  rows.w = g.w;
  rows.ow = g.ow;
  rows.iy0 = depthwise_strip_iy(g, t, 0);
  rows.cx = t.ox0 * S;
  rows.ox0 = t.ox0;
  rows.core_in = depthwise_strip_core_inside(g, t, NchwRows<T, S, P, LV>::kCore);
  depthwise_strip_band<S, P, 1, (kDepthwiseStripK + S - 1) / S>(rows, t.rows, w);
}

// ---- nhwc through shared memory (8.3) -----------------------------------------------------------

// 16 bytes from global to shared memory, asynchronously (L2 only: the block reads them once);
// zeros where !fill (the source is then not read). Below sm_80 (no cp.async: the sm_75 code of a
// "75;80;90" build) a plain load and store, the commit and wait no-ops: the barrier after them
// still makes the row visible.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define MYCONV_DEPTHWISE_CP_ASYNC 0
#else
#define MYCONV_DEPTHWISE_CP_ASYNC 1
#endif
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool fill) {
#if MYCONV_DEPTHWISE_CP_ASYNC
  const unsigned int to = static_cast<unsigned int>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(gmem),
               "r"(fill ? 16 : 0)
               : "memory");
#else
  *static_cast<uint4*>(smem) =
      fill ? __ldg(static_cast<const uint4*>(gmem)) : make_uint4(0u, 0u, 0u, 0u);
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if MYCONV_DEPTHWISE_CP_ASYNC
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if MYCONV_DEPTHWISE_CP_ASYNC
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}
// Waits until at most `pending` of this thread's copy groups are in flight (more than 4: 4).
__device__ __forceinline__ void cp_async_wait_at_most(int pending) {
  switch (pending) {
    case 0:
      cp_async_wait<0>();
      break;
    case 1:
      cp_async_wait<1>();
      break;
    case 2:
      cp_async_wait<2>();
      break;
    case 3:
      cp_async_wait<3>();
      break;
    default:
      cp_async_wait<4>();
      break;
  }
}

// The rows of one thread of the pipelined kernel: fetch issues the block's copies of an input
// row (this thread's share) into its ring slot, one commit group per row; convert waits for the
// row's group, then for every thread's (the barrier), then reads the thread's window columns
// from shared memory.
template <class T, int S>
struct PipeRows {
  static constexpr int P = int(sizeof(T)) == 4 ? 2 : 1;  // depthwise_pipe_pixels
  static constexpr int V = 16 / int(sizeof(T));
  static constexpr int C = (P - 1) * S + kDepthwiseStripK;
  static constexpr int kRing = depthwise_pipe_ring_rows(S);
  using Raw = int;  // the band row: the data are in shared memory
  uint4* ring;      // [kRing][tile_cols][cvb] 16-byte vectors
  const T* img;     // input image n
  T* out;           // output image n at the thread's channel, pixel (oy0, ox0)
  int h, row_elems, row_vectors, cvb, threads, tid, copies;
  int iy0;
  int copy_src[kDepthwisePipeMaxCopies];  // element offset in an input row; -1: padding
  int read;                               // vector of window column 0 in a ring row
  int ow, oc, ox0;
  bool stores;
  int fetched;

  __device__ __forceinline__ int fetch(int row) {
    const int iy = iy0 + row;
    const bool row_in = unsigned(iy) < unsigned(h);
    uint4* const slot = ring + (row % kRing) * row_vectors;
    const T* const src_row = img + (row_in ? iy : 0) * row_elems;
#pragma unroll
    for (int k = 0; k < kDepthwisePipeMaxCopies; ++k) {
      const int i = tid + k * threads;
      if (k < copies && i < row_vectors)
        cp_async16(slot + i, src_row + (copy_src[k] >= 0 ? copy_src[k] : 0),
                   row_in && copy_src[k] >= 0);
    }
    cp_async_commit();
    ++fetched;
    return row;
  }
  __device__ __forceinline__ void convert(int row, float (&x)[C][V]) {
    cp_async_wait_at_most(fetched - 1 - row);
    __syncthreads();
    const uint4* const slot = ring + (row % kRing) * row_vectors + read;
#pragma unroll
    for (int j = 0; j < C; ++j) {
      const uint4 v = slot[j * cvb];
      Words<T, V> wv;
      wv.w[0] = v.x;
      wv.w[1] = v.y;
      wv.w[2] = v.z;
      wv.w[3] = v.w;
#pragma unroll
      for (int e = 0; e < V; ++e) x[j][e] = wv.get(e);
    }
  }
  __device__ __forceinline__ void store(int b, const float (&acc)[P][V]) const {
    if (!stores) return;
    T* const o = out + b * ow * oc;
#pragma unroll
    for (int p = 0; p < P; ++p)
      if (ox0 + p < ow) store_rounded<T, V>(o + p * oc, acc[p]);
  }
};

constexpr int pipe_blocks_per_sm(int elem_bytes) {
  return elem_bytes == 4 ? kDepthwisePipeBlocksFp32 : kDepthwisePipeBlocks16;
}

template <class T, int S>
__global__ void __launch_bounds__(kDepthwisePipeMaxThreads, pipe_blocks_per_sm(int(sizeof(T))))
    depthwise_pipe_nhwc_kernel(const Im2colGeometry g, const DepthwisePipeConfig c,
                               const T* __restrict__ src, const T* __restrict__ wei,
                               T* __restrict__ dst) {
  constexpr int V = 16 / int(sizeof(T));
  extern __shared__ uint4 pipe_ring[];
  const DepthwisePipeBlock b = depthwise_pipe_block(g, c, int(blockIdx.x));
  const int tid = int(threadIdx.x);
  const DepthwisePipeThread pt = depthwise_pipe_thread(g, c, b, tid);
  float w[kTaps][V];
  load_nhwc_taps<T>(wei, pt.t.channel, w);

  PipeRows<T, S> rows;
  rows.ring = pipe_ring;
  rows.img = src + std::int64_t(b.n) * (std::int64_t(g.h) * g.w * g.c);
  rows.out = dst + std::int64_t(b.n) * (std::int64_t(g.oh) * g.ow * g.oc) +
             (b.oy0 * g.ow + pt.t.ox0) * g.oc + pt.t.channel;
  rows.h = g.h;
  rows.row_elems = g.w * g.c;
  rows.row_vectors = c.tile_cols * c.cvb;
  rows.cvb = c.cvb;
  rows.threads = c.threads;
  rows.tid = tid;
  rows.copies = c.copies;
  rows.iy0 = depthwise_strip_iy(g, pt.t, 0);
#pragma unroll
  for (int k = 0; k < kDepthwisePipeMaxCopies; ++k) {
    const DepthwisePipeCopy cp = depthwise_pipe_copy(c, tid, k);
    const int ix = b.ix0 + cp.col;
    rows.copy_src[k] = unsigned(ix) < unsigned(g.w) ? ix * g.c + b.ch0 + cp.cv * V : -1;
  }
  rows.read = pt.tile_col * c.cvb + pt.cv;
  rows.ow = g.ow;
  rows.oc = g.oc;
  rows.ox0 = pt.t.ox0;
  rows.stores = pt.stores;
  rows.fetched = 0;
  constexpr int kAhead = (kDepthwiseStripK + S - 1) / S;  // depthwise_pipe_ahead(S)
  depthwise_strip_band<S, PipeRows<T, S>::P, V, kAhead>(rows, b.rows, w);
}

// ---- Launch ------------------------------------------------------------------------------------

template <class T>
using StripKernelFn = void (*)(Im2colGeometry, DepthwiseStripConfig, const T*, const T*, T*);

// The instantiation s names (the shapes of kDepthwiseStripNchwShapes), or nullptr.
template <class T>
StripKernelFn<T> strip_kernel_for(const Im2colGeometry& g, const DepthwiseStripConfig& s) {
  constexpr int kMax = 16 / int(sizeof(T));
  if (g.nhwc) {
    constexpr int kBytes = int(sizeof(T));
    if (s.pixels != depthwise_strip_nhwc_pixels(s.stride, kBytes)) return nullptr;
    return s.stride == 1
               ? depthwise_strip_nhwc_kernel<T, 1, depthwise_strip_nhwc_pixels(1, kBytes)>
               : depthwise_strip_nhwc_kernel<T, 2, depthwise_strip_nhwc_pixels(2, kBytes)>;
  }
  auto is = [&](int stride, int pixels, int lv) {
    return s.stride == stride && s.pixels == pixels && s.load_vec == lv;
  };
  if (is(1, 8, kMax)) return depthwise_strip_nchw_kernel<T, 1, 8, kMax>;
  if (is(1, 4, 4)) return depthwise_strip_nchw_kernel<T, 1, 4, 4>;
  if (is(1, 7, 1)) return depthwise_strip_nchw_kernel<T, 1, 7, 1>;
  if (is(2, 4, kMax)) return depthwise_strip_nchw_kernel<T, 2, 4, kMax>;
  if (is(2, 4, 2)) return depthwise_strip_nchw_kernel<T, 2, 4, 2>;
  if (is(2, 4, 1)) return depthwise_strip_nchw_kernel<T, 2, 4, 1>;
  return nullptr;
}

bool aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

}  // namespace

template <class T>
void launch_depthwise_pipe(const Im2colGeometry& g, const DepthwisePipeConfig& c, const T* src,
                           const T* wei, T* dst, cudaStream_t stream) {
  if (const std::string why = depthwise_pipe_config_mismatch(g, int(sizeof(T)), c); !why.empty())
    throw std::invalid_argument("depthwise pipelined kernel: configuration does not fit: " + why);
  if (!aligned(src, 16) || !aligned(dst, 16) || !aligned(wei, 16))
    throw std::invalid_argument("depthwise pipelined kernel: tensors not 16-byte aligned");
  const auto kernel =
      c.stride == 1 ? depthwise_pipe_nhwc_kernel<T, 1> : depthwise_pipe_nhwc_kernel<T, 2>;
  kernel<<<unsigned(c.blocks), unsigned(c.threads), std::size_t(c.smem_bytes), stream>>>(g, c, src,
                                                                                         wei, dst);
  CUDA_CHECK_LAST_LAUNCH();
}

template <class T>
std::string depthwise_pipe_kernel_resources(const DepthwisePipeConfig& c) {
  const auto kernel =
      c.stride == 1 ? depthwise_pipe_nhwc_kernel<T, 1> : depthwise_pipe_nhwc_kernel<T, 2>;
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(kernel)));
  return std::to_string(a.numRegs) + " registers, " + std::to_string(a.localSizeBytes) +
         " B local, " + std::to_string(a.sharedSizeBytes) + " B static shared";
}

template <class T>
void launch_depthwise_strip(const Im2colGeometry& g, const DepthwiseStripConfig& s, const T* src,
                            const T* wei, T* dst, cudaStream_t stream) {
  const int bytes = int(sizeof(T));
  if (const std::string why = depthwise_strip_config_mismatch(g, bytes, s); !why.empty())
    throw std::invalid_argument("depthwise strip kernel: configuration does not fit: " + why);
  const StripKernelFn<T> kernel = strip_kernel_for<T>(g, s);
  if (!kernel)
    throw std::invalid_argument("depthwise strip kernel: no instantiation for this shape");
  const std::size_t load = std::size_t(g.nhwc ? 16 : s.load_vec * bytes);
  const std::size_t store = std::size_t(g.nhwc ? 16 : s.store_vec * bytes);
  if (!aligned(src, load) || !aligned(dst, store) || (g.nhwc && !aligned(wei, 16)))
    throw std::invalid_argument("depthwise strip kernel: tensors not aligned to its vectors");
  const int threads = g.nhwc ? kDepthwiseStripNhwcThreads : kDepthwiseStripNchwThreads;
  const std::int64_t blocks = (s.work + threads - 1) / threads;
  kernel<<<unsigned(blocks), unsigned(threads), 0, stream>>>(g, s, src, wei, dst);
  CUDA_CHECK_LAST_LAUNCH();
}

template <class T>
std::string depthwise_strip_kernel_resources(const Im2colGeometry& g,
                                             const DepthwiseStripConfig& s) {
  const StripKernelFn<T> kernel = strip_kernel_for<T>(g, s);
  if (!kernel)
    throw std::invalid_argument("depthwise strip kernel: no instantiation for this shape");
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(kernel)));
  return std::to_string(a.numRegs) + " registers, " + std::to_string(a.localSizeBytes) +
         " B local, " + std::to_string(a.sharedSizeBytes) + " B static shared";
}

#define MYCONV_DEPTHWISE_STRIP_INSTANTIATE(T)                                                 \
  template void launch_depthwise_strip<T>(const Im2colGeometry&, const DepthwiseStripConfig&, \
                                          const T*, const T*, T*, cudaStream_t);              \
  template std::string depthwise_strip_kernel_resources<T>(const Im2colGeometry&,             \
                                                           const DepthwiseStripConfig&);      \
  template void launch_depthwise_pipe<T>(const Im2colGeometry&, const DepthwisePipeConfig&,   \
                                         const T*, const T*, T*, cudaStream_t);               \
  template std::string depthwise_pipe_kernel_resources<T>(const DepthwisePipeConfig&);
MYCONV_DEPTHWISE_STRIP_INSTANTIATE(float)
MYCONV_DEPTHWISE_STRIP_INSTANTIATE(__half)
MYCONV_DEPTHWISE_STRIP_INSTANTIATE(__nv_bfloat16)
#undef MYCONV_DEPTHWISE_STRIP_INSTANTIATE

}  // namespace conv
