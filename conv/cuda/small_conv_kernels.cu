// Small-OC direct convolution: one thread computes all output channels of its group's oc tile
// (mt <= 16) for p consecutive output pixels of a row, in registers, straight from the input
// (no column matrix, no shared-memory input tile, no barrier in the reduction loop). Meant for
// convolutions with few output channels per group, where the tiled implicit GEMM (variants 2-3,
// conv/cuda/im2col_gemm_kernels.cu) computes mostly zero rows of its 32-row tile and runs a long
// serial K loop over few blocks. The configuration is chosen by conv/cuda/small_conv_config.hpp.
//
// Build (part of the normal build when CUDA is found):
//   cmake -S . -B build -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build build
// Registers and spills of every instantiation (none spills; at most 128 registers):
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c conv/cuda/small_conv_kernels.cu -o /dev/null
// Check (on a GPU): build/tests/test_small_conv
//
// Why this shape, for the seed grid (mb2, IC 4 -> OC 8, 3x3..7x7, 32..128 pixels square; GEMM
// view M = OC/G = 8, K = 36..196, N = 1352..31752 pixels; H200: 132 SMs, 4 schedulers each,
// 128 FP32 lanes per SM, 1.98 GHz):
//   - Work is tiny: the largest cell, 128/7x7, is 29768 px * 8 oc * 196 taps = 46.7 M FMA,
//     2760 cycles = 1.4 us of the whole GPU's FP32 lanes, and a kernel that does nothing takes
//     2.2 us in graph replay. Every cell is latency- and launch-bound, so the design keeps each
//     thread's serial chain short: few dependent memory round trips (weights staged once, a
//     tap's mt weight loads in flight together; all loads of a unit issued before its FMAs, the
//     next unit's before the current unit's FMAs) and few instructions outside the FMA loop.
//   - All 8 channels of a pixel in one thread (mt = 8): an input value is loaded once and used
//     8 times; the 8 weights of a tap are two LDS.128 broadcasts (every lane of a warp reads the
//     same address). A row of kw taps for p = 4 pixels (stride 1) needs p + kw - 1 loads: for
//     7x7 a (channel, kernel row) unit is 350 instructions, 224 of them FFMA (ncu, SASS).
//   - Parallelism: N / p segments, times `splits` threads splitting the IC/G * KH units
//     (split-K) for 16 warps per SM. 128/7x7: p = 4, 7564 segments x 8 splits of 3-4 units,
//     237 blocks of 32x8. 32/7x7: p = 4 would give 364 segments x 8 splits = 91 warps on 12
//     SMs, so p = 1: 1352 segments x 8 splits, 43 blocks of 32x8.
//   - The partial sums of a segment's splits meet in shared memory (one barrier) and are added
//     in split order, so the result is deterministic; the same pass writes the output
//     coalesced (pixel-major for nchw, channel-major for nhwc).
//   - Weights are staged per block in shared memory as [tap][mt] floats (8 x 196 floats = 6 KB
//     for 7x7), K * mt beyond 8192 floats in chunks (one barrier pair per chunk). A first
//     version stored one weight per loop iteration and waited one L2 round trip per element:
//     ~10 trips per thread, 30% of the kernel's stall samples.
//
// Measured on the H200 (CUDA-graph replay, FP32, nchw, median of 7 x 50 launches, us; a kernel
// that does nothing takes 2.2):
//   cell       3x3 32/64/128      5x5 32/64/128      7x7 32/64/128
//   this       2.79 3.25 4.59     3.12 3.81 5.59     3.67 4.72 7.18   (8 splits; p 1/1/4)
//   v3 tiled   5.64 5.69 7.10     11.4 11.6 14.9     20.1 20.3 26.5
//   cuDNN      3.56 4.31 7.50     5.27 5.59 12.0     10.6 11.1 23.4   (the lead's table)
// nhwc: 3.97 (64/5x5), 9.92 (128/7x7): the per-channel loads are C floats apart.
//
// Instantiations: mt in {1, 2, 4, 8, 16} (oc tiles of 16 beyond 16 channels per group), p in
// {1, wide} (wide = 4 for mt <= 8, 2 for mt = 16), kw in {3, 5, 7} unrolled (stride 1,
// dilation 1) or 0 (one tap per unit: any width, stride, dilation), each for float, __half and
// __nv_bfloat16 storage (FP32 products and sums).
#include "conv/cuda/small_conv_kernels.hpp"

#include <atomic>
#include <cstdint>
#include <stdexcept>

#include "core/cuda/cuda_check.hpp"

namespace conv {
namespace {

// Loads of the storage type as float, and the output's rounding.
template <class T>
struct Io;
template <>
struct Io<float> {
  static __device__ __forceinline__ float load(const float* p) { return __ldg(p); }
  static __device__ __forceinline__ float store(float v) { return v; }
};
template <>
struct Io<__half> {
  static __device__ __forceinline__ float load(const __half* p) { return __half2float(__ldg(p)); }
  static __device__ __forceinline__ __half store(float v) { return __float2half_rn(v); }
};
template <>
struct Io<__nv_bfloat16> {
  static __device__ __forceinline__ float load(const __nv_bfloat16* p) {
    return __bfloat162float(__ldg(p));
  }
  static __device__ __forceinline__ __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

// The configuration's numbers the kernel needs besides the geometry.
struct SmallConvParams {
  int segs;          // segments (p pixels of one output row) in all: <= M
  int segs_per_row;  // ceil(OW / p)
  int units;         // reduction units
  int chunk_units;   // units per staged weight chunk
  int oc_tiles;      // oc tiles per group
};

// Most segments per block (SmallConvConfig::px).
constexpr int kMaxPx = 128;

// The mt weights of one tap: a warp-uniform shared-memory read, 16 bytes at a time.
template <int MT>
__device__ __forceinline__ void load_weights(const float* p, float (&w)[MT]) {
  if constexpr (MT % 4 == 0) {
#pragma unroll
    for (int i = 0; i < MT / 4; ++i) {
      const float4 v = reinterpret_cast<const float4*>(p)[i];
      w[4 * i + 0] = v.x;
      w[4 * i + 1] = v.y;
      w[4 * i + 2] = v.z;
      w[4 * i + 3] = v.w;
    }
  } else if constexpr (MT == 2) {
    const float2 v = *reinterpret_cast<const float2*>(p);
    w[0] = v.x;
    w[1] = v.y;
  } else {
    w[0] = p[0];
  }
}

// Stores the mt weights of one tap (the layout load_weights reads).
template <int MT>
__device__ __forceinline__ void store_weights(float* p, const float (&w)[MT]) {
  if constexpr (MT % 4 == 0) {
#pragma unroll
    for (int i = 0; i < MT / 4; ++i)
      reinterpret_cast<float4*>(p)[i] =
          make_float4(w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
  } else if constexpr (MT == 2) {
    *reinterpret_cast<float2*>(p) = make_float2(w[0], w[1]);
  } else {
    p[0] = w[0];
  }
}

// One block: blockDim.x = px segments x blockDim.y = splits; blockIdx.x picks px segments,
// blockIdx.y the group and oc tile. KW > 0: units are (channel, kernel row) with KW taps
// unrolled (stride 1, dilation 1); KW == 0: units are single taps (channel, row, column).
// Registers: capped at 128 (2 blocks of 256 threads per SM), where no instantiation spills.
// __launch_bounds__(256) instead lets ptxas pick 48-64 registers and spill a few bytes; mt = 32
// spilled even at 168 (ptxas hoists the weight reads of all unrolled taps).
template <class T, int MT, int P, int KW>
__global__ void __maxnreg__(128)
    small_conv_kernel(const Im2colGeometry g, const SmallConvParams q, const T* __restrict__ src,
                      const T* __restrict__ wei, T* __restrict__ dst) {
  constexpr int KWU = KW > 0 ? KW : 1;         // taps per unit
  constexpr int NX = KW > 0 ? P + KW - 1 : P;  // input values per unit
  // Weights of a chunk ([tap][MT]), then the splits' partial sums ([split][MT][px * P + 4]).
  extern __shared__ float4 smem4[];
  float* const smem = reinterpret_cast<float*>(smem4);
  __shared__ std::int64_t seg_dst[kMaxPx];  // dst offset of a segment's first pixel, channel 0
  __shared__ int seg_len[kMaxPx];           // its pixels inside the row (0: past the end)

  const int px = threadIdx.x, ks = threadIdx.y;
  const int npx = blockDim.x, splits = blockDim.y;
  const int tid = ks * npx + px, nthreads = npx * splits;
  const int group = blockIdx.y / q.oc_tiles;
  const int oc0 = (blockIdx.y - group * q.oc_tiles) * MT;

  // This thread's segment: pixels ox0 .. ox0 + P - 1 of output row (n, oy).
  const std::int64_t seg = std::int64_t(blockIdx.x) * npx + px;
  const bool seg_ok = seg < q.segs;
  int n = 0, oy = 0, ox0 = 0;
  if (seg_ok) {
    const int row = int(seg) / q.segs_per_row;
    ox0 = (int(seg) - row * q.segs_per_row) * P;
    n = row / g.oh;
    oy = row - n * g.oh;
  }
  if (ks == 0) {
    const int m = (n * g.oh + oy) * g.ow + ox0;  // first pixel, as im2col_dst_column(g, m)
    seg_dst[px] = g.nhwc ? std::int64_t(m) * g.oc
                         : std::int64_t(n) * g.oc * (g.oh * g.ow) + (m - n * g.oh * g.ow);
    seg_len[px] = seg_ok ? min(P, g.ow - ox0) : 0;
  }

  // The input: image n, the group's first channel; offsets inside an image fit int.
  const int ih0 = oy * g.sh - g.ph, iw0 = ox0 * g.sw - g.pw;
  const T* const img = src + std::int64_t(n) * g.c * g.h * g.w + im2col_group_offset(g, group);
  const int cstride = g.nhwc ? 1 : g.h * g.w;
  const int hstride = g.nhwc ? g.w * g.c : g.w;
  const int xstride = g.nhwc ? g.c : 1;
  // Unrolled rows: which of the NX window columns lie inside the image (the same for every unit).
  unsigned cols_in = 0;
  if constexpr (KW > 0) {
#pragma unroll
    for (int t = 0; t < NX; ++t)
      if (unsigned(iw0 + t) < unsigned(g.w)) cols_in |= 1u << t;
  }

  // The input values unit (c, r, s) reads, zeros in the padding (and when !active).
  auto load_unit = [&](float(&x)[NX], int c, int r, int s, bool active) {
    const int ih = ih0 + r * g.dh;
    const bool row_ok = active && seg_ok && unsigned(ih) < unsigned(g.h);
    const T* const row = img + (c * cstride + (row_ok ? ih : 0) * hstride);
    if constexpr (KW > 0) {
#pragma unroll
      for (int t = 0; t < NX; ++t)
        x[t] = row_ok && (cols_in >> t & 1u) ? Io<T>::load(row + (iw0 + t) * xstride) : 0.0f;
    } else {
#pragma unroll
      for (int j = 0; j < P; ++j) {
        const int iw = iw0 + j * g.sw + s * g.dw;
        x[j] = row_ok && unsigned(iw) < unsigned(g.w) ? Io<T>::load(row + iw * xstride) : 0.0f;
      }
    }
  };

  float acc[P][MT];
#pragma unroll
  for (int j = 0; j < P; ++j)
#pragma unroll
    for (int o = 0; o < MT; ++o) acc[j][o] = 0.0f;

  const T* const wei_tile = wei + (std::int64_t(group) * g.ocg + oc0) * g.k;
  const int oc_count = min(MT, g.ocg - oc0);  // channels of this oc tile
  for (int c0 = 0; c0 < q.units; c0 += q.chunk_units) {
    // This split's contiguous range of the chunk's units.
    const int c1 = min(q.units, c0 + q.chunk_units), nu = c1 - c0;
    const int ub = c0 + int(std::int64_t(ks) * nu / splits);
    const int ue = c0 + int(std::int64_t(ks + 1) * nu / splits);
    // Cursor (c, r, s) at the range's first unit; its loads go out before the staging barrier.
    int c, r, s = 0;
    if constexpr (KW > 0) {
      c = ub / g.kh;
      r = ub - c * g.kh;
    } else {
      const int cr = ub / g.kw;
      s = ub - cr * g.kw;
      c = cr / g.kh;
      r = cr - c * g.kh;
    }
    float x[NX];
    load_unit(x, c, r, s, ub < ue);

    // Stage the chunk's weights as [tap][MT] (taps in (c, r, s) order, zeros past OC/G): a
    // thread takes whole taps, so that the MT loads of a tap are in flight together, share one
    // index computation and land in MT / 4 16-byte stores.
    if (c0 > 0) __syncthreads();  // every split is done with the previous chunk
    const int tap0 = c0 * KWU, ntaps = nu * KWU;
    // Two taps in flight where registers allow.
#pragma unroll(MT <= 8 ? 2 : 1)
    for (int i = tid; i < ntaps; i += nthreads) {
      const int tap = tap0 + i;
      int k = tap;  // nchw weights: k is the (c, r, s) tap index
      if (g.nhwc) {
        const int khw = g.kh * g.kw, ci = tap / khw;
        k = (tap - ci * khw) * g.icg + ci;
      }
      float w[MT];
#pragma unroll
      for (int o = 0; o < MT; ++o)
        w[o] = o < oc_count ? Io<T>::load(wei_tile + std::int64_t(o) * g.k + k) : 0.0f;
      store_weights<MT>(smem + i * MT, w);
    }
    __syncthreads();

    for (int u = ub; u < ue; ++u) {
      // Next unit's loads first: their latency hides behind this unit's FMAs.
      if constexpr (KW > 0) {
        if (++r == g.kh) {
          r = 0;
          ++c;
        }
      } else if (++s == g.kw) {
        s = 0;
        if (++r == g.kh) {
          r = 0;
          ++c;
        }
      }
      float xn[NX];
      load_unit(xn, c, r, s, u + 1 < ue);

      const float* const wu = smem + (u - c0) * KWU * MT;
#pragma unroll
      for (int t = 0; t < KWU; ++t) {
        float w[MT];
        load_weights<MT>(wu + t * MT, w);
#pragma unroll
        for (int j = 0; j < P; ++j)
#pragma unroll
          for (int o = 0; o < MT; ++o) acc[j][o] = fmaf(x[j + t], w[o], acc[j][o]);
      }
#pragma unroll
      for (int t = 0; t < NX; ++t) x[t] = xn[t];
    }
  }

  // Partial sums to shared memory: [split][o][pixel slot], rows padded by 4 floats so that the
  // channel-major reads of nhwc spread over banks.
  const int slots = npx * P, row_floats = slots + 4;
  __syncthreads();  // every split is done with the weights
#pragma unroll
  for (int o = 0; o < MT; ++o) {
    float* const d = smem + (ks * MT + o) * row_floats + px * P;
    if constexpr (P == 4) {
      *reinterpret_cast<float4*>(d) = make_float4(acc[0][o], acc[1][o], acc[2][o], acc[3][o]);
    } else if constexpr (P == 2) {
      *reinterpret_cast<float2*>(d) = make_float2(acc[0][o], acc[1][o]);
    } else {
      d[0] = acc[0][o];
    }
  }
  __syncthreads();

  // Sum the splits in order and write each output once: consecutive threads take consecutive
  // pixels (nchw) or consecutive channels (nhwc), the contiguous direction of dst.
  const std::int64_t channel_stride = im2col_dst_channel_stride(g);
  T* const dst_tile = dst + std::int64_t(group * g.ocg + oc0) * channel_stride;
  const int pixel_stride = g.nhwc ? g.oc : 1;
  const int split_floats = MT * row_floats;
  const int slot_shift = __ffs(slots) - 1;  // slots is a power of two
  for (int e = tid; e < MT * slots; e += nthreads) {
    const int o = g.nhwc ? e % MT : e >> slot_shift;
    const int slot = g.nhwc ? e / MT : e & (slots - 1);
    const int sl = slot / P, j = slot % P;
    if (o >= oc_count || j >= seg_len[sl]) continue;
    const float* const part = smem + o * row_floats + slot;
    float sum = part[0];
#pragma unroll
    for (int k = 1; k < kSmallConvMaxSplits; ++k)
      if (k < splits) sum += part[k * split_floats];
    dst_tile[seg_dst[sl] + j * pixel_stride + o * channel_stride] = Io<T>::store(sum);
  }
}

template <class T>
using SmallConvKernel = void (*)(Im2colGeometry, SmallConvParams, const T*, const T*, T*);

template <class T, int MT, int P>
SmallConvKernel<T> kernel_for_kw(int kw) {
  switch (kw) {
    case 0:
      return small_conv_kernel<T, MT, P, 0>;
    case 3:
      return small_conv_kernel<T, MT, P, 3>;
    case 5:
      return small_conv_kernel<T, MT, P, 5>;
    case 7:
      return small_conv_kernel<T, MT, P, 7>;
    default:
      return nullptr;
  }
}

// The instantiation c names (c checked by small_conv_config_mismatch first).
template <class T>
SmallConvKernel<T> kernel_for(const SmallConvConfig& c) {
  switch (c.mt) {
    case 1:
      return c.p == 4 ? kernel_for_kw<T, 1, 4>(c.kw) : kernel_for_kw<T, 1, 1>(c.kw);
    case 2:
      return c.p == 4 ? kernel_for_kw<T, 2, 4>(c.kw) : kernel_for_kw<T, 2, 1>(c.kw);
    case 4:
      return c.p == 4 ? kernel_for_kw<T, 4, 4>(c.kw) : kernel_for_kw<T, 4, 1>(c.kw);
    case 8:
      return c.p == 4 ? kernel_for_kw<T, 8, 4>(c.kw) : kernel_for_kw<T, 8, 1>(c.kw);
    case 16:
      return c.p == 2 ? kernel_for_kw<T, 16, 2>(c.kw) : kernel_for_kw<T, 16, 1>(c.kw);
    default:
      return nullptr;
  }
}

template <class T>
SmallConvKernel<T> checked_kernel_for(const Im2colGeometry& g, const SmallConvConfig& c) {
  if (const std::string why = small_conv_config_mismatch(g, c); !why.empty())
    throw std::invalid_argument("small-OC conv: configuration does not fit the problem: " + why);
  const SmallConvKernel<T> kernel = kernel_for<T>(c);
  if (!kernel) throw std::invalid_argument("small-OC conv: no kernel for this configuration");
  return kernel;
}

}  // namespace

template <class T>
void launch_small_conv(const Im2colGeometry& g, const SmallConvConfig& c, const T* src,
                       const T* wei, T* dst, cudaStream_t stream) {
  const SmallConvKernel<T> kernel = checked_kernel_for<T>(g, c);
  const SmallConvParams params{int(c.segs), c.segs_per_row, c.units, c.chunk_units, c.oc_tiles};
  const dim3 grid(unsigned(c.grid_x), unsigned(c.grid_y)),
      block(unsigned(c.px), unsigned(c.splits));
  kernel<<<grid, block, c.smem_bytes, stream>>>(g, params, src, wei, dst);
  CUDA_CHECK_LAST_LAUNCH();
}

template <class T>
void launch_small_conv(const Im2colGeometry& g, const T* src, const T* wei, T* dst,
                       cudaStream_t stream) {
  if (const std::string why = small_conv_unsupported_reason(g); !why.empty())
    throw std::invalid_argument("small-OC conv: " + why);
  launch_small_conv(g, small_conv_config(g, small_conv_sm_count()), src, wei, dst, stream);
}

int small_conv_sm_count() {
  constexpr int kCachedDevices = 64;
  static std::atomic<int> cache[kCachedDevices];  // 0: not asked yet (static: zero-initialized)
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  const bool cached = device >= 0 && device < kCachedDevices;
  if (cached) {
    if (const int v = cache[device].load(std::memory_order_relaxed); v > 0) return v;
  }
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  if (cached) cache[device].store(sms, std::memory_order_relaxed);
  return sms;
}

std::string small_conv_name(const Im2colGeometry& g) {
  return small_conv_config_name(small_conv_config(g, small_conv_sm_count()));
}

template <class T>
std::string small_conv_kernel_resources(const SmallConvConfig& c) {
  const SmallConvKernel<T> kernel = kernel_for<T>(c);
  if (!kernel) throw std::invalid_argument("small-OC conv: no kernel for this configuration");
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(kernel)));
  return std::to_string(a.numRegs) + " registers, " + std::to_string(a.localSizeBytes) +
         " B local, " + std::to_string(a.sharedSizeBytes) + " B static shared";
}

#define MYCONV_SMALL_CONV_INSTANTIATE(T)                                                           \
  template void launch_small_conv<T>(const Im2colGeometry&, const T*, const T*, T*, cudaStream_t); \
  template void launch_small_conv<T>(const Im2colGeometry&, const SmallConvConfig&, const T*,      \
                                     const T*, T*, cudaStream_t);                                  \
  template std::string small_conv_kernel_resources<T>(const SmallConvConfig&);
MYCONV_SMALL_CONV_INSTANTIATE(float)
MYCONV_SMALL_CONV_INSTANTIATE(__half)
MYCONV_SMALL_CONV_INSTANTIATE(__nv_bfloat16)
#undef MYCONV_SMALL_CONV_INSTANTIATE

}  // namespace conv
