// The cp.async pipelined GEMM kernel of the tensor-core variants 4-6 (16-byte operand vectors:
// nhwc input whose IC/G is a multiple of the vector, variant 6's repacked input, variant 5's
// column buffer where K is a multiple of the vector), with its copiers, its launch over tile and
// type, and split-K's second pass (mma_split_reduce_kernel: of the two tensor-core kernels only
// this one splits K; launch_fp32_split_reduce sums the FP32 variants' partials with it too). The
// variants, the GEMM and the measurements: im2col_gemm_mma.cu; the shared pieces:
// im2col_gemm_mma.cuh.
//   nvcc -std=c++17 -arch=sm_90 -I. -Xptxas -v -c conv/cuda/im2col_gemm_mma_pipelined.cu
#include <cstdint>
#include <stdexcept>

#include "conv/cuda/im2col_gemm_mma.cuh"
#include "core/cuda/split_reduce.cuh"

namespace conv {
namespace {

using namespace im2col_mma;

// ---- The cp.async pipelined GEMM kernel (16-byte operand vectors) ------------------------------

// The weights' part of a k slice by cp.async: needs K % vector == 0 (rows 16-byte aligned).
template <class Tile, MmaType T>
struct WeightCopier : bench::MmaRowSliceCopier<Tile::BM, Tile::kThreads, kDtype<T>> {
  __device__ WeightCopier(const Im2colGeometry& g, const void* w, int group, int oc0, int tid)
      : bench::MmaRowSliceCopier<Tile::BM, Tile::kThreads, kDtype<T>>(
            static_cast<const unsigned char*>(w) +
                std::int64_t(group) * g.ocg * g.k * MmaTraits<T>::kBytes,
            g.ocg, g.k, oc0, tid) {}
};

// The column part of a k slice by cp.async, gathered from nhwc input whose IC/G is a multiple of
// the vector (variant 4 on such input, variant 6 on its repacked input): one row entry per
// thread and slice, one 16-byte copy per pixel, zero-filled in the padding.
template <class Tile, MmaType T>
struct GatherCopier {
  using Params = GatherParams;
  static constexpr int kBytes = MmaTraits<T>::kBytes, kVec = MmaTraits<T>::kVec;
  static constexpr int kPer = Tile::kBPerThread;
  const unsigned char* src;
  const Im2colRow16* rows;
  Im2colColumn col[kPer];  // group's channel offset folded into base
  MmaVecSlot slot;

  __device__ GatherCopier(const Im2colGeometry& g, const Params& p, int group, int m0, int tid)
      : src(static_cast<const unsigned char*>(p.src)),
        rows(p.rows),
        slot(mma_b_slot(tid, Tile::kThreads, true)) {
    const std::int64_t group_offset = im2col_group_offset(g, group);
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      col[j] = im2col_column(g, m0 + slot.mrow + j * Tile::kBRowStep);
      col[j].base += group_offset;
    }
  }
  __device__ __forceinline__ void copy(const Im2colGeometry& g, int k0, unsigned stage) const {
    const int k = k0 + slot.kv * kVec;
    Im2colRow r{0, kIm2colOutside, kIm2colOutside};
    if (k < g.k) {
      const int4 t = __ldg(reinterpret_cast<const int4*>(rows + k));
      r = {t.x, t.y, t.z};
    }
    const unsigned b = stage + (Tile::BM + slot.mrow) * kMmaRowStride + slot.kv * kMmaVecBytes;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const std::int64_t off = im2col_combine(g, 0, col[j], r);
      cp_async_16(b + j * Tile::kBRowStep * kMmaRowStride, off >= 0 ? src + off * kBytes : src,
                  off >= 0 ? 16 : 0);
    }
  }
  __device__ __forceinline__ void round_tf32(unsigned char* stage) const {
    unsigned char* b = stage + (Tile::BM + slot.mrow) * kMmaRowStride + slot.kv * kMmaVecBytes;
#pragma unroll
    for (int j = 0; j < kPer; ++j)
      round_stage_vector_to_tf32(b + j * Tile::kBRowStep * kMmaRowStride);
  }
};

// The column part of a k slice by cp.async from variant 5's column buffer.
template <class Tile, MmaType T>
struct ColumnBufferCopier {
  using Params = ColumnBufferParams;
  static constexpr int kBytes = MmaTraits<T>::kBytes, kVec = MmaTraits<T>::kVec;
  static constexpr int kPer = Tile::kBPerThread;
  const unsigned char* col;  // this group's matrix
  int kp, m0;
  MmaVecSlot slot;

  __device__ ColumnBufferCopier(const Im2colGeometry& g, const Params& p, int group, int m0_,
                                int tid)
      : col(static_cast<const unsigned char*>(p.col) +
            mma_column_buffer_offset(g, p.kp, group, 0, 0) * kBytes),
        kp(p.kp),
        m0(m0_),
        slot(mma_b_slot(tid, Tile::kThreads, true)) {}

  __device__ __forceinline__ void copy(const Im2colGeometry& g, int k0, unsigned stage) const {
    const int k = k0 + slot.kv * kVec;
    const unsigned b = stage + (Tile::BM + slot.mrow) * kMmaRowStride + slot.kv * kMmaVecBytes;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int m = m0 + slot.mrow + j * Tile::kBRowStep;
      const bool ok = m < g.m && k < kp;
      cp_async_16(b + j * Tile::kBRowStep * kMmaRowStride,
                  ok ? col + (std::int64_t(m) * kp + k) * kBytes : col, ok ? 16 : 0);
    }
  }
  __device__ __forceinline__ void round_tf32(unsigned char* stage) const {
    unsigned char* b = stage + (Tile::BM + slot.mrow) * kMmaRowStride + slot.kv * kMmaVecBytes;
#pragma unroll
    for (int j = 0; j < kPer; ++j)
      round_stage_vector_to_tf32(b + j * Tile::kBRowStep * kMmaRowStride);
  }
};

// kMmaStages shared stages in flight: while slice s is multiplied, the copies of slices s+1 ..
// s+kMmaStages-1 are under way. One barrier per slice.
constexpr int kMmaStages = 3;

// Split-K: blockIdx.z = group * splits + split; split s multiplies the k slices
// [mma_split_begin(s), mma_split_begin(s + 1)) and, when splits > 1, writes its FP32 partial
// output to partial + s * dst elements (the output's layout), summed in split order by
// mma_split_reduce_kernel: deterministic.
template <class Tile, MmaType T, class BCopier>
__global__ void __launch_bounds__(Tile::kThreads, Tile::kMinBlocksPipelined)
    mma_conv_pipelined_kernel(const Im2colGeometry g, bool out_nhwc, const void* __restrict__ wei,
                              const typename BCopier::Params params, void* __restrict__ dst,
                              int splits, float* __restrict__ partial) {
#if !BENCH_MMA_OK
  __trap();  // as in mma_conv_kernel
#endif
  extern __shared__ __align__(16) unsigned char smem[];
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int m0 = blockIdx.x * Tile::BN, oc0 = blockIdx.y * Tile::BM;
  const int group = blockIdx.z / splits, split = blockIdx.z - group * splits;
  const WeightCopier<Tile, T> acopy(g, wei, group, oc0, tid);
  const BCopier bcopy(g, params, group, m0, tid);
  const unsigned smem_base = shared_address(smem);
  const int slice_k = MmaTraits<T>::kSliceK;
  const int all_slices = (g.k + slice_k - 1) / slice_k;
  const int first = mma_split_begin(all_slices, splits, split);
  const int slices = mma_split_begin(all_slices, splits, split + 1) - first;

  // Prologue: the first kMmaStages - 1 slices. Every thread commits one group per slice, empty
  // ones too, so that wait_group counts slices.
#pragma unroll
  for (int s = 0; s < kMmaStages - 1; ++s) {
    if (s < slices) {
      acopy.copy((first + s) * slice_k, smem_base + s * Tile::kStageBytes);
      bcopy.copy(g, (first + s) * slice_k, smem_base + s * Tile::kStageBytes);
    }
    cp_async_commit();
  }

  float acc[Tile::MI][Tile::NI][4];
  bench::zero_accumulators(acc);
  const WarpLanes lanes = warp_lanes<Tile>(lane, warp / Tile::kWarpsN, warp % Tile::kWarpsN);

  int stage = 0;  // slice s lives in stage s % kMmaStages
  for (int s = 0; s < slices; ++s) {
    cp_async_wait<kMmaStages - 2>();  // this thread's copies of slice s have landed
    if constexpr (T == MmaType::tf32) {
      acopy.round_tf32(smem + stage * Tile::kStageBytes);
      bcopy.round_tf32(smem + stage * Tile::kStageBytes);
    }
    // Everyone's copies of slice s are visible, and everyone is done with slice s-1, whose
    // stage the next copies overwrite.
    __syncthreads();
    const int next = s + kMmaStages - 1;
    const int next_stage = stage == 0 ? kMmaStages - 1 : stage - 1;
    if (next < slices) {
      acopy.copy((first + next) * slice_k, smem_base + next_stage * Tile::kStageBytes);
      bcopy.copy(g, (first + next) * slice_k, smem_base + next_stage * Tile::kStageBytes);
    }
    cp_async_commit();
    multiply_slice<Tile, T>(acc, smem_base + stage * Tile::kStageBytes, lanes);
    stage = stage + 1 == kMmaStages ? 0 : stage + 1;
  }
  cp_async_wait<0>();
  __syncthreads();  // the operand stages are free for the output tile
  if (splits == 1) {
    store_output<Tile, T>(acc, g, out_nhwc, static_cast<unsigned char*>(dst), smem, m0, oc0, group);
  } else {  // FP32 bits, through the same staging (mma_output_elements per split)
    const std::int64_t elements = std::int64_t(g.m) * g.oc;
    store_output<Tile, MmaType::tf32>(acc, g, out_nhwc,
                                      reinterpret_cast<unsigned char*>(partial + split * elements),
                                      smem, m0, oc0, group);
  }
}

// dst[i] = sum over splits s, in order, of partial[s][i], converted to the output type; one
// thread per 4 outputs (16-byte partial loads when the count allows).
template <MmaType T>
__global__ void mma_split_reduce_kernel(const float* __restrict__ partial, int splits,
                                        std::int64_t elements, void* __restrict__ dst) {
  bench::split_reduce<kDtype<T>>(partial, splits, elements, dst);
}

}  // namespace

namespace im2col_mma {

// The pipelined kernel's launcher: any output layout, split-K; shared memory with room for the
// FP32 partial tiles too.
template <class Tile, MmaType T, template <class, MmaType> class Loader>
struct MmaGemmLauncher<Tile, T, Loader, true> {
  static void launch(const Im2colGeometry& g, bool out_nhwc, int splits, const void* wei,
                     const typename Loader<Tile, T>::Params& params, const MmaOutput& out,
                     cudaStream_t stream) {
    check_mma_splits(splits, out);
    const auto kernel = mma_conv_pipelined_kernel<Tile, T, Loader<Tile, T>>;
    constexpr int kShared = mma_shared_bytes<Tile>(4, kMmaStages);
    static const bool opted_in = allow_shared_bytes(kernel, kShared);
    (void)opted_in;
    kernel<<<mma_grid<Tile>(g, splits), Tile::kThreads, kShared, stream>>>(
        g, out_nhwc, wei, params, out.dst, splits, out.partial);
    CUDA_CHECK_LAST_LAUNCH();
  }
};

void launch_mma_pipelined(const Im2colGeometry& g, bool out_nhwc, MmaType type, const MmaPlan& plan,
                          const void* wei, const GatherParams& params, const MmaOutput& out,
                          cudaStream_t stream) {
  dispatch_mma<GatherCopier, true>(g, out_nhwc, type, plan, wei, params, out, stream);
}

void launch_mma_pipelined(const Im2colGeometry& g, bool out_nhwc, MmaType type, const MmaPlan& plan,
                          const void* wei, const ColumnBufferParams& params, const MmaOutput& out,
                          cudaStream_t stream) {
  dispatch_mma<ColumnBufferCopier, true>(g, out_nhwc, type, plan, wei, params, out, stream);
}

}  // namespace im2col_mma

// ---- Public launchers: split-K's second pass ----------------------------------------------------

using im2col_mma::grid_for;
using im2col_mma::kElementwiseThreads;

void launch_fp32_split_reduce(const Im2colGeometry& g, int splits, const float* partial, float* dst,
                              cudaStream_t stream) {
  // The tf32 instantiation writes FP32 values unchanged.
  launch_mma_split_reduce(g, MmaType::tf32, MmaPlan{MmaTileShape::t128x128, splits}, partial, dst,
                          stream);
}

void launch_mma_split_reduce(const Im2colGeometry& g, MmaType type, const MmaPlan& plan,
                             const float* partial, void* dst, cudaStream_t stream) {
  if (plan.splits <= 1) return;
  const std::int64_t elements = std::int64_t(g.m) * g.oc;
  const unsigned grid = grid_for((elements + 3) / 4);
  switch (type) {
    case MmaType::tf32:
      mma_split_reduce_kernel<MmaType::tf32>
          <<<grid, kElementwiseThreads, 0, stream>>>(partial, plan.splits, elements, dst);
      break;
    case MmaType::fp16:
      mma_split_reduce_kernel<MmaType::fp16>
          <<<grid, kElementwiseThreads, 0, stream>>>(partial, plan.splits, elements, dst);
      break;
    case MmaType::bf16:
      mma_split_reduce_kernel<MmaType::bf16>
          <<<grid, kElementwiseThreads, 0, stream>>>(partial, plan.splits, elements, dst);
      break;
  }
  CUDA_CHECK_LAST_LAUNCH();
}

}  // namespace conv
