// Variant 10 of im2col_gemm_cuda: implicit-GEMM convolution on Hopper's warpgroup tensor cores
// (wgmma, sm_90a) fed by the copy engine (TMA), for tf32, fp16 and bf16 with FP32 accumulation.
// The plan (tile, stages, split-K) and the problems it takes are in wgmma_conv_config.hpp; the
// mma.sync variants 4-6 (im2col_gemm_mma.cu) stay for sm_80/86/89 and for what this one does not
// take (groups, channel counts that are not whole 128-byte slices, e.g. ResNet's conv1).
//
// Build: this file is compiled for sm_90a only (conv/CMakeLists.txt: its own target with
// CUDA_ARCHITECTURES 90a where the build includes 90); elsewhere its kernels are empty and
// wgmma_conv_unusable_reason() says why. Registers and spills:
//   nvcc -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I. -Xptxas -v -c conv/cuda/wgmma_conv.cu -o /dev/null
// Run (on an H100/H200):
//   build/experiments/myconv --backend im2col_gemm_cuda --variant 10 --dtype fp16 ...
//   build/tests/test_im2col_gemm_cuda --gtest_filter='*Wgmma*'
//
// The GEMM: out[m][oc] = sum_k src_im2col[m][k] * wei[oc][k], M = N*OH*OW output pixels, k =
// (r, s, c) over the nhwc input (the problem's own, or variant 6's repack of an nchw input). One
// thread block per 128-pixel x BN-channel output tile (BN 64 or 128), 384 threads in three
// warpgroups, one block per SM:
//   - warpgroup 0, the producer: one thread issues, per 128-byte k slice (one filter tap, 64 fp16
//     or 32 tf32 channels), two tensor copies into a shared-memory stage: the pixels' slice in
//     im2col mode (the copy engine walks the 128 output pixels' windows across rows and images,
//     applies the stride, adds the tap offset and zero-fills the padding) and the weights' slice
//     in tiled mode. Both land 128-byte swizzled, the layout wgmma reads without bank conflicts.
//     A stage's full barrier (mbarrier) completes when its bytes have landed; the producer waits
//     on the stage's empty barrier before reusing it. Its registers are cut to 40 (setmaxnreg).
//   - warpgroups 1 and 2, the consumers (232 registers each): each multiplies its 64 pixels of
//     the stage by the BN channels with four wgmma m64nBNk16 (k8 for tf32) from shared-memory
//     descriptors, waits for them, and releases the stage.
//   - epilogue: the accumulators go through shared memory (the idle stages) into output order
//     and out in the storage type (nhwc: 4 channels per store; nchw: pixel-contiguous stores),
//     or as FP32 partials when split-K is on, summed in split order by a second kernel.
// tf32: the tensor cores read the FP32 values' top 19 bits (truncation, not rounding).
//
// Measured on an NVIDIA H200: see results/h200/ (the session README that introduced this file).
#include "conv/cuda/wgmma_conv.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncode*

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>

#include "core/cuda/cuda_check.hpp"

#ifndef MYCONV_WGMMA_SM90A
#define MYCONV_WGMMA_SM90A 0
#endif

namespace conv {
namespace {

struct WgmmaConvArgs {
  int m = 0, oc = 0;  // GEMM M (output pixels) and N (output channels)
  int ohw = 0, ow = 0;
  int sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, kw = 1;
  int cblocks = 0;  // k slices per tap: C / bk
  int slices = 0;
  int splits = 1;
  int nhwc_out = 0;
};

template <MmaType T>
constexpr int kElementBytes = T == MmaType::tf32 ? 4 : 2;

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MYCONV_WGMMA_DEVICE 1
#else
#define MYCONV_WGMMA_DEVICE 0
#endif

#if MYCONV_WGMMA_DEVICE
// ---- PTX wrappers: mbarrier, tensor copies, wgmma ----------------------------------------------

__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(std::uint64_t* bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, std::uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n"
      "}\n" ::"r"(smem_u32(bar)),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void tma_load_tile_2d(void* dst, const CUtensorMap* map,
                                                 std::uint64_t* bar, int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(smem_u32(bar)), "r"(x), "r"(y)
      : "memory");
}
__device__ __forceinline__ void tma_load_im2col_4d(void* dst, const CUtensorMap* map,
                                                   std::uint64_t* bar, int c, int w, int h, int n,
                                                   std::uint16_t off_w, std::uint16_t off_h) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2], {%7, %8};" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(smem_u32(bar)), "r"(c), "r"(w), "r"(h),
      "r"(n), "h"(off_w), "h"(off_h)
      : "memory");
}
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_wait_all() {
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}
// The shared-memory matrix descriptor of a K-major operand tile with 128-byte swizzle: rows of
// 128 bytes, 8-row groups 1024 bytes apart; advancing along k within the row adds bytes to the
// start address (the swizzle is applied on the absolute address, so the tile is 1024-aligned).
__device__ __forceinline__ std::uint64_t sw128_desc(std::uint32_t addr) {
  return std::uint64_t((addr & 0x3FFFF) >> 4) | (std::uint64_t(1) << 16) |
         (std::uint64_t(1024 >> 4) << 32) | (std::uint64_t(1) << 62);
}
__device__ __forceinline__ void consumers_sync() {  // the 256 consumer threads only
  asm volatile("bar.sync 1, 256;" ::: "memory");
}

__device__ __forceinline__ void wgmma_m64n64k16_f16(float* d, std::uint64_t desc_a,
                                                          std::uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n64k16_bf16(float* d, std::uint64_t desc_a,
                                                          std::uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n64k8_tf32(float* d, std::uint64_t desc_a,
                                                          std::uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n128k16_f16(float* d, std::uint64_t desc_a,
                                                          std::uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n128k16_bf16(float* d, std::uint64_t desc_a,
                                                          std::uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64n128k8_tf32(float* d, std::uint64_t desc_a,
                                                          std::uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// One k16 (k8 for tf32) step of a 64 x BN tile: 32 bytes of k in each operand.
template <MmaType T, int BN>
__device__ __forceinline__ void wgmma_step(float* d, std::uint64_t da, std::uint64_t db, int scale) {
  if constexpr (BN == 128) {
    if constexpr (T == MmaType::fp16) wgmma_m64n128k16_f16(d, da, db, scale);
    else if constexpr (T == MmaType::bf16) wgmma_m64n128k16_bf16(d, da, db, scale);
    else wgmma_m64n128k8_tf32(d, da, db, scale);
  } else {
    if constexpr (T == MmaType::fp16) wgmma_m64n64k16_f16(d, da, db, scale);
    else if constexpr (T == MmaType::bf16) wgmma_m64n64k16_bf16(d, da, db, scale);
    else wgmma_m64n64k8_tf32(d, da, db, scale);
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
template <MmaType T>
__device__ __forceinline__ void store_4(void* base, std::int64_t i, float4 v) {
  if constexpr (T == MmaType::fp16) {
    __half2 lo = __floats2half2_rn(v.x, v.y), hi = __floats2half2_rn(v.z, v.w);
    uint2 u;
    u.x = *reinterpret_cast<unsigned*>(&lo);
    u.y = *reinterpret_cast<unsigned*>(&hi);
    *reinterpret_cast<uint2*>(static_cast<__half*>(base) + i) = u;
  } else if constexpr (T == MmaType::bf16) {
    __nv_bfloat162 lo = __floats2bfloat162_rn(v.x, v.y), hi = __floats2bfloat162_rn(v.z, v.w);
    uint2 u;
    u.x = *reinterpret_cast<unsigned*>(&lo);
    u.y = *reinterpret_cast<unsigned*>(&hi);
    *reinterpret_cast<uint2*>(static_cast<__nv_bfloat16*>(base) + i) = u;
  } else {
    *reinterpret_cast<float4*>(static_cast<float*>(base) + i) = v;
  }
}
#endif  // MYCONV_WGMMA_DEVICE

template <int BN>
constexpr int kStages = int((192 * 1024) / ((kWgmmaBm + BN) * kWgmmaSliceBytes));

template <MmaType T, int BN>
__global__ void __launch_bounds__(kWgmmaThreads, 1)
    wgmma_conv_kernel(const __grid_constant__ CUtensorMap map_src,
                      const __grid_constant__ CUtensorMap map_wei, const WgmmaConvArgs a,
                      void* __restrict__ dst, float* __restrict__ partial) {
#if MYCONV_WGMMA_DEVICE
  constexpr int kStagesT = kStages<BN>;
  constexpr int kBk = kWgmmaSliceBytes / kElementBytes<T>;
  constexpr int kABytes = kWgmmaBm * kWgmmaSliceBytes;
  constexpr int kStageBytes = (kWgmmaBm + BN) * kWgmmaSliceBytes;
  constexpr int kStagingBytes = kWgmmaBm * (BN + 4) * 4;
  constexpr int kBarrierOffset =
      kStagesT * kStageBytes > kStagingBytes ? kStagesT * kStageBytes : kStagingBytes;

  extern __shared__ unsigned char smem_raw[];
  // The swizzled tiles need 1024-byte alignment of their shared-memory address.
  unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(smem + kBarrierOffset);
  std::uint64_t* empty = full + kStagesT;

  const int warpgroup = threadIdx.x / 128;
  const int split = blockIdx.z;
  const int s_begin = int(std::int64_t(a.slices) * split / a.splits);
  const int s_count = int(std::int64_t(a.slices) * (split + 1) / a.splits) - s_begin;
  const int m0 = blockIdx.x * kWgmmaBm;
  const int oc0 = blockIdx.y * BN;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kStagesT; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 2);  // one arrival per consumer warpgroup
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();

  if (warpgroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (threadIdx.x == 0) {
      // The window origin of the tile's first pixel; the copy engine walks on from there.
      const int n0 = m0 / a.ohw;
      const int pix = m0 - n0 * a.ohw;
      const int oy = pix / a.ow, ox = pix - (pix / a.ow) * a.ow;
      const int h0 = oy * a.sh - a.ph, w0 = ox * a.sw - a.pw;
      for (int i = 0; i < s_count; ++i) {
        const int stage = i % kStagesT;
        if (i >= kStagesT) mbar_wait(&empty[stage], ((i / kStagesT) & 1) ^ 1);
        unsigned char* tile = smem + stage * kStageBytes;
        mbar_expect_tx(&full[stage], kStageBytes);
        const int slice = s_begin + i;
        const int tap = slice / a.cblocks;
        const int cb = slice - tap * a.cblocks;
        const int r = tap / a.kw, s = tap - (tap / a.kw) * a.kw;
        tma_load_im2col_4d(tile, &map_src, &full[stage], cb * kBk, w0, h0, n0,
                           std::uint16_t(s * a.dw), std::uint16_t(r * a.dh));
        tma_load_tile_2d(tile + kABytes, &map_wei, &full[stage], slice * kBk, oc0);
      }
    }
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
  const int half = warpgroup - 1;  // this warpgroup's 64 pixels of the tile
  float d[BN / 2];
#pragma unroll
  for (int j = 0; j < BN / 2; ++j) d[j] = 0.f;
  for (int i = 0; i < s_count; ++i) {
    const int stage = i % kStagesT;
    mbar_wait(&full[stage], (i / kStagesT) & 1);
    const std::uint32_t a_addr = smem_u32(smem + stage * kStageBytes + half * 64 * kWgmmaSliceBytes);
    const std::uint32_t b_addr = smem_u32(smem + stage * kStageBytes + kABytes);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      wgmma_step<T, BN>(d, sw128_desc(a_addr + kk * 32), sw128_desc(b_addr + kk * 32), 1);
    wgmma_commit();
    wgmma_wait_all();
    if (threadIdx.x % 128 == 0) mbar_arrive(&empty[stage]);
  }

  // Epilogue: every stage has landed and been read (each consumer waited on all of them), so the
  // stages hold the FP32 tile in output order.
  consumers_sync();
  float* staging = reinterpret_cast<float*>(smem);
  const int stride = a.nhwc_out ? BN + 4 : BN + 1;
  {
    const int t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    const int row = half * 64 + warp * 16 + lane / 4;
#pragma unroll
    for (int nb = 0; nb < BN / 8; ++nb) {
      const int col = nb * 8 + (lane % 4) * 2;
      staging[row * stride + col] = d[nb * 4 + 0];
      staging[row * stride + col + 1] = d[nb * 4 + 1];
      staging[(row + 8) * stride + col] = d[nb * 4 + 2];
      staging[(row + 8) * stride + col + 1] = d[nb * 4 + 3];
    }
  }
  consumers_sync();
  const int tid = threadIdx.x - 128;
  const std::int64_t plane = std::int64_t(a.m) * a.oc;
  if (a.nhwc_out) {
    const bool vec = a.oc % 4 == 0;
    for (int e = tid; e < kWgmmaBm * (BN / 4); e += 256) {
      const int row = e / (BN / 4), c4 = (e % (BN / 4)) * 4;
      const int m = m0 + row, oc = oc0 + c4;
      if (m >= a.m || oc >= a.oc) continue;
      const float* v = staging + row * stride + c4;
      const std::int64_t at = std::int64_t(m) * a.oc + oc;
      if (partial != nullptr) {
        float* out = partial + split * plane;
        for (int j = 0; j < 4 && oc + j < a.oc; ++j) out[at + j] = v[j];
      } else if (vec) {
        store_4<T>(dst, at, make_float4(v[0], v[1], v[2], v[3]));
      } else {
        for (int j = 0; j < 4 && oc + j < a.oc; ++j) store_value<T>(dst, at + j, v[j]);
      }
    }
  } else {
    for (int e = tid; e < kWgmmaBm * BN; e += 256) {
      const int col = e / kWgmmaBm, row = e % kWgmmaBm;
      const int m = m0 + row, oc = oc0 + col;
      if (m >= a.m || oc >= a.oc) continue;
      const int n = m / a.ohw;
      const std::int64_t at = (std::int64_t(n) * a.oc + oc) * a.ohw + (m - n * a.ohw);
      const float v = staging[row * stride + col];
      if (partial != nullptr)
        partial[split * plane + at] = v;
      else
        store_value<T>(dst, at, v);
    }
  }
#endif  // MYCONV_WGMMA_DEVICE
}

template <MmaType T>
__global__ void wgmma_split_reduce_kernel(const float* __restrict__ partial, int splits,
                                          std::int64_t plane, void* __restrict__ dst) {
#if MYCONV_WGMMA_DEVICE
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < plane;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    float sum = 0.f;
    for (int s = 0; s < splits; ++s) sum += partial[s * plane + i];
    store_value<T>(dst, i, sum);
  }
#endif
}

// ---- Host side ------------------------------------------------------------------------------

template <class Fn>
Fn driver_entry(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status{};
  CUDA_CHECK(cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &status));
  if (status != cudaDriverEntryPointSuccess || fn == nullptr)
    throw std::runtime_error(std::string("the CUDA driver has no ") + symbol);
  return reinterpret_cast<Fn>(fn);
}

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

void check_encode(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed (CUresult " + std::to_string(int(r)) +
                             ")");
}

template <MmaType T, int BN>
void launch_typed(const Im2colGeometry& g, const WgmmaConvPlan& plan, const WgmmaConvMaps& maps,
                  void* dst, float* partial, cudaStream_t stream) {
  if (plan.stages != kStages<BN>) throw std::logic_error("wgmma conv: plan's stages mismatch");
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
  a.nhwc_out = g.nhwc ? 1 : 0;
  const dim3 grid(unsigned(plan.m_tiles), unsigned(plan.n_tiles), unsigned(plan.splits));
  wgmma_conv_kernel<T, BN><<<grid, kWgmmaThreads, plan.smem_bytes, stream>>>(
      maps.src, maps.wei, a, dst, plan.splits > 1 ? partial : nullptr);
  CUDA_CHECK_LAST_LAUNCH();
  if (plan.splits > 1) {
    const std::int64_t plane = std::int64_t(g.m) * g.oc;
    const int blocks = int(std::min<std::int64_t>((plane + 255) / 256, 132 * 8));
    wgmma_split_reduce_kernel<T><<<blocks, 256, 0, stream>>>(partial, plan.splits, plane, dst);
    CUDA_CHECK_LAST_LAUNCH();
  }
}

template <MmaType T>
void launch_bn(const Im2colGeometry& g, const WgmmaConvPlan& plan, const WgmmaConvMaps& maps,
               void* dst, float* partial, cudaStream_t stream) {
  if (plan.bn == 128)
    launch_typed<T, 128>(g, plan, maps, dst, partial, stream);
  else if (plan.bn == 64)
    launch_typed<T, 64>(g, plan, maps, dst, partial, stream);
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
      driver_entry<PFN_cuTensorMapEncodeIm2col_v12000>("cuTensorMapEncodeIm2col");
  static const auto encode_tiled =
      driver_entry<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled");
  const cuuint64_t es = cuuint64_t(mma_type_bytes(type));
  WgmmaConvMaps maps{};
  {
    const cuuint64_t dims[4] = {cuuint64_t(r.c), cuuint64_t(r.w), cuuint64_t(r.h),
                                cuuint64_t(r.n)};
    const cuuint64_t strides[3] = {r.c * es, cuuint64_t(r.w) * r.c * es,
                                   cuuint64_t(r.h) * r.w * r.c * es};
    // The windows' origins range over [-pad, size - 1 + pad - (k - 1) * dilation] (W, then H).
    const int lower[2] = {-r.pw, -r.ph};
    const int upper[2] = {r.pw - (r.kw - 1) * r.dw, r.ph - (r.kh - 1) * r.dh};
    const cuuint32_t element_strides[4] = {1, cuuint32_t(r.sw), cuuint32_t(r.sh), 1};
    check_encode(encode_im2col(&maps.src, map_type(type), 4, const_cast<void*>(src), dims,
                               strides, lower, upper, cuuint32_t(plan.bk), cuuint32_t(kWgmmaBm),
                               element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                               CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                 "cuTensorMapEncodeIm2col");
  }
  {
    const cuuint64_t k = cuuint64_t(r.k);
    const cuuint64_t dims[2] = {k, cuuint64_t(r.oc)};
    const cuuint64_t strides[1] = {k * es};
    const cuuint32_t box[2] = {cuuint32_t(plan.bk), cuuint32_t(plan.bn)};
    const cuuint32_t element_strides[2] = {1, 1};
    check_encode(encode_tiled(&maps.wei, map_type(type), 2, const_cast<void*>(wei), dims, strides,
                              box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                              CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                 "cuTensorMapEncodeTiled");
  }
  return maps;
}

std::size_t wgmma_conv_partial_elements(const Im2colGeometry& g, const WgmmaConvPlan& plan) {
  return plan.splits > 1 ? std::size_t(plan.splits) * std::size_t(g.m) * std::size_t(g.oc) : 0;
}

void launch_wgmma_conv(const Im2colGeometry& g, MmaType type, const WgmmaConvPlan& plan,
                       const WgmmaConvMaps& maps, void* dst, float* partial, cudaStream_t stream) {
  switch (type) {
    case MmaType::tf32:
      return launch_bn<MmaType::tf32>(g, plan, maps, dst, partial, stream);
    case MmaType::fp16:
      return launch_bn<MmaType::fp16>(g, plan, maps, dst, partial, stream);
    case MmaType::bf16:
      return launch_bn<MmaType::bf16>(g, plan, maps, dst, partial, stream);
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
