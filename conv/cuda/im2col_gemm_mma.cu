// im2col + GEMM convolution on tensor cores (TF32, FP16, BF16 with FP32 accumulation): variants
// 4-6 of the backend conv/cuda/im2col_gemm_cuda.cpp, side by side with the FP32 CUDA-core
// variants 1-3 in im2col_gemm_kernels.cu. Each is checked against the float64 reference by
// tests/conv/test_im2col_gemm_cuda.cpp (every tile, type and layout) and
// tests/conv/test_backends_gpu.cpp.
//
// Build: part of the normal build when CUDA is found; the kernels need sm_80 or newer (mma.sync
// with bf16/tf32 and m16n8k16, cp.async), so a build must include 80 or 90 in
// CMAKE_CUDA_ARCHITECTURES. The sm_75 code of the default "75;80;90" build is a trap, never
// launched: the backend checks the device and the kernels' PTX version first
// (mma_kernels_unusable_reason()).
// Files: this one holds the register-staged GEMM kernel with its loaders, variant 5's column
// buffer kernel and the public launchers; im2col_gemm_mma_pipelined.cu the cp.async pipelined
// GEMM kernel with its copiers and split-K's second pass; im2col_gemm_mma.cuh what both kernels
// share (tiles, the warp's multiply, the output store, the dispatch over tile and type).
// Registers and spills:
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c conv/cuda/im2col_gemm_mma.cu -o /dev/null
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c conv/cuda/im2col_gemm_mma_pipelined.cu
// Run (on a GPU):
//   build/experiments/myconv --backend im2col_gemm_cuda --dtype bf16 [--variant 4|5|6] ...
//   build/tests/test_im2col_gemm_cuda
//
// Variants:
//   4  implicit GEMM: the im2col gather happens in the load stage of the GEMM, rows from the
//      precomputed 16-byte row table (as variant 3), straight from the layout given. nhwc input
//      whose IC/G is a multiple of the vector (8 fp16/bf16, 4 tf32 values) gathers whole 16-byte
//      runs with cp.async into a 3-stage pipeline; anything else (nchw, odd channel counts)
//      gathers element by element through registers into 2 shared stages.
//   5  im2col + GEMM, the textbook two-kernel form: a kernel writes the column matrix in the
//      storage type, row-major with k contiguous and padded to whole 16-byte vectors
//      (col[group][m][Kp]), then the GEMM reads it by cp.async (by registers where K is not a
//      multiple of the vector, as the weights' rows then are not aligned).
//   6  nhwc repack + implicit GEMM (the default): a kernel rewrites the input as nhwc with each
//      group's channels padded with zeros to whole vectors, another the weights to match
//      (cuDNN does the like for nchw tensor-core convolutions), then variant 4's pipelined kernel
//      runs with every gather a 16-byte cp.async. No repack for nhwc input that needs none.
//
// Measured on an NVIDIA H200 (CUDA 13.0, sm_90 build, cuDNN 9.19 heuristic with
// CUDNN_TENSOR_OP_MATH), median GPU time in ms, ResNet-50 layers at batch 32, nchw / nhwc. v6 is
// the default: fastest of ours everywhere (v4 equals it on nhwc, where both run the same kernel
// without repacking), ahead of cuDNN on conv1 (IC = 3), 1.2-2x behind it elsewhere in fp16/bf16
// and 2-3x in tf32; cuDNN's Hopper kernels use wgmma, which these do not.
//   fp16 problem                v4            v5            v6            cudnn
//   mb32ic3ih224oc64kh7sh2ph3   0.222/0.215   0.574/0.404   0.210/0.207   0.318/0.201
//   mb32ic64ih56oc64kh3ph1      0.160/0.054   0.346/0.319   0.079/0.054   0.058/0.035
//   mb32ic64ih56oc256kh1        0.105/0.041   0.071/0.067   0.068/0.041   0.028/0.028
//   mb32ic128ih28oc128kh3ph1    0.141/0.047   0.176/0.174   0.060/0.046   0.046/0.027
//   mb32ic256ih14oc256kh3ph1    0.203/0.052   0.115/0.112   0.066/0.053   0.043/0.026
//   mb32ic512ih7oc512kh3ph1     0.246/0.053   0.086/0.081   0.071/0.053   0.046/0.025
//   tf32 problem
//   mb32ic3ih224oc64kh7sh2ph3   0.226/0.214   1.037/0.537   0.224/0.218   0.319/0.213
//   mb32ic128ih28oc128kh3ph1    0.170/0.112   0.316/0.261   0.131/0.112   0.058/0.037
//   mb32ic512ih7oc512kh3ph1     0.262/0.124   0.155/0.149   0.150/0.125   0.067/0.044
// bf16 runs within 2% of fp16. Split-K (choose_mma_plan in mma_index.hpp) brought fp16 res5
// from 0.083 (64x64 tiles, 200 blocks) to 0.051 ms (128x128 tiles split 4 ways).
//
// The generic tensor-core pieces (PTX wrappers, the warp's compute loop over a shared stage, the
// row-tile loaders, the accumulator staging, the split-K sum) are core/cuda/mma.cuh, shared with
// the op suite's matmul; that header says why mma.sync rather than wmma, and what limits it on
// Hopper. wgmma (Hopper's warpgroup MMA) would be faster on the H200 but needs sm_90a-only code,
// swizzled shared layouts and TMA or asynchronous pipelines of its own: a separate, later variant.
//
// The GEMM, per group: out[oc][m] = sum_k wei[oc][k] * col[k][m] (conv/im2col_index.hpp). One
// thread block per BM x BN output tile (blockIdx.z = group), k in slices of 64 bytes per row
// (32 fp16/bf16 or 16 tf32 values). Both operand tiles are row-major with k contiguous
// (weights: row = output channel; columns: row = output pixel), at an 80-byte row stride so that
// ldmatrix is conflict-free. Two ways to fill them:
//   - register-staged (any alignment): the next slice is loaded into registers as 16-byte
//     vectors, assembled from element loads where needed, while the current one is multiplied,
//     then stored; 2 shared stages, one barrier per slice;
//   - pipelined (16-byte operand vectors): cp.async copies (zero-filled in the padding and past
//     the edges) for 3 slices in flight, one barrier per slice, no staging registers.
// tf32 values are rounded once (cvt.rna.tf32.f32) as they enter shared memory (the pipelined
// kernel rounds its own landed vectors in place). Each warp computes a WM x WN tile with mma.sync
// (m16n8k16 f16/bf16 or m16n8k8 tf32, FP32 accumulators). The epilogue converts to the storage
// type, stages the tile in shared memory in output order and writes 16-byte vectors where the
// output allows (nchw: OH*OW % vector == 0; nhwc: OC/G % vector == 0), element by element
// otherwise. Every edge (M, OC/G, K) is guarded with zero fill.
//
// Register-staged loads, per layout: nchw gathers are element loads, 32 lanes along 32
// neighbouring pixels of a channel plane (coalesced), packed into a vector of consecutive k per
// thread; nhwc element gathers go along k. Weights are 16-byte loads when K is a multiple of the
// vector.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "conv/cuda/im2col_gemm_mma.cuh"

namespace conv {
namespace {

using namespace im2col_mma;

// ---- Operand loaders --------------------------------------------------------------------------

// The weights' part of a k slice: rows oc0.. of the group's (OC/G x K) matrix, through registers.
template <class Tile, MmaType T>
struct WeightLoader : bench::MmaRowSliceLoader<Tile::BM, Tile::kThreads, kDtype<T>> {
  __device__ WeightLoader(const Im2colGeometry& g, const void* w, int group, int oc0, int tid)
      : bench::MmaRowSliceLoader<Tile::BM, Tile::kThreads, kDtype<T>>(
            static_cast<const unsigned char*>(w) +
                std::int64_t(group) * g.ocg * g.k * MmaTraits<T>::kBytes,
            g.ocg, g.k, oc0, tid) {}
};

// The column part of a k slice gathered element by element from the input (variant 4 where a
// vector of k is not one aligned run: nchw, or nhwc with IC/G not a multiple of the vector). Each
// thread owns one vector column kv (its kVec rows of the table) and kBPerThread pixels, whose
// decompositions it keeps in registers.
template <class Tile, MmaType T>
struct GatherLoader {
  using Params = GatherParams;
  static constexpr int kBytes = MmaTraits<T>::kBytes, kVec = MmaTraits<T>::kVec;
  static constexpr int kPer = Tile::kBPerThread;
  const unsigned char* src;
  const Im2colRow16* rows;
  Im2colColumn col[kPer];  // group's channel offset folded into base
  MmaVecSlot slot;
  uint4 v[kPer];

  __device__ GatherLoader(const Im2colGeometry& g, const Params& p, int group, int m0, int tid)
      : src(static_cast<const unsigned char*>(p.src)),
        rows(p.rows),
        slot(mma_b_slot(tid, Tile::kThreads, g.nhwc)) {
    const std::int64_t group_offset = im2col_group_offset(g, group);
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      col[j] = im2col_column(g, m0 + slot.mrow + j * Tile::kBRowStep);
      col[j].base += group_offset;
    }
  }

  __device__ __forceinline__ Im2colRow row(const Im2colGeometry& g, int k) const {
    if (k >= g.k) return {0, kIm2colOutside, kIm2colOutside};
    const int4 r = __ldg(reinterpret_cast<const int4*>(rows + k));
    return {r.x, r.y, r.z};
  }

  __device__ __forceinline__ void load(const Im2colGeometry& g, int k0) {
    const int kf = k0 + slot.kv * kVec;
    unsigned w[kPer][4];
#pragma unroll
    for (int j = 0; j < kPer; ++j) w[j][0] = w[j][1] = w[j][2] = w[j][3] = 0;
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const Im2colRow r = row(g, kf + e);
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        const std::int64_t off = im2col_combine(g, 0, col[j], r);
        if (off >= 0) set_value<kBytes>(w[j], e, load_value<kBytes>(src + off * kBytes));
      }
    }
#pragma unroll
    for (int j = 0; j < kPer; ++j) v[j] = make_uint4(w[j][0], w[j][1], w[j][2], w[j][3]);
  }

  __device__ __forceinline__ void store(unsigned char* stage) const {
    unsigned char* b = stage + Tile::BM * kMmaRowStride;
#pragma unroll
    for (int j = 0; j < kPer; ++j)
      store_operand<T>(
          b + (slot.mrow + j * Tile::kBRowStep) * kMmaRowStride + slot.kv * kMmaVecBytes, v[j]);
  }
};

template <class Tile, MmaType T>
struct ColumnBufferLoader {
  using Params = ColumnBufferParams;
  static constexpr int kBytes = MmaTraits<T>::kBytes, kVec = MmaTraits<T>::kVec;
  static constexpr int kPer = Tile::kBPerThread;
  const unsigned char* col;  // this group's matrix
  int kp, m0;
  MmaVecSlot slot;
  uint4 v[kPer];

  __device__ ColumnBufferLoader(const Im2colGeometry& g, const Params& p, int group, int m0_,
                                int tid)
      : col(static_cast<const unsigned char*>(p.col) +
            mma_column_buffer_offset(g, p.kp, group, 0, 0) * kBytes),
        kp(p.kp),
        m0(m0_),
        slot(mma_b_slot(tid, Tile::kThreads, true)) {}

  __device__ __forceinline__ void load(const Im2colGeometry& g, int k0) {
    const int k = k0 + slot.kv * kVec;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int m = m0 + slot.mrow + j * Tile::kBRowStep;
      v[j] = m < g.m && k < kp ? load_vector(col + (std::int64_t(m) * kp + k) * kBytes)
                               : make_uint4(0, 0, 0, 0);
    }
  }
  __device__ __forceinline__ void store(unsigned char* stage) const {
    unsigned char* b = stage + Tile::BM * kMmaRowStride;
#pragma unroll
    for (int j = 0; j < kPer; ++j)
      store_operand<T>(
          b + (slot.mrow + j * Tile::kBRowStep) * kMmaRowStride + slot.kv * kMmaVecBytes, v[j]);
  }
};

// ---- The register-staged GEMM kernel (any operand alignment) -----------------------------------

// Two shared stages; the next slice is loaded into registers (16-byte vectors assembled from
// element loads where needed) while the current one is multiplied, then stored.
template <class Tile, MmaType T, class BLoader>
__global__ void __launch_bounds__(Tile::kThreads, Tile::kMinBlocks)
    mma_conv_kernel(const Im2colGeometry g, const void* __restrict__ wei,
                    const typename BLoader::Params params, void* __restrict__ dst) {
#if !BENCH_MMA_OK
  // Built for an architecture without these instructions (the wrappers above are empty there);
  // the host never launches it there, and a launch that slips through fails loudly.
  __trap();
#endif
  extern __shared__ __align__(16) unsigned char smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int m0 = blockIdx.x * Tile::BN, oc0 = blockIdx.y * Tile::BM, group = blockIdx.z;

  WeightLoader<Tile, T> aload(g, wei, group, oc0, tid);
  BLoader bload(g, params, group, m0, tid);
  aload.load(0);
  bload.load(g, 0);
  aload.store(smem);
  bload.store(smem);
  __syncthreads();

  float acc[Tile::MI][Tile::NI][4];
  bench::zero_accumulators(acc);
  const WarpLanes lanes = warp_lanes<Tile>(lane, warp / Tile::kWarpsN, warp % Tile::kWarpsN);
  const unsigned smem_base = shared_address(smem);

  const int slice_k = MmaTraits<T>::kSliceK;
  const int slices = (g.k + slice_k - 1) / slice_k;
  for (int s = 0; s < slices; ++s) {
    const int cur = s & 1;
    const bool more = s + 1 < slices;
    if (more) {  // the next slice into registers; its latency hides behind the MMAs below
      aload.load((s + 1) * slice_k);
      bload.load(g, (s + 1) * slice_k);
    }
    multiply_slice<Tile, T>(acc, smem_base + cur * Tile::kStageBytes, lanes);
    if (more) {  // the other stage: everyone finished reading it before the last barrier
      aload.store(smem + (cur ^ 1) * Tile::kStageBytes);
      bload.store(smem + (cur ^ 1) * Tile::kStageBytes);
    }
    __syncthreads();
  }
  store_output<Tile, T>(acc, g, g.nhwc, static_cast<unsigned char*>(dst), smem, m0, oc0, group);
}

}  // namespace

namespace im2col_mma {

// The register-staged kernel's launcher: the layout it reads, no split-K.
template <class Tile, MmaType T, template <class, MmaType> class Loader>
struct MmaGemmLauncher<Tile, T, Loader, false> {
  static void launch(const Im2colGeometry& g, bool out_nhwc, int splits, const void* wei,
                     const typename Loader<Tile, T>::Params& params, const MmaOutput& out,
                     cudaStream_t stream) {
    check_mma_splits(splits, out);
    if (out_nhwc != g.nhwc || splits != 1)
      throw std::logic_error("register-staged kernel: own layout, no split-K");
    const auto kernel = mma_conv_kernel<Tile, T, Loader<Tile, T>>;
    constexpr int kShared = mma_shared_bytes<Tile>(MmaTraits<T>::kBytes, 2);
    static const bool opted_in = allow_shared_bytes(kernel, kShared);
    (void)opted_in;
    kernel<<<mma_grid<Tile>(g, 1), Tile::kThreads, kShared, stream>>>(g, wei, params, out.dst);
    CUDA_CHECK_LAST_LAUNCH();
  }
};

}  // namespace im2col_mma

namespace {

using namespace im2col_mma;

// ---- Variant 5, step 1: the column buffer in the storage type -----------------------------------

// col[group][m][k] (k < Kp; zeros for K <= k < Kp), one thread per 16-byte vector of one pixel.
// nhwc: consecutive threads take consecutive vectors of a pixel (reads and writes contiguous);
// nchw: consecutive threads take neighbouring pixels (reads coalesced along the channel plane).
template <MmaType T>
__global__ void mma_im2col_kernel(const Im2colGeometry g, const void* __restrict__ src_,
                                  void* __restrict__ col_, int kp) {
  constexpr int kBytes = MmaTraits<T>::kBytes, kVec = MmaTraits<T>::kVec;
  const unsigned char* src = static_cast<const unsigned char*>(src_);
  unsigned char* col = static_cast<unsigned char*>(col_);
  const int vectors_per_row = kp / kVec;
  const std::int64_t total = std::int64_t(g.groups) * g.m * vectors_per_row;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    int kv, m, group;
    if (g.nhwc) {
      kv = int(i % vectors_per_row);
      const std::int64_t rest = i / vectors_per_row;
      m = int(rest % g.m);
      group = int(rest / g.m);
    } else {
      m = int(i % g.m);
      const std::int64_t rest = i / g.m;
      kv = int(rest % vectors_per_row);
      group = int(rest / vectors_per_row);
    }
    const Im2colColumn column = im2col_column(g, m);
    const std::int64_t group_offset = im2col_group_offset(g, group);
    unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const int k = kv * kVec + e;
      const std::int64_t off = im2col_combine(g, group_offset, column, im2col_row(g, k));
      if (off >= 0) set_value<kBytes>(w, e, load_value<kBytes>(src + off * kBytes));
    }
    *reinterpret_cast<uint4*>(col + mma_column_buffer_offset(g, kp, group, m, kv * kVec) * kBytes) =
        make_uint4(w[0], w[1], w[2], w[3]);
  }
}

}  // namespace

// ---- Public launchers ---------------------------------------------------------------------------

int mma_type_bytes(MmaType type) {
  return type == MmaType::tf32 ? 4 : 2;
}

std::string mma_instruction_name(MmaType type) {
  switch (type) {
    case MmaType::tf32:
      return "mma.sync m16n8k8 tf32";
    case MmaType::fp16:
      return "mma.sync m16n8k16 fp16";
    case MmaType::bf16:
      return "mma.sync m16n8k16 bf16";
  }
  return "unknown";
}

std::string mma_kernels_unusable_reason() {
  int device = 0, major = 0, minor = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (major < 8)
    return "the tensor-core variants need compute capability 8.0 or newer (mma.sync m16n8k16 "
           "bf16, m16n8k8 tf32); device " +
           std::to_string(device) + " has " + std::to_string(major) + "." + std::to_string(minor);
  // The code the runtime picked for this device: PTX or SASS of an architecture below 8.0 holds
  // only the trap (a build without 80/90 in CMAKE_CUDA_ARCHITECTURES, run through the JIT).
  cudaFuncAttributes attr{};
  const auto kernel =
      mma_conv_kernel<MmaTile64x64, MmaType::fp16, GatherLoader<MmaTile64x64, MmaType::fp16>>;
  CUDA_CHECK(cudaFuncGetAttributes(&attr, kernel));
  if (attr.ptxVersion < 80)
    return "the tensor-core kernels were built for compute_" + std::to_string(attr.ptxVersion) +
           " only (needs 80 or newer in CMAKE_CUDA_ARCHITECTURES)";
  return "";
}

std::vector<Im2colRow16> im2col_row16_table(const Im2colGeometry& g) {
  std::vector<Im2colRow16> rows(std::size_t(g.k));
  for (int k = 0; k < g.k; ++k) rows[std::size_t(k)] = im2col_row16(g, k);
  return rows;
}

bool mma_pipelined_gather(const Im2colGeometry& g, MmaType type) {
  return mma_nhwc_vector_gather(g, mma_type_bytes(type));
}

void launch_mma_implicit_gemm(const Im2colGeometry& g, MmaType type, const MmaPlan& plan,
                              const void* src, const void* wei, const Im2colRow16* rows, void* dst,
                              float* partial, cudaStream_t stream) {
  const GatherParams params{src, rows};
  if (mma_pipelined_gather(g, type))  // then K = KH*KW*IC/G is a multiple of the vector too
    launch_mma_pipelined(g, g.nhwc, type, plan, wei, params, {dst, partial}, stream);
  else
    dispatch_mma<GatherLoader, false>(g, g.nhwc, type, plan, wei, params, {dst, partial}, stream);
}

std::size_t mma_column_buffer_elements(const Im2colGeometry& g, MmaType type) {
  return std::size_t(g.groups) * std::size_t(g.m) *
         std::size_t(mma_padded_k(g.k, mma_type_bytes(type)));
}

void launch_mma_im2col(const Im2colGeometry& g, MmaType type, const void* src, void* col,
                       cudaStream_t stream) {
  const int kp = mma_padded_k(g.k, mma_type_bytes(type));
  const std::int64_t vectors =
      std::int64_t(g.groups) * g.m * (kp / mma_vec_elements(mma_type_bytes(type)));
  const unsigned grid = grid_for(vectors);
  switch (type) {
    case MmaType::tf32:
      mma_im2col_kernel<MmaType::tf32><<<grid, kElementwiseThreads, 0, stream>>>(g, src, col, kp);
      break;
    case MmaType::fp16:
      mma_im2col_kernel<MmaType::fp16><<<grid, kElementwiseThreads, 0, stream>>>(g, src, col, kp);
      break;
    case MmaType::bf16:
      mma_im2col_kernel<MmaType::bf16><<<grid, kElementwiseThreads, 0, stream>>>(g, src, col, kp);
      break;
  }
  CUDA_CHECK_LAST_LAUNCH();
}

bool mma_pipelined_columns(const Im2colGeometry& g, MmaType type) {
  return g.k % mma_vec_elements(mma_type_bytes(type)) == 0;
}

void launch_mma_gemm_from_columns(const Im2colGeometry& g, MmaType type, const MmaPlan& plan,
                                  const void* wei, const void* col, void* dst, float* partial,
                                  cudaStream_t stream) {
  const ColumnBufferParams params{col, mma_padded_k(g.k, mma_type_bytes(type))};
  if (mma_pipelined_columns(g, type))  // the weights' rows are whole vectors
    launch_mma_pipelined(g, g.nhwc, type, plan, wei, params, {dst, partial}, stream);
  else
    dispatch_mma<ColumnBufferLoader, false>(g, g.nhwc, type, plan, wei, params, {dst, partial},
                                            stream);
}

bool mma_needs_repack(const Im2colGeometry& g, MmaType type) {
  return !mma_nhwc_vector_gather(g, mma_type_bytes(type));
}

std::size_t mma_repacked_src_elements(const Im2colGeometry& g, MmaType type) {
  const Im2colGeometry r = mma_repacked_geometry(g, mma_type_bytes(type));
  return std::size_t(r.n) * std::size_t(r.h) * std::size_t(r.w) * std::size_t(r.c);
}

std::size_t mma_repacked_wei_elements(const Im2colGeometry& g, MmaType type) {
  const Im2colGeometry r = mma_repacked_geometry(g, mma_type_bytes(type));
  return std::size_t(r.oc) * std::size_t(r.k);
}

void launch_mma_repacked_implicit_gemm(const Im2colGeometry& g, MmaType type, const MmaPlan& plan,
                                       const void* src, const void* wei, const Im2colRow16* rows,
                                       void* dst, float* partial, cudaStream_t stream) {
  const Im2colGeometry r = mma_repacked_geometry(g, mma_type_bytes(type));
  launch_mma_pipelined(r, g.nhwc, type, plan, wei, GatherParams{src, rows}, {dst, partial}, stream);
}

std::size_t mma_partial_elements(const Im2colGeometry& g, const MmaPlan& plan) {
  return plan.splits > 1 ? std::size_t(plan.splits) * std::size_t(g.m) * std::size_t(g.oc) : 0;
}

}  // namespace conv
