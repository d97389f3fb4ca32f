// Depthwise convolution (variant 8 of im2col_gemm_cuda): groups == IC, channel multiplier
// M = OC/G of 1..4, any kernel size, stride, padding and dilation, nchw and nhwc; storage fp32
// (also tf32's: FP32 storage, and here FP32 math, no tensor cores), fp16 and bf16; products and
// sums in FP32, each output rounded once to the storage type. Two families of kernels, numbered
// as sub-variants (--variant 8.1 to 8.6; plain 8 lets conv/cuda/depthwise_config.hpp choose):
//   8.1 the staged kernels, this file: every case above;
//   8.2 the strip kernels, conv/cuda/depthwise_strip_kernels.cu: 3x3 at stride 1 or 2,
//       multiplier 1 (MobileNet-v2's ten depthwise layers and most depthwise CNNs' 3x3 ones), nhwc
//       with channels in 16-byte vectors, nchw with a padding of 1 column;
//   8.3 the nhwc pipelined strip kernel, same file: 8.2's nhwc threads, their input rows copied
//       by the block with cp.async into a ring in shared memory, 3 (stride 1) or 4 (stride 2)
//       rows ahead;
//   8.4 the nchw whole-plane kernel, conv/cuda/depthwise_plane_kernels.cu: 3x3 at stride 1 or 2,
//       multiplier 1, several whole planes per block copied into shared memory as stored
//       (16-byte copies in and out), for maps of 14x14 or less;
//   8.5 the nhwc whole-image kernel, same file: one image's slice of channels per block in shared
//       memory, a thread per 32-bit word of channels;
//   8.6 the nhwc direct kernel, conv/cuda/depthwise_direct_kernels.cu: 3x3 at stride 1 or 2,
//       multiplier 1, a thread per channel vector and item of outputs, the window through L1.
// The automatic choice (depthwise_sub_variant_for) takes 8.4 for nchw outputs of 14x14 or less,
// 8.3 for nhwc and 8.2 for other nchw where they run, except fp32 nchw at stride 1 or on larger
// maps, which keeps 8.1. All sum each output's taps in the same (r, s) order with fmaf:
// bit-identical outputs (tests/conv/test_depthwise_cuda.cpp checks it on the GPU,
// tests/conv/test_depthwise_strip_emulation.cpp and tests/conv/test_depthwise_plane.cpp by
// emulation).
//
// Build (part of the normal build when CUDA is found):
//   cmake -S . -B build -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build build
// Registers and spills of every instantiation:
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c conv/cuda/depthwise_kernels.cu -o /dev/null
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c conv/cuda/depthwise_strip_kernels.cu -o /dev/null
// Check (on a GPU): build/tests/test_depthwise_cuda (and under compute-sanitizer:
//   compute-sanitizer --tool memcheck build/tests/test_depthwise_cuda); the index math without a
//   GPU: build/tests/test_depthwise_config
// Time against cuDNN (the ten depthwise layers of MobileNet-v2 at batch 32), each family and the
// automatic choice:
//   grep _dw experiments/shapes/mobilenet_v2.txt > /tmp/dw.txt
//   for v in 8 8.1 8.2 8.3 8.4 8.5; do build/experiments/myconv --backend im2col_gemm_cuda,cudnn
//     --variant $v --shapes /tmp/dw.txt --dtype fp32,fp16,bf16 --layout nchw,nhwc --timing pure;
//   done   (one command line)
//
// What bounds these layers. A depthwise layer does KH*KW multiply-adds per output and reads each
// input element for the KH*KW outputs of its own channel only: no reduction over channels, so the
// FMAs are few and the bytes decide. Batch 32, bytes in + out once (weights: under 20 KB), at the
// H200's ~3.5-4.3 TB/s of HBM; FMAs at its FP32 peak (67 TFLOP/s: 33.5 T FMA/s); cuDNN's median
// pure time from results/h200/20261124_conv_preset_gpu_dtypes/ and
// results/h200/20261124_conv_nhwc_resnet50_mobilenet/ (layers under ~50 MB stay in the 50 MB L2
// between timed calls, so cuDNN's b4_1_dw_s2 nhwc at 5.2 us beats the HBM bound; us ranges are
// at 4.3-3.5 TB/s, FMA us at the FP32 peak):
//                           fp32            16-bit          FMAs        cuDNN us (fp32, fp16)
//   layer       C   H -> OH  MB     us        MB    us        M     us    nchw  nhwc  nchw  nhwc
//   b1_dw        32 112->112 102.8 23.9-29.4  51.4 11.9-14.7 115.6 3.45   67.1  35.1  33.8  26.8
//   b2_1_dw_s2   96 112-> 56 192.7 44.8-55.1  96.3 22.4-27.5  86.7 2.59   91.6  46.9  53.8  36.7
//   b2_2_dw     144  56-> 56 115.6 26.9-33.0  57.8 13.4-16.5 130.1 3.88   73.6  40.8  45.8  28.8
//   b3_1_dw_s2  144  56-> 28  72.3 16.8-20.6  36.1  8.4-10.3  32.5 0.97   36.0  19.6  20.4  13.1
//   b3_2_dw     192  28-> 28  38.5  9.0-11.0  19.3  4.5- 5.5  43.4 1.29   25.5  13.5  15.2  10.3
//   b4_1_dw_s2  192  28-> 14  24.1  5.6- 6.9  12.0  2.8- 3.4  10.8 0.32   10.7   5.2  11.2   6.8
//   b4_2_dw     384  14-> 14  19.3  4.5- 5.5   9.6  2.2- 2.8  21.7 0.65   20.3   7.3  10.0   7.1
//   b5_2_dw     576  14-> 14  28.9  6.7- 8.3  14.5  3.4- 4.1  32.5 0.97   29.8  10.1  14.3   8.7
//   b6_1_dw_s2  576  14->  7  18.1  4.2- 5.2   9.0  2.1- 2.6   8.1 0.24    8.7   5.2   8.9   5.9
//   b6_2_dw     960   7->  7  12.0  2.8- 3.4   6.0  1.4- 1.7  13.5 0.40   13.8   6.3   9.8   5.4
// The FMAs take 1/7 to 1/20 of the byte time: the goal is every byte moved once, in 16-byte
// accesses, with enough of them in flight, and few instructions per byte. The instruction budget
// at 4.3 TB/s on 132 SMs (4 warp-instructions per clock each, 1.98 GHz: ~33 T thread-
// instructions/s) is ~62 per output in fp32 at stride 1 (8 bytes an output), ~31 in 16-bit (4
// bytes), ~2.5x that at stride 2 (an output reads 4 inputs). Per output, 9 FMAs are fixed; the
// strip kernels add about 2 conversions (16-bit; 5 at stride 2), a fraction of a load and a
// store, and their share of the index math.
//
// Why FP32 products and sums for 16-bit storage. The suite compares every output with a float64
// reference at atol + rtol*|ref| (core/compare.hpp): rtol covers the output's rounding to its
// type, atol only FP32 accumulation (8 * rms * sqrt(9) * 16 * 2^-24, ~2.2e-5 * rms). Packed
// 16-bit arithmetic rounds partial sums (or products) of magnitude ~rms to 11 or 8 bits, which
// near a small output misses atol by orders of magnitude: emulated on MobileNet-like data
// (g32mb2ic32ih28oc32kh3ph1, tests/conv/test_depthwise_strip.cpp
// PackedSixteenBitMathMissesTheTolerance) packed FMAs (__hfma2) leave 1658 of 50176 fp16 outputs
// (1807 bf16) outside the tolerance, packed products summed in FP32 (__hmul2) 1347 (1452); FP32
// fmaf of the exact products, 0. So the 16-bit kernels load and store packed pairs (16-byte
// vectors, one cvt.rn.f16x2 / .bf16x2 per output pair) and convert each loaded element to FP32 once
// (fp16: one HADD2.F32 per half-word; bf16: one shift or mask), then multiply-add in FP32 (products
// of two 16-bit values are exact in FP32).
//
// The staged kernels (8.1), this file:
//   - nchw: a block owns a tile of output rows (the full width where it fits) of one input plane,
//     or several whole planes for small maps (7x7, 14x14: 32 and 8 planes per block), and stages
//     the tile's input window, halo included and zeros in the padding, in shared memory as
//     floats. The staging loads are vectors of 4 elements (16 bytes of fp32, 8 of 16-bit) where
//     the rows (or the block's run of whole planes, which is contiguous in memory) allow, four in
//     flight per thread before any store, and the stores to shared memory rotate by lane so that
//     a warp's scalar stores at a 16-byte stride do not collide in one bank. Each thread then
//     computes cells of 2x4 outputs of one plane: per input row of the cell's window 16-, 8- and
//     4-byte shared loads (the window of a cell starts 16-byte aligned: 3x3 stride 1 reads 6
//     floats a row as one 16-byte and one 8-byte load), the 3x3 or 5x5 filter in registers, and
//     a 16-byte (fp32) or 8-byte (16-bit) store per output row. A multiplier M > 1 reuses the
//     staged window for each of the plane's M output channels.
//   - nhwc: a thread owns a vector of V output channels (V = 4 for 3x3: float4 or 4 halves; 2
//     otherwise) with their filter taps in registers, and computes strips of 4 output pixels
//     along W, each input pixel's vector loaded once per kernel row and used for every output of
//     the strip that covers it (the window slides along the row in registers). Lanes run along
//     channels (a warp reads up to 512 contiguous bytes); a block is up to 32 channel vectors x 4
//     output rows x a few strips, so that the rows a thread's neighbours re-read are read by the
//     same SM, close in time. Blocks loop over tiles (grid-stride: at most 4096 threads per SM
//     launched, every block the same number of tiles), so a thread loads its filter once for
//     several strips.
//   - Specialized at compile time: 3x3 and 5x5 at stride 1 and 2, dilation 1 (window and taps
//     unrolled, filter in registers). Anything else runs the generic kernels: runtime loops, the
//     weight of a tap read per tap (an L1 hit), scalar shared loads in nchw.
//   - Every output is computed and written by one thread, taps summed in (r, s) order:
//     deterministic, and every element written exactly once (tests/conv/test_depthwise_config.cpp
//     counts the writes of both tilings on the CPU).
//   - Registers (ptxas, sm_90, no spills): nchw 64 (80 for 5x5, capped for 4 and 3 blocks of 256
//     threads per SM), nhwc 58-128 (the unrolled window's loads of all kernel rows are in flight
//     together; about 2 blocks per SM).
//   - Measured on the H200 for 8.1 (results/h200/20261125_conv_preset_fp32/targets.md, cuDNN's
//     time / ours over MobileNet-v2's ten depthwise layers, batch 32): fp32 nchw 0.50-1.26 (8
//     layers >= 0.8; the two stride-2 layers on 28x28 and 14x14 inputs are the slow ones), fp16
//     nchw 0.48-0.66, fp32 nhwc 0.47-0.75, fp16 nhwc 0.43-0.67. The 16-bit paths are no faster
//     than fp32 (b1_dw nchw 66.6 us in fp16, 58.3 us in fp32; cuDNN 33.8 and 67.2): halves are
//     staged as floats and converted one at a time, about 2.2x cuDNN's instructions (ncu,
//     results/h200/20261124_conv_ncu_missed_targets/). The strip kernels (8.2) are the answer to
//     that.
#include "conv/cuda/depthwise_kernels.hpp"

#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "conv/cuda/depthwise_config_check.hpp"
#include "conv/cuda/depthwise_direct_kernels.hpp"
#include "conv/cuda/depthwise_index.hpp"
#include "conv/cuda/depthwise_io.cuh"
#include "conv/cuda/depthwise_plane_kernels.hpp"
#include "conv/cuda/depthwise_strip_kernels.hpp"
#include "conv/cuda/small_conv_kernels.hpp"  // small_conv_sm_count
#include "core/cuda/cuda_check.hpp"

namespace conv {
namespace {

using depthwise_io::load1;
using depthwise_io::load_smem;
using depthwise_io::load_vec;
using depthwise_io::pick;
using depthwise_io::store1;
using depthwise_io::store_vec;

// ---- nchw: staging -----------------------------------------------------------------------------

constexpr int kCellH = kDepthwiseCellH, kCellW = kDepthwiseCellW;
// Vectors a thread loads before it stores any of them: loads in flight together.
constexpr int kStageBatch = 4;

// Tiles narrower or shorter than the plane: each staged row's image part as aligned V-element
// vectors (V divides W; depthwise_row_item). Lane l stores its elements starting at
// e = l * V / 32, so that at each step the warp's 32 stores (16 bytes apart for V = 4) fall into
// different banks.
template <class T, int V>
__device__ __forceinline__ void stage_rows(const Im2colGeometry& g, const DepthwiseConfig& c,
                                           const DepthwiseNchwBlock& b, const DepthwisePadding& pad,
                                           const T* __restrict__ planes, float* tile) {
  const DepthwiseRowSlots rs = depthwise_row_slots(b, pad, V);
  const int items = b.planes * (pad.bottom - pad.top) * rs.slots;
  const int rot = (int(threadIdx.x & 31u) * V) >> 5;
  for (int base = threadIdx.x; base < items; base += kStageBatch * blockDim.x) {
    float x[kStageBatch][V];
    int row_off[kStageBatch], col0[kStageBatch];
#pragma unroll
    for (int u = 0; u < kStageBatch; ++u) {
      const int i = base + u * int(blockDim.x);
      row_off[u] = -1;
      if (i < items) {
        const DepthwiseRowItem it = depthwise_row_item(g, c, b, pad, rs, V, i);
        load_vec<T, V>(planes + it.src, x[u]);
        row_off[u] = it.smem_row;
        col0[u] = it.col;
      }
    }
#pragma unroll
    for (int u = 0; u < kStageBatch; ++u) {
      if (row_off[u] < 0) continue;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const int e = (k + rot) & (V - 1);
        const int col = col0[u] + e;
        if (unsigned(col) < unsigned(c.stage_cols)) tile[row_off[u] + col] = pick<V>(x[u], e);
      }
    }
  }
}

// Whole-plane tiles: the block's planes are one contiguous run of planes * H * W elements, read
// as V-element vectors (V divides the run of a full block; a short last block reads its tail one
// element at a time); element (plane, iy, ix) goes where depthwise_plane_cell says.
template <class T, int V>
__device__ __forceinline__ void stage_planes(const Im2colGeometry& g, const DepthwiseConfig& c,
                                             const DepthwiseNchwBlock& b,
                                             const T* __restrict__ planes, float* tile) {
  const int hw = g.h * g.w;
  const int count = b.planes * hw, vectors = count / V;
  for (int base = threadIdx.x; base < vectors; base += kStageBatch * blockDim.x) {
    float x[kStageBatch][V];
#pragma unroll
    for (int u = 0; u < kStageBatch; ++u) {
      const int i = base + u * int(blockDim.x);
      if (i < vectors) load_vec<T, V>(planes + std::int64_t(i) * V, x[u]);
    }
#pragma unroll
    for (int u = 0; u < kStageBatch; ++u) {
      const int i = base + u * int(blockDim.x);
      if (i >= vectors) continue;
      int pb = i * V / hw;
      const int rest = i * V - pb * hw;
      int iy = rest / g.w, ix = rest - iy * g.w;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        if (const int at = depthwise_plane_cell(c, b, pb, iy, ix); at >= 0) tile[at] = x[u][k];
        if (++ix == g.w) {
          ix = 0;
          if (++iy == g.h) {
            iy = 0;
            ++pb;
          }
        }
      }
    }
  }
  for (int e = vectors * V + int(threadIdx.x); e < count; e += blockDim.x) {
    const int pb = e / hw, rest = e - pb * hw;
    const int iy = rest / g.w;
    if (const int at = depthwise_plane_cell(c, b, pb, iy, rest - iy * g.w); at >= 0)
      tile[at] = load1(planes + e);
  }
}

// The block's input window into shared memory: zeros in the padding, the image elsewhere. The two
// passes write disjoint cells, so they need no barrier between them.
template <class T>
__device__ __forceinline__ void stage_nchw(const Im2colGeometry& g, const DepthwiseConfig& c,
                                           const DepthwiseNchwBlock& b, const T* __restrict__ src,
                                           float* tile) {
  const DepthwisePadding pad = depthwise_padding(g, c, b);
  const int pads = depthwise_pad_cells(c, pad, b.planes);
  for (int i = threadIdx.x; i < pads; i += blockDim.x)
    tile[depthwise_pad_cell(c, pad, b.planes, i)] = 0.0f;
  const T* const planes = src + b.plane0 * (std::int64_t(g.h) * g.w);
  auto stage = [&](auto vec_tag) {
    constexpr int V = decltype(vec_tag)::value;
    if (c.whole_planes)
      stage_planes<T, V>(g, c, b, planes, tile);
    else
      stage_rows<T, V>(g, c, b, pad, planes, tile);
  };
  switch (c.stage_vec) {
    case 1:
      stage(std::integral_constant<int, 1>());
      break;
    case 2:
      stage(std::integral_constant<int, 2>());
      break;
    default:  // 4
      stage(std::integral_constant<int, 4>());
      break;
  }
}

// ---- nchw: the kernel --------------------------------------------------------------------------

// A cell's 2x4 outputs from its staged window: K x K taps at stride S (dilation 1), filter w in
// registers. Each window row is loaded once (16-byte aligned) and used by every output row that
// covers it; taps are summed in (r, s) order.
template <int K, int S>
__device__ __forceinline__ void cell_fixed(const float* win, int stride, const float (&w)[K * K],
                                           float (&acc)[kCellH][kCellW]) {
  constexpr int kRows = (kCellH - 1) * S + K, kCols = (kCellW - 1) * S + K;
#pragma unroll
  for (int ir = 0; ir < kRows; ++ir) {
    float x[kCols];
    load_smem<kCols>(win + ir * stride, x);
#pragma unroll
    for (int py = 0; py < kCellH; ++py) {
      const int r = ir - py * S;
      if (r < 0 || r >= K) continue;
#pragma unroll
      for (int px = 0; px < kCellW; ++px)
#pragma unroll
        for (int s = 0; s < K; ++s) acc[py][px] = fmaf(x[px * S + s], w[r * K + s], acc[py][px]);
    }
  }
}

// The same for any kernel size, stride and dilation: runtime loops, the tap's weight read per tap.
template <class T>
__device__ __forceinline__ void cell_generic(const Im2colGeometry& g, const float* win, int stride,
                                             const T* __restrict__ wk,
                                             float (&acc)[kCellH][kCellW]) {
  for (int r = 0; r < g.kh; ++r)
    for (int s = 0; s < g.kw; ++s) {
      const float w = load1(wk + r * g.kw + s);
      const float* const p = win + r * g.dh * stride + s * g.dw;
#pragma unroll
      for (int py = 0; py < kCellH; ++py)
#pragma unroll
        for (int px = 0; px < kCellW; ++px)
          acc[py][px] = fmaf(p[py * g.sh * stride + px * g.sw], w, acc[py][px]);
    }
}

// Blocks of 256 threads resident per SM that the register budget must allow: 4 (64 registers),
// 3 for 5x5 (80: its 25 taps, 8 outputs and 11-float window rows spilled at 64). The latency of
// a block's staging loads hides behind the other blocks' work.
constexpr int nchw_blocks_per_sm(int k) {
  return k == 5 ? 3 : 4;
}

// One block: stage the tile's window, then each thread computes its cells for each of the
// plane's output channels. K = 3 or 5 with stride S specialized, K = 0 generic.
template <class T, int K, int S>
__global__ void __launch_bounds__(kDepthwiseMaxThreads, nchw_blocks_per_sm(K))
    depthwise_nchw_kernel(const Im2colGeometry g, const DepthwiseConfig c,
                          const T* __restrict__ src, const T* __restrict__ wei,
                          T* __restrict__ dst) {
  extern __shared__ float4 smem4[];
  float* const tile = reinterpret_cast<float*>(smem4);
  const DepthwiseNchwBlock b = depthwise_nchw_block(g, c, blockIdx.x);
  stage_nchw<T>(g, c, b, src, tile);
  __syncthreads();

  const int cells = b.planes * c.cell_rows * c.cell_cols;
  const std::int64_t ohw = std::int64_t(g.oh) * g.ow;
  const int taps = g.kh * g.kw;
  for (int i = threadIdx.x; i < cells; i += blockDim.x) {
    const DepthwiseNchwCell cell = depthwise_nchw_cell(g, c, b, i);
    if (cell.oy >= b.oy_end || cell.ox >= b.ox_end) continue;
    const std::int64_t plane = b.plane0 + cell.b;  // n * C + channel
    const int n = int(plane / g.c), ch = int(plane - std::int64_t(n) * g.c);
    for (int j = 0; j < c.multiplier; ++j) {
      const int oc = ch * c.multiplier + j;
      const T* const wk = wei + std::int64_t(oc) * taps;
      float acc[kCellH][kCellW];
#pragma unroll
      for (int py = 0; py < kCellH; ++py)
#pragma unroll
        for (int px = 0; px < kCellW; ++px) acc[py][px] = 0.0f;
      if constexpr (K > 0) {
        float w[K * K];
#pragma unroll
        for (int t = 0; t < K * K; ++t) w[t] = load1(wk + t);
        cell_fixed<K, S>(tile + cell.window, c.stage_stride, w, acc);
      } else {
        cell_generic<T>(g, tile + cell.window, c.stage_stride, wk, acc);
      }
      T* const out =
          dst + (std::int64_t(n) * g.oc + oc) * ohw + std::int64_t(cell.oy) * g.ow + cell.ox;
#pragma unroll
      for (int py = 0; py < kCellH; ++py) {
        if (cell.oy + py >= b.oy_end) break;
        T* const row = out + py * g.ow;
        if (c.vec_store && cell.ox + kCellW <= b.ox_end) {
          store_vec<T, kCellW>(row, acc[py]);
        } else {
#pragma unroll
          for (int px = 0; px < kCellW; ++px)
            if (cell.ox + px < b.ox_end) store1(row + px, acc[py][px]);
        }
      }
    }
  }
}

// ---- nhwc --------------------------------------------------------------------------------------

constexpr int kPixels = kDepthwisePixels;

// The V channels of one input pixel (px: its channel 0) that output channels oc0 .. oc0 + V - 1
// read: one vector (VEC: multiplier 1, C % V == 0), else one load per channel (input channel
// cin[j] = (oc0 + j) / M).
template <class T, int V, bool VEC>
__device__ __forceinline__ void load_channels(const T* px, int oc0, const int (&cin)[V],
                                              float (&x)[V]) {
  if constexpr (VEC) {
    load_vec<T, V>(px + oc0, x);
  } else {
#pragma unroll
    for (int j = 0; j < V; ++j) x[j] = load1(px + cin[j]);
  }
}

// One thread: a vector of V output channels, its filter in registers (K > 0), and strips of
// kPixels output pixels along W, one per tile of the grid-stride loop. K = 3 or 5 with stride S
// specialized (dilation 1), K = 0 generic.
template <class T, int K, int S, int V, bool VEC>
__global__ void __launch_bounds__(kDepthwiseMaxThreads)
    depthwise_nhwc_kernel(const Im2colGeometry g, const DepthwiseConfig c,
                          const T* __restrict__ src, const T* __restrict__ wei,
                          T* __restrict__ dst) {
  const DepthwiseNhwcThread t = depthwise_nhwc_thread(c, threadIdx.x);
  const int cv = int(blockIdx.y) * c.cv_per_block + t.cv;
  if (cv >= c.channel_vectors) return;  // no barrier in this kernel
  const int oc0 = cv * V;
  const int taps = g.kh * g.kw;
  // Channels past OC (a partial last vector) are computed from a valid channel and not stored.
  int cin[V];
#pragma unroll
  for (int j = 0; j < V; ++j) cin[j] = depthwise_min(oc0 + j, g.oc - 1) / c.multiplier;
  float w[K > 0 ? K * K : 1][V];
  if constexpr (K > 0) {
#pragma unroll
    for (int tap = 0; tap < K * K; ++tap)
#pragma unroll
      for (int j = 0; j < V; ++j)
        w[tap][j] = oc0 + j < g.oc ? load1(wei + std::int64_t(oc0 + j) * taps + tap) : 0.0f;
  }
  const std::int64_t image_in = std::int64_t(g.h) * g.w * g.c;
  const std::int64_t image_out = std::int64_t(g.oh) * g.ow * g.oc;

  for (std::int64_t tile = blockIdx.x; tile < c.tiles; tile += gridDim.x) {
    const DepthwiseNhwcStrip st = depthwise_nhwc_strip(g, c, tile, t);
    if (!st.valid) continue;
    const T* const img = src + st.n * image_in;
    const int iy0 = st.oy * g.sh - g.ph, ix0 = st.ox0 * g.sw - g.pw;
    float acc[kPixels][V];
#pragma unroll
    for (int p = 0; p < kPixels; ++p)
#pragma unroll
      for (int j = 0; j < V; ++j) acc[p][j] = 0.0f;

    if constexpr (K > 0) {
      // Input columns ix0 .. ix0 + kCols - 1 of each kernel row, each loaded once and used by the
      // strip's outputs that cover it (column tc is tap s = tc - p * S of output p).
      constexpr int kCols = (kPixels - 1) * S + K;
#pragma unroll
      for (int r = 0; r < K; ++r) {
        const int iy = iy0 + r;
        if (unsigned(iy) >= unsigned(g.h)) continue;
        const T* const row = img + iy * g.w * g.c;
#pragma unroll
        for (int tc = 0; tc < kCols; ++tc) {
          const int ix = ix0 + tc;
          float x[V];
          if (unsigned(ix) < unsigned(g.w)) {
            load_channels<T, V, VEC>(row + ix * g.c, oc0, cin, x);
          } else {
#pragma unroll
            for (int j = 0; j < V; ++j) x[j] = 0.0f;
          }
#pragma unroll
          for (int p = 0; p < kPixels; ++p) {
            const int s = tc - p * S;
            if (s < 0 || s >= K) continue;
#pragma unroll
            for (int j = 0; j < V; ++j) acc[p][j] = fmaf(x[j], w[r * K + s][j], acc[p][j]);
          }
        }
      }
    } else {
      for (int r = 0; r < g.kh; ++r) {
        const int iy = iy0 + r * g.dh;
        if (unsigned(iy) >= unsigned(g.h)) continue;
        const T* const row = img + iy * g.w * g.c;
        for (int s = 0; s < g.kw; ++s) {
          float wv[V];
#pragma unroll
          for (int j = 0; j < V; ++j)
            wv[j] =
                oc0 + j < g.oc ? load1(wei + std::int64_t(oc0 + j) * taps + r * g.kw + s) : 0.0f;
#pragma unroll
          for (int p = 0; p < kPixels; ++p) {
            const int ix = ix0 + p * g.sw + s * g.dw;
            if (unsigned(ix) >= unsigned(g.w)) continue;
            float x[V];
            load_channels<T, V, VEC>(row + ix * g.c, oc0, cin, x);
#pragma unroll
            for (int j = 0; j < V; ++j) acc[p][j] = fmaf(x[j], wv[j], acc[p][j]);
          }
        }
      }
    }

    T* const out = dst + st.n * image_out + (std::int64_t(st.oy) * g.ow + st.ox0) * g.oc + oc0;
#pragma unroll
    for (int p = 0; p < kPixels; ++p) {
      if (st.ox0 + p >= g.ow) break;
      T* const o = out + p * g.oc;
      if constexpr (VEC) {
        store_vec<T, V>(o, acc[p]);
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j)
          if (oc0 + j < g.oc) store1(o + j, acc[p][j]);
      }
    }
  }
}

// ---- Launch ------------------------------------------------------------------------------------

template <class T>
using DepthwiseKernelFn = void (*)(Im2colGeometry, DepthwiseConfig, const T*, const T*, T*);

template <class T, int K, int S>
DepthwiseKernelFn<T> nhwc_kernel(bool vec_io) {
  constexpr int V =
      depthwise_nhwc_vec(K == 3   ? (S == 1 ? DepthwiseKernel::k3s1 : DepthwiseKernel::k3s2)
                         : K == 5 ? (S == 1 ? DepthwiseKernel::k5s1 : DepthwiseKernel::k5s2)
                                  : DepthwiseKernel::generic);
  return vec_io ? depthwise_nhwc_kernel<T, K, S, V, true>
                : depthwise_nhwc_kernel<T, K, S, V, false>;
}

// The instantiation c names.
template <class T>
DepthwiseKernelFn<T> kernel_for(const DepthwiseConfig& c) {
  switch (c.kernel) {
    case DepthwiseKernel::k3s1:
      return c.nhwc ? nhwc_kernel<T, 3, 1>(c.vec_io) : depthwise_nchw_kernel<T, 3, 1>;
    case DepthwiseKernel::k3s2:
      return c.nhwc ? nhwc_kernel<T, 3, 2>(c.vec_io) : depthwise_nchw_kernel<T, 3, 2>;
    case DepthwiseKernel::k5s1:
      return c.nhwc ? nhwc_kernel<T, 5, 1>(c.vec_io) : depthwise_nchw_kernel<T, 5, 1>;
    case DepthwiseKernel::k5s2:
      return c.nhwc ? nhwc_kernel<T, 5, 2>(c.vec_io) : depthwise_nchw_kernel<T, 5, 2>;
    case DepthwiseKernel::generic:
      return c.nhwc ? nhwc_kernel<T, 0, 0>(c.vec_io) : depthwise_nchw_kernel<T, 0, 0>;
  }
  return nullptr;
}

}  // namespace

template <class T>
void launch_depthwise(const Im2colGeometry& g, const DepthwiseConfig& c, const T* src, const T* wei,
                      T* dst, cudaStream_t stream) {
  if (const std::string why = depthwise_config_mismatch(g, int(sizeof(T)), c); !why.empty())
    throw std::invalid_argument("depthwise conv: configuration does not fit the problem: " + why);
  if (c.sub_variant == 2) {
    launch_depthwise_strip<T>(g, c.strip, src, wei, dst, stream);
    return;
  }
  if (c.sub_variant == 3) {
    launch_depthwise_pipe<T>(g, c.pipe, src, wei, dst, stream);
    return;
  }
  if (c.sub_variant == 4) {
    launch_depthwise_plane<T>(g, c.plane, src, wei, dst, stream);
    return;
  }
  if (c.sub_variant == 5) {
    launch_depthwise_image<T>(g, c.image, src, wei, dst, stream);
    return;
  }
  if (c.sub_variant == 6) {
    launch_depthwise_direct<T>(g, c.direct, src, wei, dst, stream);
    return;
  }
  const DepthwiseKernelFn<T> kernel = kernel_for<T>(c);
  if (!kernel) throw std::invalid_argument("depthwise conv: no kernel for this configuration");
  const dim3 grid(unsigned(c.grid_x), unsigned(c.grid_y));
  kernel<<<grid, unsigned(c.threads), std::size_t(c.smem_bytes), stream>>>(g, c, src, wei, dst);
  CUDA_CHECK_LAST_LAUNCH();
}

template <class T>
void launch_depthwise(const Im2colGeometry& g, const T* src, const T* wei, T* dst,
                      cudaStream_t stream) {
  if (const std::string why = depthwise_unsupported_reason(g); !why.empty())
    throw std::invalid_argument("depthwise conv: " + why);
  launch_depthwise(g, depthwise_config(g, int(sizeof(T)), small_conv_sm_count()), src, wei, dst,
                   stream);
}

std::string depthwise_name(const Im2colGeometry& g, int elem_bytes) {
  return depthwise_config_name(g, depthwise_config(g, elem_bytes, small_conv_sm_count()));
}

template <class T>
std::string depthwise_kernel_resources(const Im2colGeometry& g, const DepthwiseConfig& c) {
  if (c.sub_variant == 2) return depthwise_strip_kernel_resources<T>(g, c.strip);
  if (c.sub_variant == 3) return depthwise_pipe_kernel_resources<T>(c.pipe);
  if (c.sub_variant == 4) return depthwise_plane_kernel_resources<T>(c.plane);
  if (c.sub_variant == 5) return depthwise_image_kernel_resources<T>(c.image);
  if (c.sub_variant == 6) return depthwise_direct_kernel_resources<T>(c.direct);
  const DepthwiseKernelFn<T> kernel = kernel_for<T>(c);
  if (!kernel) throw std::invalid_argument("depthwise conv: no kernel for this configuration");
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(kernel)));
  return std::to_string(a.numRegs) + " registers, " + std::to_string(a.localSizeBytes) +
         " B local, " + std::to_string(a.sharedSizeBytes) + " B static shared";
}

#define MYCONV_DEPTHWISE_INSTANTIATE(T)                                                           \
  template void launch_depthwise<T>(const Im2colGeometry&, const T*, const T*, T*, cudaStream_t); \
  template void launch_depthwise<T>(const Im2colGeometry&, const DepthwiseConfig&, const T*,      \
                                    const T*, T*, cudaStream_t);                                  \
  template std::string depthwise_kernel_resources<T>(const Im2colGeometry&, const DepthwiseConfig&);
MYCONV_DEPTHWISE_INSTANTIATE(float)
MYCONV_DEPTHWISE_INSTANTIATE(__half)
MYCONV_DEPTHWISE_INSTANTIATE(__nv_bfloat16)
#undef MYCONV_DEPTHWISE_INSTANTIATE

}  // namespace conv
