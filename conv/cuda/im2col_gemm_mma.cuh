// What the two tensor-core GEMM kernels of variants 4-6 share: the register-staged kernel
// (im2col_gemm_mma.cu) and the cp.async pipelined one (im2col_gemm_mma_pipelined.cu). The data
// types, tiles and shared-memory sizes, the operands' parameters, the warp's multiply of a k slice
// and the output tile's store, and the dispatch over tile and type to each kernel's launcher.
// Internal to conv/cuda; each kernel is instantiated in its own file only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>

#include "conv/cuda/im2col_gemm_kernels.hpp"
#include "conv/cuda/mma_index.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/mma.cuh"

namespace conv::im2col_mma {

// ---- Data types and the shared device pieces (core/cuda/mma.cuh) --------------------------------

// conv's MmaType (its public header, im2col_gemm_kernels.hpp) as the shared code's MmaDtype.
template <MmaType T>
constexpr bench::MmaDtype kDtype = T == MmaType::tf32   ? bench::MmaDtype::tf32
                                   : T == MmaType::fp16 ? bench::MmaDtype::fp16
                                                        : bench::MmaDtype::bf16;
template <MmaType T>
using MmaTraits = bench::MmaTraits<kDtype<T>>;
template <MmaType T>
__device__ __forceinline__ void store_operand(unsigned char* p, uint4 v) {
  bench::store_operand<kDtype<T>>(p, v);
}
using bench::cp_async_16;
using bench::cp_async_commit;
using bench::cp_async_wait;
using bench::load_value;
using bench::load_vector;
using bench::round_stage_vector_to_tf32;
using bench::set_value;
using bench::shared_address;

// ---- Tiles --------------------------------------------------------------------------------------

template <MmaTileShape S, int kMinBlocks_, int kMinBlocksPipelined_>
struct MmaTile : bench::MmaWarpTiling<mma_tile_dims(S).bm, mma_tile_dims(S).bn, mma_tile_dims(S).wm,
                                      mma_tile_dims(S).wn> {
  using Base = bench::MmaWarpTiling<mma_tile_dims(S).bm, mma_tile_dims(S).bn, mma_tile_dims(S).wm,
                                    mma_tile_dims(S).wn>;
  using Base::BM, Base::BN, Base::kThreads;
  // __launch_bounds__: blocks per SM the register allocation must allow, of the register-staged
  // and of the pipelined kernel (which holds no staging registers).
  static constexpr int kMinBlocks = kMinBlocks_, kMinBlocksPipelined = kMinBlocksPipelined_;
  static constexpr int kBPerThread = BN * kMmaVecsPerRow / kThreads;
  static constexpr int kBRowStep = kThreads / kMmaVecsPerRow;  // rows between a thread's pixels
  static constexpr int kStageBytes = (BM + BN) * kMmaRowStride;
  static_assert(BN * kMmaVecsPerRow % kThreads == 0, "B slice must split evenly");
};
using MmaTile128x128 = MmaTile<MmaTileShape::t128x128, 1, 2>;
using MmaTile64x128 = MmaTile<MmaTileShape::t64x128, 2, 3>;
using MmaTile64x64 = MmaTile<MmaTileShape::t64x64, 3, 4>;
using MmaTile32x64 = MmaTile<MmaTileShape::t32x64, 4, 4>;

// Dynamic shared memory of a launch: the operand stages, reused by the output staging.
template <class Tile>
constexpr int mma_shared_bytes(int kBytes, int stages) {
  const int main = stages * Tile::kStageBytes;
  const int nchw = Tile::BM * mma_out_stride(false, Tile::BM, Tile::BN, kBytes) * kBytes;
  const int nhwc = Tile::BN * mma_out_stride(true, Tile::BM, Tile::BN, kBytes) * kBytes;
  const int out = nchw > nhwc ? nchw : nhwc;
  return main > out ? main : out;
}

// ---- Operand parameters -------------------------------------------------------------------------

// Variants 4 and 6 gather from the input through the row table (GatherLoader, GatherCopier).
struct GatherParams {
  const void* src;
  const Im2colRow16* rows;  // K entries (im2col_row16_table)
};

// The column part of a k slice read from variant 5's column buffer: aligned vectors only.
struct ColumnBufferParams {
  const void* col;  // all groups' M x Kp matrices
  int kp;           // padded K
};

// ---- Pieces of both GEMM kernels ----------------------------------------------------------------

// Where a lane's ldmatrix rows lie within a stage (a k step adds 32 bytes).
struct WarpLanes {
  unsigned a, b;
};
template <class Tile>
__device__ __forceinline__ WarpLanes warp_lanes(int lane, int warp_m, int warp_n) {
  const LdmatrixRow arow = ldmatrix_a_row(lane), brow = ldmatrix_b_row(lane);
  return {unsigned((warp_m * Tile::WM + arow.row) * kMmaRowStride + arow.chunk * kMmaVecBytes),
          unsigned((Tile::BM + warp_n * Tile::WN + brow.row) * kMmaRowStride +
                   brow.chunk * kMmaVecBytes)};
}

// acc += the warp's part of one k slice held in the stage at shared address `stage`.
template <class Tile, MmaType T>
__device__ __forceinline__ void multiply_slice(float (&acc)[Tile::MI][Tile::NI][4], unsigned stage,
                                               const WarpLanes& lanes) {
  bench::mma_warp_slice<Tile::MI, Tile::NI, kDtype<T>, bench::MmaBRowsN<kMmaRowStride>>(
      acc, stage + lanes.a, stage + lanes.b);
}

// The output tile: accumulators -> output type -> a shared tile in output order -> 16-byte
// vectors along the output's contiguous dimension where it allows, element stores otherwise.
// `smem` must be free (a barrier after the last read of the operand stages) and hold
// mma_shared_bytes. The output layout is out_nhwc (variant 6 computes an nchw problem through an
// nhwc GEMM geometry).
template <class Tile, MmaType T>
__device__ __forceinline__ void store_output(const float (&acc)[Tile::MI][Tile::NI][4],
                                             const Im2colGeometry& g, bool out_nhwc,
                                             unsigned char* __restrict__ out, unsigned char* smem,
                                             int m0, int oc0, int group) {
  constexpr int kBytes = MmaTraits<T>::kBytes;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / Tile::kWarpsN, warp_n = warp % Tile::kWarpsN;
  Im2colGeometry go = g;  // the output's layout
  go.nhwc = out_nhwc;
  const int stride = mma_out_stride(out_nhwc, Tile::BM, Tile::BN, kBytes);
  // Rows of the staged tile are output channels (A's rows), columns pixels (B's rows): nchw keeps
  // channel rows, nhwc stages transposed (pixel rows).
  if (!out_nhwc)
    bench::stage_accumulators<Tile::MI, Tile::NI, kDtype<T>, false>(
        acc, smem, stride, warp_m * Tile::WM, warp_n * Tile::WN, lane);
  else
    bench::stage_accumulators<Tile::MI, Tile::NI, kDtype<T>, true>(
        acc, smem, stride, warp_m * Tile::WM, warp_n * Tile::WN, lane);
  __syncthreads();

  constexpr int V = kMmaVecBytes / kBytes;
  const int channel0 = group * g.ocg;
  if (!out_nhwc) {
    const bool vector_ok = (g.oh * g.ow) % V == 0;  // V pixels in one image, 16-byte aligned
    const std::int64_t plane = std::int64_t(g.oh) * g.ow;
    constexpr int kPerRow = Tile::BN / V;
    for (int id = tid; id < Tile::BM * kPerRow; id += Tile::kThreads) {
      const int oc_l = id / kPerRow, m_l = (id % kPerRow) * V;
      const int oc = oc0 + oc_l, m = m0 + m_l;
      if (oc >= g.ocg || m >= g.m) continue;
      const unsigned char* s = smem + (oc_l * stride + m_l) * kBytes;
      const std::int64_t channel_offset = std::int64_t(channel0 + oc) * plane;
      if (vector_ok) {
        *reinterpret_cast<uint4*>(out + (im2col_dst_column(go, m) + channel_offset) * kBytes) =
            *reinterpret_cast<const uint4*>(s);
      } else {
        for (int e = 0; e < V && m + e < g.m; ++e) {
          unsigned char* d = out + (im2col_dst_column(go, m + e) + channel_offset) * kBytes;
          if constexpr (kBytes == 2)
            *reinterpret_cast<unsigned short*>(d) = reinterpret_cast<const unsigned short*>(s)[e];
          else
            *reinterpret_cast<unsigned*>(d) = reinterpret_cast<const unsigned*>(s)[e];
        }
      }
    }
  } else {
    const bool vector_ok = g.ocg % V == 0;  // V channels of a group, 16-byte aligned
    constexpr int kPerRow = Tile::BM / V;
    for (int id = tid; id < Tile::BN * kPerRow; id += Tile::kThreads) {
      const int m_l = id / kPerRow, oc_l = (id % kPerRow) * V;
      const int oc = oc0 + oc_l, m = m0 + m_l;
      if (oc >= g.ocg || m >= g.m) continue;
      const unsigned char* s = smem + (m_l * stride + oc_l) * kBytes;
      unsigned char* d = out + (std::int64_t(m) * g.oc + channel0 + oc) * kBytes;
      if (vector_ok) {
        *reinterpret_cast<uint4*>(d) = *reinterpret_cast<const uint4*>(s);
      } else {
        for (int e = 0; e < V && oc + e < g.ocg; ++e) {
          if constexpr (kBytes == 2)
            reinterpret_cast<unsigned short*>(d)[e] = reinterpret_cast<const unsigned short*>(s)[e];
          else
            reinterpret_cast<unsigned*>(d)[e] = reinterpret_cast<const unsigned*>(s)[e];
        }
      }
    }
  }
}

// ---- Launches -----------------------------------------------------------------------------------

using bench::allow_shared_bytes;

template <class Tile>
dim3 mma_grid(const Im2colGeometry& g, int splits) {
  return dim3(unsigned((g.m + Tile::BN - 1) / Tile::BN),
              unsigned((g.ocg + Tile::BM - 1) / Tile::BM), unsigned(g.groups * splits));
}

// The destination of one launch: the output, and for split-K the FP32 partials
// (plan.splits * OC * M floats) that launch_mma_split_reduce sums into it.
struct MmaOutput {
  void* dst;
  float* partial;
};

inline void check_mma_splits(int splits, const MmaOutput& out) {
  if (splits < 1 || (splits > 1 && !out.partial))
    throw std::logic_error("split-K needs splits >= 1 and a partial buffer");
}

// One kernel for one tile and type: Pipelined false is the register-staged kernel's launcher
// (im2col_gemm_mma.cu), true the pipelined kernel's, with out_nhwc and split-K
// (im2col_gemm_mma_pipelined.cu); each file defines its own as a partial specialization with a
// static launch(g, out_nhwc, splits, wei, params, out, stream).
template <class Tile, MmaType T, template <class, MmaType> class Loader, bool Pipelined>
struct MmaGemmLauncher;

template <MmaType T, template <class, MmaType> class Loader, bool Pipelined, class Params>
void dispatch_mma_tile(const Im2colGeometry& g, bool out_nhwc, const MmaPlan& plan, const void* wei,
                       const Params& params, const MmaOutput& out, cudaStream_t stream) {
  switch (plan.tile) {
    case MmaTileShape::t128x128:
      return MmaGemmLauncher<MmaTile128x128, T, Loader, Pipelined>::launch(
          g, out_nhwc, plan.splits, wei, params, out, stream);
    case MmaTileShape::t64x128:
      return MmaGemmLauncher<MmaTile64x128, T, Loader, Pipelined>::launch(g, out_nhwc, plan.splits,
                                                                          wei, params, out, stream);
    case MmaTileShape::t64x64:
      return MmaGemmLauncher<MmaTile64x64, T, Loader, Pipelined>::launch(g, out_nhwc, plan.splits,
                                                                         wei, params, out, stream);
    case MmaTileShape::t32x64:
      return MmaGemmLauncher<MmaTile32x64, T, Loader, Pipelined>::launch(g, out_nhwc, plan.splits,
                                                                         wei, params, out, stream);
  }
  throw std::logic_error("unknown tensor-core tile");
}

template <template <class, MmaType> class Loader, bool Pipelined, class Params>
void dispatch_mma(const Im2colGeometry& g, bool out_nhwc, MmaType type, const MmaPlan& plan,
                  const void* wei, const Params& params, const MmaOutput& out,
                  cudaStream_t stream) {
  switch (type) {
    case MmaType::tf32:
      return dispatch_mma_tile<MmaType::tf32, Loader, Pipelined>(g, out_nhwc, plan, wei, params,
                                                                 out, stream);
    case MmaType::fp16:
      return dispatch_mma_tile<MmaType::fp16, Loader, Pipelined>(g, out_nhwc, plan, wei, params,
                                                                 out, stream);
    case MmaType::bf16:
      return dispatch_mma_tile<MmaType::bf16, Loader, Pipelined>(g, out_nhwc, plan, wei, params,
                                                                 out, stream);
  }
  throw std::logic_error("unknown tensor-core type");
}

// The pipelined kernel on the gathered input (GatherCopier) or on variant 5's column buffer
// (ColumnBufferCopier): im2col_gemm_mma_pipelined.cu.
void launch_mma_pipelined(const Im2colGeometry& g, bool out_nhwc, MmaType type, const MmaPlan& plan,
                          const void* wei, const GatherParams& params, const MmaOutput& out,
                          cudaStream_t stream);
void launch_mma_pipelined(const Im2colGeometry& g, bool out_nhwc, MmaType type, const MmaPlan& plan,
                          const void* wei, const ColumnBufferParams& params, const MmaOutput& out,
                          cudaStream_t stream);

// Element-wise kernels: 256 threads, a grid-stride loop beyond 2^20 blocks.
inline constexpr int kElementwiseThreads = 256;
inline unsigned grid_for(std::int64_t items) {
  const std::int64_t blocks = (items + kElementwiseThreads - 1) / kElementwiseThreads;
  return unsigned(blocks < 1 ? 1 : blocks < (1 << 20) ? blocks : (1 << 20));
}

}  // namespace conv::im2col_mma
