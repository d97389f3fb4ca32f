// The nchw whole-plane kernel (sub-variant 8.4 of im2col_gemm_cuda): 3x3 depthwise at stride 1
// or 2, multiplier 1, any padding, nchw, fp32 (and tf32's storage), fp16 and bf16 storage;
// products and sums in FP32, each output rounded once. Configuration, index math and the
// per-item algorithm (shared with the CPU emulation): conv/cuda/depthwise_plane.hpp. Also the
// nhwc whole-image kernel (sub-variant 8.5), the same for nhwc maps of up to 3072 pixels:
// conv/cuda/depthwise_image.hpp (its reasons and expected gains in that header).
//
// Registers and spills (sm_90, no GPU needed):
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c conv/cuda/depthwise_plane_kernels.cu -o /dev/null
//
// Why, and what it should give: MobileNet-v2's small-map layers, batch 32, nchw (bytes in + out
// once; the floor at 4.3-3.5 TB/s of HBM, all of these fit the 50 MB L2, so cuDNN can beat it;
// cuDNN's pure GPU median and ours from the H200 run of 8.1 / 8.2, the best of them):
//                      fp32                            16-bit (fp16 / bf16)
//   layer          MB   floor us  cuDNN  best ours      MB   floor us  cuDNN      best ours
//   b4_1_dw_s2   24.1  5.6- 6.9   10.9  12.2 (8.2)    12.0  2.8- 3.4  11.4       10.6 (8.2)
//   b4_2_dw      19.3  4.5- 5.5   20.5  16.8 (8.1)     9.6  2.2- 2.8  10.2/10.8  16.1 (8.2)
//   b5_2_dw      28.9  6.7- 8.3   30.1  24.2 (8.1)    14.5  3.4- 4.1  14.5/15.5  22.1 (8.2)
//   b6_1_dw_s2   18.1  4.2- 5.2    8.9   9.4 (8.2)     9.0  2.1- 2.6   9.1        8.4 (8.2)
//   b6_2_dw      12.0  2.8- 3.4   13.9  15.5 (8.1)     6.0  1.4- 1.7  10.0/10.4  11.2 (8.2)
// 8.1 reaches ~1.15 TB/s here: 64 registers x 224 threads leave 4 blocks (25 KB of fp32 in
// flight) per SM, and it stages floats. This kernel keeps the storage type in shared memory and
// copies with 16-byte vectors; blocks of 128 threads (64 registers, no spills: 8 blocks per SM)
// own ~2 items of 7 outputs per thread: 8-9 planes of 14x14 (fp16 3.1 KB in, fp32 7 KB),
// 32-36 of 7x7, 9 planes of 28x28 fp32 at stride 2 (28 KB; 6 blocks per SM by shared memory).
// In flight per SM while copying in: 25 KB (16-bit 14x14) to 170 KB, against the ~36 KB Little's
// law asks for 4.8 TB/s at ~1 us; the phases of a block (copy in, compute, copy out) overlap
// only across the blocks of an SM. Instructions: ~21 per output at stride 1 (27 shared loads and
// conversions, 63 FMAs and ~20 of addressing per 7 outputs): ~1.5 us of issue on b4_2_dw.
// Prediction (not measured), ours / cuDNN's time as speed: 16-bit ~1.3-1.8x on b4_2, b5_2 and
// b6_2 (from 0.63-0.94; expected times 6-9 us, 8-11 us, 5-7 us), >= 1.1x on the stride-2 pair
// (from 1.08); fp32 >= 1.0x on all five (from 0.90-1.24), the stride-1 14x14 pair at or above
// 8.1's 1.22-1.24. If the 16-bit 14x14 layers stay near 8.1's bandwidth, the 3 KB per block in
// flight is the first suspect (more items per thread: kDepthwisePlaneItemsPerThread), then the
// unoverlapped phases.
#include "conv/cuda/depthwise_plane_kernels.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "conv/cuda/depthwise_image.hpp"
#include "conv/cuda/depthwise_io.cuh"
#include "conv/cuda/depthwise_plane.hpp"
#include "core/cuda/cuda_check.hpp"

namespace conv {
namespace {

using depthwise_io::Elem;

constexpr int kTaps = kDepthwiseStripK * kDepthwiseStripK;

// n elements of `Bits` from src to dst (both 16-byte aligned at element 0) by threads of the
// block: 16-byte vectors, kDepthwisePlaneCopyBatch loads in flight per thread, then the
// elements past the last whole vector one at a time.
template <class Bits, bool kToShared>
__device__ __forceinline__ void copy_run(Bits* __restrict__ dst, const Bits* __restrict__ src,
                                         int n, int tid, int threads) {
  constexpr int V = 16 / int(sizeof(Bits));
  const int vectors = n / V;
  const uint4* const s4 = reinterpret_cast<const uint4*>(src);
  uint4* const d4 = reinterpret_cast<uint4*>(dst);
  for (int base = 0; base < vectors; base += kDepthwisePlaneCopyBatch * threads) {
    uint4 v[kDepthwisePlaneCopyBatch];
#pragma unroll
    for (int k = 0; k < kDepthwisePlaneCopyBatch; ++k) {
      const int i = base + k * threads + tid;
      if (i < vectors) {
        if constexpr (kToShared)
          v[k] = __ldg(s4 + i);
        else
          v[k] = s4[i];
      }
    }
#pragma unroll
    for (int k = 0; k < kDepthwisePlaneCopyBatch; ++k) {
      const int i = base + k * threads + tid;
      if (i < vectors) d4[i] = v[k];
    }
  }
  for (int e = vectors * V + tid; e < n; e += threads) dst[e] = src[e];
}

template <class T>
struct SharedPlane {
  using Bits = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned short>;
  const Bits* plane;
  int w;
  __device__ __forceinline__ float operator()(int iy, int ix) const {
    return Elem<T>::to_float(plane[iy * w + ix]);
  }
};

template <class T, int S, int P>
__global__ void __launch_bounds__(kDepthwisePlaneMaxThreads, kDepthwisePlaneBlocks)
    depthwise_plane_kernel(const Im2colGeometry g, const DepthwisePlaneConfig c,
                           const T* __restrict__ src, const T* __restrict__ wei,
                           T* __restrict__ dst) {
  using Bits = typename SharedPlane<T>::Bits;
  extern __shared__ uint4 plane_smem[];
  unsigned char* const smem = reinterpret_cast<unsigned char*>(plane_smem);
  Bits* const in = reinterpret_cast<Bits*>(smem);
  Bits* const out = reinterpret_cast<Bits*>(smem + c.out_offset_bytes);
  float* const taps = reinterpret_cast<float*>(smem + c.taps_offset_bytes);

  const DepthwisePlaneBlock b = depthwise_plane_block(g, c, int(blockIdx.x));
  const int tid = int(threadIdx.x), threads = int(blockDim.x);
  const int hw = g.h * g.w, ohw = g.oh * g.ow;
  const Bits* const run_in = reinterpret_cast<const Bits*>(src) + b.plane0 * hw;
  copy_run<Bits, true>(in, run_in, b.planes * hw, tid, threads);
  for (int i = tid; i < b.planes * kTaps; i += threads) {
    const int channel = int((b.plane0 + i / kTaps) % g.c);
    taps[i] = Elem<T>::to_float(reinterpret_cast<const Bits*>(wei)[channel * kTaps + i % kTaps]);
  }
  __syncthreads();

  const int items = b.planes * g.oh * c.strips;
  for (int item = tid; item < items; item += threads) {
    const DepthwisePlaneItem it = depthwise_plane_item(g, c, item);
    float w[kTaps];
#pragma unroll
    for (int t = 0; t < kTaps; ++t) w[t] = taps[it.plane * kTaps + t];
    const SharedPlane<T> plane{in + it.plane * hw, g.w};
    float acc[P];
    depthwise_plane_outputs<S, P>(g, plane, it.oy, it.ox0, w, acc);
    Bits* const o = out + it.plane * ohw + it.oy * g.ow + it.ox0;
#pragma unroll
    for (int p = 0; p < P; ++p)
      if (it.ox0 + p < g.ow) o[p] = Bits(Elem<T>::bits(acc[p]));
  }
  __syncthreads();

  Bits* const run_out = reinterpret_cast<Bits*>(dst) + b.plane0 * ohw;
  copy_run<Bits, false>(run_out, out, b.planes * ohw, tid, threads);
}

// ---- nhwc whole images (8.5) -------------------------------------------------------------------

template <class T, int S, int P>
__global__ void __launch_bounds__(kDepthwiseImageMaxThreads, kDepthwiseImageBlocks)
    depthwise_image_kernel(const Im2colGeometry g, const DepthwiseImageConfig c,
                           const T* __restrict__ src, const T* __restrict__ wei,
                           T* __restrict__ dst) {
  constexpr int E = 4 / int(sizeof(T));
  extern __shared__ uint4 image_smem[];
  const unsigned int* const words_in = reinterpret_cast<const unsigned int*>(image_smem);
  const DepthwiseImageBlock b = depthwise_image_block(c, int(blockIdx.x));
  const int tid = int(threadIdx.x), threads = int(blockDim.x);
  const int words = g.c / E;  // per pixel
  const int vpp = c.cw / 4;   // 16-byte vectors of a pixel's slice
  const uint4* const img =
      reinterpret_cast<const uint4*>(reinterpret_cast<const unsigned int*>(src) +
                                     std::int64_t(b.n) * g.h * g.w * words + b.ch0 / E);
  const int vectors = g.h * g.w * vpp, pixel_vectors = words / 4;
  for (int base = 0; base < vectors; base += kDepthwisePlaneCopyBatch * threads) {
    uint4 v[kDepthwisePlaneCopyBatch];
#pragma unroll
    for (int k = 0; k < kDepthwisePlaneCopyBatch; ++k) {
      const int i = base + k * threads + tid;
      if (i < vectors) v[k] = __ldg(img + (i / vpp) * pixel_vectors + i % vpp);
    }
#pragma unroll
    for (int k = 0; k < kDepthwisePlaneCopyBatch; ++k) {
      const int i = base + k * threads + tid;
      if (i < vectors) image_smem[i] = v[k];
    }
  }
  const int word = tid % c.cw, line = tid / c.cw;
  const int ch = b.ch0 + word * E;
  float w[kTaps][E];
#pragma unroll
  for (int tap = 0; tap < kTaps; ++tap)
#pragma unroll
    for (int e = 0; e < E; ++e) w[tap][e] = depthwise_io::load1(wei + (ch + e) * kTaps + tap);
  __syncthreads();

  const auto in = [&](int iy, int ix, float(&x)[E]) {
    depthwise_io::Words<T, E> wv;
    wv.w[0] = words_in[(iy * g.w + ix) * c.cw + word];
#pragma unroll
    for (int e = 0; e < E; ++e) x[e] = wv.get(e);
  };
  T* const out = dst + std::int64_t(b.n) * g.oh * g.ow * g.c + ch;
  const int items = g.oh * c.strips;
  for (int item = line; item < items; item += c.lines) {
    const int oy = item / c.strips, ox0 = (item % c.strips) * P;
    float acc[P][E];
    depthwise_image_outputs<S, P, E>(g, in, oy, ox0, w, acc);
#pragma unroll
    for (int p = 0; p < P; ++p)
      if (ox0 + p < g.ow)
        depthwise_io::store_rounded<T, E>(out + (oy * g.ow + ox0 + p) * g.c, acc[p]);
  }
}

template <class T>
using ImageKernelFn = void (*)(Im2colGeometry, DepthwiseImageConfig, const T*, const T*, T*);

template <class T>
ImageKernelFn<T> image_kernel_for(const DepthwiseImageConfig& c) {
  if (c.stride == 1)
    return c.pixels == 7 ? depthwise_image_kernel<T, 1, 7> : depthwise_image_kernel<T, 1, 8>;
  return c.pixels == 7 ? depthwise_image_kernel<T, 2, 7> : depthwise_image_kernel<T, 2, 8>;
}

template <class T>
using PlaneKernelFn = void (*)(Im2colGeometry, DepthwisePlaneConfig, const T*, const T*, T*);

template <class T>
PlaneKernelFn<T> plane_kernel_for(const DepthwisePlaneConfig& c) {
  if (c.stride == 1)
    return c.pixels == 7 ? depthwise_plane_kernel<T, 1, 7> : depthwise_plane_kernel<T, 1, 8>;
  return c.pixels == 7 ? depthwise_plane_kernel<T, 2, 7> : depthwise_plane_kernel<T, 2, 8>;
}

}  // namespace

template <class T>
void launch_depthwise_plane(const Im2colGeometry& g, const DepthwisePlaneConfig& c, const T* src,
                            const T* wei, T* dst, cudaStream_t stream) {
  if (const std::string why = depthwise_plane_config_mismatch(g, int(sizeof(T)), c); !why.empty())
    throw std::invalid_argument("depthwise whole-plane kernel: configuration does not fit: " + why);
  if (reinterpret_cast<std::uintptr_t>(src) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(dst) % 16 != 0)
    throw std::invalid_argument("depthwise whole-plane kernel: tensors not 16-byte aligned");
  plane_kernel_for<T>(
      c)<<<unsigned(c.blocks), unsigned(c.threads), std::size_t(c.smem_bytes), stream>>>(g, c, src,
                                                                                         wei, dst);
  CUDA_CHECK_LAST_LAUNCH();
}

template <class T>
void launch_depthwise_image(const Im2colGeometry& g, const DepthwiseImageConfig& c, const T* src,
                            const T* wei, T* dst, cudaStream_t stream) {
  if (const std::string why = depthwise_image_config_mismatch(g, int(sizeof(T)), c); !why.empty())
    throw std::invalid_argument("depthwise whole-image kernel: configuration does not fit: " + why);
  if (reinterpret_cast<std::uintptr_t>(src) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(dst) % 4 != 0)
    throw std::invalid_argument("depthwise whole-image kernel: tensors not aligned");
  image_kernel_for<T>(
      c)<<<unsigned(c.blocks), unsigned(c.threads), std::size_t(c.smem_bytes), stream>>>(g, c, src,
                                                                                         wei, dst);
  CUDA_CHECK_LAST_LAUNCH();
}

template <class T>
std::string depthwise_image_kernel_resources(const DepthwiseImageConfig& c) {
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(image_kernel_for<T>(c))));
  return std::to_string(a.numRegs) + " registers, " + std::to_string(a.localSizeBytes) +
         " B local, " + std::to_string(a.sharedSizeBytes) + " B static shared";
}

template <class T>
std::string depthwise_plane_kernel_resources(const DepthwisePlaneConfig& c) {
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(plane_kernel_for<T>(c))));
  return std::to_string(a.numRegs) + " registers, " + std::to_string(a.localSizeBytes) +
         " B local, " + std::to_string(a.sharedSizeBytes) + " B static shared";
}

#define MYCONV_DEPTHWISE_PLANE_INSTANTIATE(T)                                                 \
  template void launch_depthwise_plane<T>(const Im2colGeometry&, const DepthwisePlaneConfig&, \
                                          const T*, const T*, T*, cudaStream_t);              \
  template std::string depthwise_plane_kernel_resources<T>(const DepthwisePlaneConfig&);      \
  template void launch_depthwise_image<T>(const Im2colGeometry&, const DepthwiseImageConfig&, \
                                          const T*, const T*, T*, cudaStream_t);              \
  template std::string depthwise_image_kernel_resources<T>(const DepthwiseImageConfig&);
MYCONV_DEPTHWISE_PLANE_INSTANTIATE(float)
MYCONV_DEPTHWISE_PLANE_INSTANTIATE(__half)
MYCONV_DEPTHWISE_PLANE_INSTANTIATE(__nv_bfloat16)
#undef MYCONV_DEPTHWISE_PLANE_INSTANTIATE

}  // namespace conv
