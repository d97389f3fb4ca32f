// Variant 10 of im2col_gemm_cuda: implicit-GEMM convolution on Hopper's warpgroup tensor cores
// (wgmma, sm_90a) fed by the copy engine (TMA), for tf32, fp16 and bf16 with FP32 accumulation.
// The plan (tile, stages, split-K) and the problems it takes are in wgmma_conv_config.hpp; the
// mma.sync variants 4-6 (im2col_gemm_mma.cu) stay for sm_80/86/89 and for what this one does not
// take (groups, channel counts that are not whole 128-byte slices, e.g. ResNet's conv1).
//
// Build: this file is compiled for sm_90a only (conv/CMakeLists.txt: its own target with
// CUDA_ARCHITECTURES 90a where the build includes 90); elsewhere its kernels are empty and
// wgmma_conv_unusable_reason() says why. Registers and spills:
//   nvcc -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I. -Xptxas -v -c conv/cuda/wgmma_conv.cu
//   -o /dev/null
// Run (on an H100/H200):
//   build/experiments/myconv --backend im2col_gemm_cuda --variant 10 --dtype fp16 ...
//   build/tests/test_im2col_gemm_cuda --gtest_filter='*Wgmma*'
//
// The GEMM: out[m][oc] = sum_k src_im2col[m][k] * wei[oc][k], M = N*OH*OW output pixels, k =
// (r, s, c) over the nhwc input (the problem's own, or variant 6's repack of an nchw input). Work
// units are 128-pixel x BN-channel output tiles (BN 64 or 128; times the split-K count), taken in
// turn by a persistent grid of one block per SM (at most), 384 threads in three warpgroups:
//   - warpgroup 0, the producer: one thread issues, per 128-byte k slice (one filter tap, 64 fp16
//     or 32 tf32 channels), two tensor copies into a shared-memory stage: the pixels' slice in
//     im2col mode (the copy engine walks the 128 output pixels' windows across rows and images,
//     applies the stride, adds the tap offset and zero-fills the padding) and the weights' slice
//     in tiled mode. Both land 128-byte swizzled, the layout wgmma reads without bank conflicts.
//     Where C is not a whole number of slices (80, 160 fp16 channels), a tap's last slice reads
//     past C in both tensors and lands zero-filled: the MMAs add zeros there.
//     A stage's full barrier (mbarrier) completes when its bytes have landed; the producer waits
//     on the stage's empty barrier before reusing it, and runs on into the block's next unit
//     while the consumers write the last one out. Its registers are cut to 40 (setmaxnreg).
//   - warpgroups 1 and 2, the consumers (232 registers each): each multiplies its 64 pixels of
//     the stage by the BN channels with four wgmma m64nBNk16 (k8 for tf32) from shared-memory
//     descriptors, waits for them, and releases the stage. Keeping one stage's MMAs in flight
//     while issuing the next (wait_group 1, as CUTLASS's mainloops do) took 0.99x the time
//     (geomean of 304 cases, 0.85-1.08x each) on the model grids (H200, source 59b4bbc against
//     5166c28 in separate runs: results/h200/20261128_conv_targets_one_group_in_flight/ and
//     20261128_conv_targets_all_grids/), within the runs' spread: the two consumer warpgroups
//     already keep the tensor cores busy, one issuing while the other waits.
//   - epilogue: the accumulators go through a staging tile of their own in shared memory into
//     output order and out in the storage type in vectors (nhwc: 4 channels; nchw: 8 pixels of
//     one image), or as FP32 partials when split-K is on, summed in split order by a second
//     kernel (launch_mma_split_reduce, the mma.sync variants' own: the partials are in output
//     order).
// tf32: the tensor cores read the FP32 values' top 19 bits (truncation); two VGG-16 layers had
// one output in 25.7 million outside the tf32 tolerance with truncation. So operands are rounded
// to nearest tf32 (cvt.rna) before the MMAs read them: by the repack copy where the layout needs
// one (conv/cuda/nhwc_repack.cu), else here, in shared memory: once a stage has landed, the 256
// consumer threads round it in place (A's 128 pixel rows and B's BN channel rows, 16 bytes at a
// time), fence the async proxy (the MMAs read shared memory through it) and meet at a barrier
// before the first wgmma. No copy of the input then runs before the kernel. Rounding by the
// producer warpgroup's three idle warps instead (96 threads, the copies completing on a barrier of
// their own, the consumers waiting for the rounded stage, 56/224 registers) was measured 1.4-3.1x
// slower than the copy on ResNet-50's and VGG-16's 3x3 layers, 1.6x faster on res2_1x1_up (H200,
// source 1d95b81: results/h200/20261128_conv_tf32_rounding_producer_warps/): 96 threads round a
// 32 KB stage slower than the MMAs consume it.
// Split-K partial planes (M x OC floats) start at any 4-byte boundary: vector stores check the
// address.
//
// Measured on an NVIDIA H200: results/h200/20261124_conv_preset_gpu_dtypes/ (nchw) and
// 20261124_conv_nhwc_resnet50_mobilenet/; the targets in 20261125_conv_preset_fp32/targets.md.
#include "conv/cuda/wgmma_conv.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/pdl.cuh"
#include "core/cuda/tensor_map.hpp"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#include "core/cuda/hopper_ptx.cuh"
#endif

#ifndef MYCONV_WGMMA_SM90A
#define MYCONV_WGMMA_SM90A 0
#endif

namespace conv {
namespace {

struct WgmmaConvArgs {
  int m = 0, oc = 0;  // GEMM M (output pixels) and N (output channels)
  int ohw = 0, ow = 0;
  int sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, kw = 1;
  int cblocks = 0;  // k slices per tap: ceil(C / bk), the last one zero-filled past C
  int slices = 0;
  int splits = 1;
  int m_tiles = 0, n_tiles = 0;
  int nhwc_out = 0;
  int round_tf32 = 0;  // tf32: round each landed stage to nearest tf32 in shared memory
};

template <MmaType T>
constexpr int kElementBytes = T == MmaType::tf32 ? 4 : 2;

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MYCONV_WGMMA_DEVICE 1
#else
#define MYCONV_WGMMA_DEVICE 0
#endif

#if MYCONV_WGMMA_DEVICE
using namespace bench::sm90;  // core/cuda/hopper_ptx.cuh

// FP32 bits rounded to nearest tf32, ties away from zero (the low 13 bits cleared).
__device__ __forceinline__ std::uint32_t tf32_rna(std::uint32_t bits) {
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(__uint_as_float(bits)));
  return r;
}

// One k16 (k8 for tf32) step of a 64 x BN tile: 32 bytes of k in each operand.
template <MmaType T, int BN>
__device__ __forceinline__ void wgmma_step(float* d, std::uint64_t da, std::uint64_t db,
                                           int scale) {
  if constexpr (BN == 128) {
    if constexpr (T == MmaType::fp16)
      wgmma_m64n128k16_f16(d, da, db, scale);
    else if constexpr (T == MmaType::bf16)
      wgmma_m64n128k16_bf16(d, da, db, scale);
    else
      wgmma_m64n128k8_tf32(d, da, db, scale);
  } else {
    if constexpr (T == MmaType::fp16)
      wgmma_m64n64k16_f16(d, da, db, scale);
    else if constexpr (T == MmaType::bf16)
      wgmma_m64n64k16_bf16(d, da, db, scale);
    else
      wgmma_m64n64k8_tf32(d, da, db, scale);
  }
}

template <MmaType T>
__device__ __forceinline__ void store_value(void* base, std::int64_t i, float v) {
  if constexpr (T == MmaType::fp16)
    static_cast<__half*>(base)[i] = __float2half_rn(v);
  else if constexpr (T == MmaType::bf16)
    static_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(v);
  else
    static_cast<float*>(base)[i] = v;
}
#endif  // MYCONV_WGMMA_DEVICE

#if MYCONV_WGMMA_DEVICE
// Unit u of the persistent loop: its tile (m fastest, so that neighbouring blocks share the
// weights' slices in L2) and split, and its k slices.
struct WgmmaUnit {
  int m0, oc0, split, s_begin, s_count;
};
__device__ __forceinline__ WgmmaUnit wgmma_unit(const WgmmaConvArgs& a, int u, int bn) {
  WgmmaUnit w;
  const int mt = u % a.m_tiles;
  const int rest = u / a.m_tiles;
  const int nt = rest % a.n_tiles;
  w.split = rest / a.n_tiles;
  w.m0 = mt * kWgmmaBm;
  w.oc0 = nt * bn;
  w.s_begin = int(std::int64_t(a.slices) * w.split / a.splits);
  w.s_count = int(std::int64_t(a.slices) * (w.split + 1) / a.splits) - w.s_begin;
  return w;
}

// Stores N = 4 (nhwc: consecutive channels) or 8 (nchw: consecutive pixels) values at element
// `at` of `out` in one vector store (two for 8 FP32 values); the caller checked that they are
// contiguous and aligned.
template <class Out, int N>
__device__ __forceinline__ void store_run(void* out, std::int64_t at, const float* v) {
  {
    if constexpr (std::is_same_v<Out, float>) {
#pragma unroll
      for (int j = 0; j < N; j += 4)
        *reinterpret_cast<float4*>(static_cast<float*>(out) + at + j) =
            make_float4(v[j], v[j + 1], v[j + 2], v[j + 3]);
    } else {
      unsigned w[N / 2];
#pragma unroll
      for (int j = 0; j < N; j += 2) {
        if constexpr (std::is_same_v<Out, __half>) {
          const __half2 h = __floats2half2_rn(v[j], v[j + 1]);
          w[j / 2] = *reinterpret_cast<const unsigned*>(&h);
        } else {
          const __nv_bfloat162 h = __floats2bfloat162_rn(v[j], v[j + 1]);
          w[j / 2] = *reinterpret_cast<const unsigned*>(&h);
        }
      }
      if constexpr (N == 8)
        *reinterpret_cast<uint4*>(static_cast<Out*>(out) + at) = make_uint4(w[0], w[1], w[2], w[3]);
      else
        *reinterpret_cast<uint2*>(static_cast<Out*>(out) + at) = make_uint2(w[0], w[1]);
    }
  }
}
#endif

template <MmaType T>
using StorageOf = std::conditional_t<T == MmaType::fp16, __half,
                                     std::conditional_t<T == MmaType::bf16, __nv_bfloat16, float>>;

template <MmaType T, int BN>
__global__ void __launch_bounds__(kWgmmaThreads, 1)
    wgmma_conv_kernel(const __grid_constant__ CUtensorMap map_src,
                      const __grid_constant__ CUtensorMap map_wei, const WgmmaConvArgs a,
                      void* __restrict__ dst, float* __restrict__ partial) {
#if MYCONV_WGMMA_DEVICE
  constexpr int kStagesT = wgmma_stages(BN);
  constexpr int kBk = kWgmmaSliceBytes / kElementBytes<T>;
  constexpr int kABytes = kWgmmaBm * kWgmmaSliceBytes;
  constexpr int kStageBytes = (kWgmmaBm + BN) * kWgmmaSliceBytes;
  constexpr int kStagingOffset = kStagesT * kStageBytes;
  constexpr int kBarrierOffset = kStagingOffset + int(wgmma_staging_bytes(BN));

  extern __shared__ unsigned char smem_raw[];
  // The swizzled tiles need 1024-byte alignment of their shared-memory address.
  unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem + kBarrierOffset);
  std::uint64_t* empty = full + kStagesT;
  const int warpgroup = threadIdx.x / 128;
  const int units = a.m_tiles * a.n_tiles * a.splits;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStagesT; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 2);  // one arrival per consumer warpgroup
    }
    mbar_init_fence();
  }
  __syncthreads();
  // Programmatic dependent launch (WgmmaConvPlan::pdl): the next kernel may be scheduled now;
  // nothing global is read or written before the kernel before this one is done.
  bench::launch_dependents();
  bench::wait_for_previous();

  if (warpgroup == 0) {
    // The producer: one thread walks the block's units and their k slices, a stage per slice,
    // running ahead into the next unit while the consumers finish the last one's epilogue.
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      int it = 0;
      for (int u = blockIdx.x; u < units; u += gridDim.x) {
        const WgmmaUnit w = wgmma_unit(a, u, BN);
        // The window origin of the tile's first pixel; the copy engine walks on from there.
        const int n0 = w.m0 / a.ohw;
        const int pix = w.m0 - n0 * a.ohw;
        const int oy = pix / a.ow, ox = pix - (pix / a.ow) * a.ow;
        const int h0 = oy * a.sh - a.ph, w0 = ox * a.sw - a.pw;
        for (int i = 0; i < w.s_count; ++i, ++it) {
          const int stage = it % kStagesT;
          if (it >= kStagesT) mbar_wait(&empty[stage], ((it / kStagesT) & 1) ^ 1);
          unsigned char* tile = smem + stage * kStageBytes;
          mbar_expect_tx(&full[stage], kStageBytes);
          const int slice = w.s_begin + i;
          const int tap = slice / a.cblocks;
          const int cb = slice - tap * a.cblocks;
          const int r = tap / a.kw, s = tap - (tap / a.kw) * a.kw;
          // Channels past C (the last slice of a tap where C is not a whole number of slices)
          // are outside both tensors and land as zeros.
          tma_load_im2col_4d(tile, &map_src, &full[stage], cb * kBk, w0, h0, n0,
                             std::uint16_t(s * a.dw), std::uint16_t(r * a.dh));
          tma_load_tile_3d(tile + kABytes, &map_wei, &full[stage], cb * kBk, tap, w.oc0);
        }
      }
    }
    return;
  }

  setmaxnreg_inc<232>();
  const int half = warpgroup - 1;  // this warpgroup's 64 pixels of each tile
  const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
  const int tid = threadIdx.x - 128;  // 0..255 over both consumer warpgroups
  float* staging = reinterpret_cast<float*>(smem + kStagingOffset);
  const std::int64_t plane = std::int64_t(a.m) * a.oc;
  int it = 0;
  for (int u = blockIdx.x; u < units; u += gridDim.x) {
    const WgmmaUnit w = wgmma_unit(a, u, BN);
    float d[BN / 2];
#pragma unroll
    for (int j = 0; j < BN / 2; ++j) d[j] = 0.f;
    for (int i = 0; i < w.s_count; ++i, ++it) {
      const int stage = it % kStagesT;
      mbar_wait(&full[stage], (it / kStagesT) & 1);
      if constexpr (T == MmaType::tf32) {
        if (a.round_tf32) {
          uint4* v = reinterpret_cast<uint4*>(smem + stage * kStageBytes);
#pragma unroll
          for (int e = tid; e < kStageBytes / 16; e += 256) {
            uint4 x = v[e];
            x.x = tf32_rna(x.x), x.y = tf32_rna(x.y), x.z = tf32_rna(x.z), x.w = tf32_rna(x.w);
            v[e] = x;
          }
          fence_proxy_async_shared();
          consumers_sync();
        }
      }
      const std::uint32_t a_addr =
          smem_u32(smem + stage * kStageBytes + half * 64 * kWgmmaSliceBytes);
      const std::uint32_t b_addr = smem_u32(smem + stage * kStageBytes + kABytes);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        wgmma_step<T, BN>(d, sw128_desc(a_addr + kk * 32), sw128_desc(b_addr + kk * 32), 1);
      wgmma_commit();
      wgmma_wait_all();
      if (t == 0) mbar_arrive(&empty[stage]);
    }

    // Epilogue: the FP32 tile through the staging tile into output order. The first barrier
    // keeps the previous unit's readers ahead of these writes.
    consumers_sync();
    const int row0 = half * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int nb = 0; nb < BN / 8; ++nb) {
      const int col = nb * 8 + (lane % 4) * 2;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = row0 + h * 8;
        if (a.nhwc_out) {
          staging[row * (BN + 4) + col] = d[nb * 4 + h * 2];
          staging[row * (BN + 4) + col + 1] = d[nb * 4 + h * 2 + 1];
        } else {
          staging[col * (kWgmmaBm + 4) + row] = d[nb * 4 + h * 2];
          staging[(col + 1) * (kWgmmaBm + 4) + row] = d[nb * 4 + h * 2 + 1];
        }
      }
    }
    consumers_sync();
    using Out = StorageOf<T>;
    void* out = partial != nullptr ? static_cast<void*>(partial + w.split * plane) : dst;
    // A vector store needs its address aligned: the partial planes (M x OC floats each) start
    // anywhere, so the check is on the address, not on the element index.
    const auto aligned = [](const void* base, std::int64_t at, int bytes, int to) {
      return (reinterpret_cast<std::uintptr_t>(base) + std::uint64_t(at) * bytes) % to == 0;
    };
    if (a.nhwc_out) {
      // Threads along 4-channel runs of a pixel row.
      for (int e = tid; e < kWgmmaBm * (BN / 4); e += 256) {
        const int row = e / (BN / 4), c4 = (e % (BN / 4)) * 4;
        const int m = w.m0 + row, oc = w.oc0 + c4;
        if (m >= a.m || oc >= a.oc) continue;
        const float4 v4 = *reinterpret_cast<const float4*>(staging + row * (BN + 4) + c4);
        const float v[4] = {v4.x, v4.y, v4.z, v4.w};
        const std::int64_t at = std::int64_t(m) * a.oc + oc;
        const bool whole = oc + 4 <= a.oc;
        if (partial != nullptr) {
          if (whole && aligned(out, at, 4, 16)) {
            *reinterpret_cast<float4*>(static_cast<float*>(out) + at) = v4;
          } else {
            for (int j = 0; j < 4 && oc + j < a.oc; ++j) static_cast<float*>(out)[at + j] = v[j];
          }
        } else if (whole && aligned(out, at, int(sizeof(Out)), 4 * int(sizeof(Out)))) {
          store_run<Out, 4>(out, at, v);
        } else {
          for (int j = 0; j < 4 && oc + j < a.oc; ++j) store_value<T>(out, at + j, v[j]);
        }
      }
    } else {
      // Threads along 8-pixel runs of a channel: one 16-byte store (two for FP32) where the run
      // is in one image and aligned.
      for (int e = tid; e < BN * (kWgmmaBm / 8); e += 256) {
        const int col = e / (kWgmmaBm / 8), r8 = (e % (kWgmmaBm / 8)) * 8;
        const int m = w.m0 + r8, oc = w.oc0 + col;
        if (m >= a.m || oc >= a.oc) continue;
        const float* src = staging + col * (kWgmmaBm + 4) + r8;
        const float4 lo = *reinterpret_cast<const float4*>(src);
        const float4 hi = *reinterpret_cast<const float4*>(src + 4);
        const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
        const int n = m / a.ohw;
        const int p = m - n * a.ohw;
        const std::int64_t at = (std::int64_t(n) * a.oc + oc) * a.ohw + p;
        const bool whole = m + 8 <= a.m && p + 8 <= a.ohw;
        if (partial != nullptr) {
          if (whole && aligned(out, at, 4, 16)) {
            *reinterpret_cast<float4*>(static_cast<float*>(out) + at) = lo;
            *reinterpret_cast<float4*>(static_cast<float*>(out) + at + 4) = hi;
            continue;
          }
        } else if (whole && aligned(out, at, int(sizeof(Out)), 16)) {
          store_run<Out, 8>(out, at, v);
          continue;
        }
        for (int j = 0; j < 8 && m + j < a.m; ++j) {
          const int nj = (m + j) / a.ohw;
          const std::int64_t atj = (std::int64_t(nj) * a.oc + oc) * a.ohw + (m + j - nj * a.ohw);
          if (partial != nullptr)
            static_cast<float*>(out)[atj] = v[j];
          else
            store_value<T>(out, atj, v[j]);
        }
      }
    }
  }
#endif  // MYCONV_WGMMA_DEVICE
}

// ---- Host side ------------------------------------------------------------------------------

CUtensorMapDataType map_type(MmaType type) {
  switch (type) {
    case MmaType::fp16:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case MmaType::bf16:
      return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    case MmaType::tf32:
      break;
  }
  return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}

template <MmaType T, int BN>
void launch_typed(const Im2colGeometry& g, const WgmmaConvPlan& plan, const WgmmaConvMaps& maps,
                  bool round_operands, void* dst, float* partial, cudaStream_t stream) {
  if (plan.stages != wgmma_stages(BN) || plan.smem_bytes != wgmma_smem_bytes(BN))
    throw std::logic_error("wgmma conv: the plan's stages do not match the kernel's");
  static std::once_flag raised;
  std::call_once(raised, [&] {
    CUDA_CHECK(cudaFuncSetAttribute(wgmma_conv_kernel<T, BN>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(plan.smem_bytes)));
  });
  WgmmaConvArgs a;
  a.m = g.m;
  a.oc = g.oc;
  a.ohw = g.oh * g.ow;
  a.ow = g.ow;
  a.sh = g.sh, a.sw = g.sw, a.ph = g.ph, a.pw = g.pw, a.dh = g.dh, a.dw = g.dw, a.kw = g.kw;
  a.cblocks = plan.slices / (g.kh * g.kw);
  a.slices = plan.slices;
  a.splits = plan.splits;
  a.m_tiles = int(plan.m_tiles);
  a.n_tiles = int(plan.n_tiles);
  a.nhwc_out = g.nhwc ? 1 : 0;
  a.round_tf32 = T == MmaType::tf32 && round_operands ? 1 : 0;
  const dim3 grid(unsigned(plan.grid));
  bench::launch_pdl(wgmma_conv_kernel<T, BN>, grid, dim3(kWgmmaThreads), plan.smem_bytes, plan.pdl,
                    stream, maps.src, maps.wei, a, dst, plan.splits > 1 ? partial : nullptr);
}

template <MmaType T>
void launch_bn(const Im2colGeometry& g, const WgmmaConvPlan& plan, const WgmmaConvMaps& maps,
               bool round_operands, void* dst, float* partial, cudaStream_t stream) {
  if (plan.bn == 128)
    launch_typed<T, 128>(g, plan, maps, round_operands, dst, partial, stream);
  else if (plan.bn == 64)
    launch_typed<T, 64>(g, plan, maps, round_operands, dst, partial, stream);
  else
    throw std::logic_error("wgmma conv: BN must be 64 or 128");
}

template <MmaType T, int BN>
const void* kernel_of() {
  return reinterpret_cast<const void*>(wgmma_conv_kernel<T, BN>);
}

}  // namespace

std::string wgmma_conv_unusable_reason() {
  if (!MYCONV_WGMMA_SM90A)
    return "variant 10 needs a build for sm_90a (CMAKE_CUDA_ARCHITECTURES including 90)";
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  int major = 0, minor = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (major != 9 || minor != 0)
    return "variant 10 (wgmma, sm_90a) runs on compute capability 9.0 only; this device is " +
           std::to_string(major) + "." + std::to_string(minor);
  return "";
}

WgmmaConvMaps make_wgmma_conv_maps(const Im2colGeometry& r, MmaType type, const WgmmaConvPlan& plan,
                                   const void* src, const void* wei) {
  static const auto encode_im2col =
      bench::driver_entry<PFN_cuTensorMapEncodeIm2col_v12000>("cuTensorMapEncodeIm2col");
  static const auto encode_tiled =
      bench::driver_entry<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled");
  const cuuint64_t es = cuuint64_t(mma_type_bytes(type));
  WgmmaConvMaps maps{};
  {
    const cuuint64_t dims[4] = {cuuint64_t(r.c), cuuint64_t(r.w), cuuint64_t(r.h), cuuint64_t(r.n)};
    const cuuint64_t strides[3] = {r.c * es, cuuint64_t(r.w) * r.c * es,
                                   cuuint64_t(r.h) * r.w * r.c * es};
    // The windows' origins range over [-pad, size - 1 + pad - (k - 1) * dilation] (W, then H).
    const int lower[2] = {-r.pw, -r.ph};
    const int upper[2] = {r.pw - (r.kw - 1) * r.dw, r.ph - (r.kh - 1) * r.dh};
    const cuuint32_t element_strides[4] = {1, cuuint32_t(r.sw), cuuint32_t(r.sh), 1};
    bench::check_encode(
        encode_im2col(&maps.src, map_type(type), 4, const_cast<void*>(src), dims, strides, lower,
                      upper, cuuint32_t(plan.bk), cuuint32_t(kWgmmaBm), element_strides,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "cuTensorMapEncodeIm2col");
  }
  {
    // [OC][KH*KW][C]: a box is one tap's bk channels of BN output channels, zero past C and OC.
    // With whole slices the kernel ran at 0.93-1.01x the speed it had with the 2-D [OC][K]
    // copy this replaced (74 ResNet-50 and VGG-16 cases, H200, 5166c28 against ff8df5b in
    // separate runs); whether a 2-D copy for whole slices wins that back is unmeasured.
    const cuuint64_t taps = cuuint64_t(r.kh) * r.kw;
    const cuuint64_t dims[3] = {cuuint64_t(r.icg), taps, cuuint64_t(r.oc)};
    const cuuint64_t strides[2] = {cuuint64_t(r.icg) * es, cuuint64_t(r.k) * es};
    const cuuint32_t box[3] = {cuuint32_t(plan.bk), 1, cuuint32_t(plan.bn)};
    const cuuint32_t element_strides[3] = {1, 1, 1};
    bench::check_encode(
        encode_tiled(&maps.wei, map_type(type), 3, const_cast<void*>(wei), dims, strides, box,
                     element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                     CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        "cuTensorMapEncodeTiled");
  }
  return maps;
}

std::size_t wgmma_conv_partial_elements(const Im2colGeometry& g, const WgmmaConvPlan& plan) {
  return plan.splits > 1 ? std::size_t(plan.splits) * std::size_t(g.m) * std::size_t(g.oc) : 0;
}

void launch_wgmma_conv(const Im2colGeometry& g, MmaType type, const WgmmaConvPlan& plan,
                       const WgmmaConvMaps& maps, bool round_tf32, void* dst, float* partial,
                       cudaStream_t stream) {
  switch (type) {
    case MmaType::tf32:
      return launch_bn<MmaType::tf32>(g, plan, maps, round_tf32, dst, partial, stream);
    case MmaType::fp16:
      return launch_bn<MmaType::fp16>(g, plan, maps, false, dst, partial, stream);
    case MmaType::bf16:
      return launch_bn<MmaType::bf16>(g, plan, maps, false, dst, partial, stream);
  }
}

std::string wgmma_conv_kernel_resources(MmaType type, const WgmmaConvPlan& plan) {
  const void* k = nullptr;
  const bool wide = plan.bn == 128;
  switch (type) {
    case MmaType::tf32:
      k = wide ? kernel_of<MmaType::tf32, 128>() : kernel_of<MmaType::tf32, 64>();
      break;
    case MmaType::fp16:
      k = wide ? kernel_of<MmaType::fp16, 128>() : kernel_of<MmaType::fp16, 64>();
      break;
    case MmaType::bf16:
      k = wide ? kernel_of<MmaType::bf16, 128>() : kernel_of<MmaType::bf16, 64>();
      break;
  }
  cudaFuncAttributes attr{};
  CUDA_CHECK(cudaFuncGetAttributes(&attr, k));
  return std::to_string(attr.numRegs) + " registers, " + std::to_string(attr.localSizeBytes) +
         " B local, " + std::to_string(plan.smem_bytes) + " B dynamic shared";
}

}  // namespace conv
