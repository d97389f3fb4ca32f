// PTX wrappers of sm_90's mbarriers and the copy engine's bulk copies (no tensor map), shared by
// the kernels that wait on them: conv's variant 10 and the GEMM engine through
// core/cuda/hopper_ptx.cuh (sm_90a), own_cuda's persistent decode step
// (models/transformer/cuda/own_step_kernel.cu):
//   - mbarriers (init, arrive, arrive with an expected transaction count, parity wait, its
//     non-blocking test) and the fences that publish their initialization to the copy engine;
//   - a bulk copy of contiguous bytes global -> shared that completes on an mbarrier.
// sm_90 and later: include it where __CUDA_ARCH__ >= 900 is compiled.
#pragma once

#include <cstdint>

namespace bench::sm90 {

__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarriers ----------------------------------------------------------------------------------

__device__ __forceinline__ void mbar_init(std::uint64_t* bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count));
}
// After the initializations, before any other thread or the copy engine uses the barriers (then
// a __syncthreads()).
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// Orders this thread's earlier shared-memory writes (generic proxy) before later reads of the
// async proxy (wgmma's shared-memory operands, the copy engine): after writing an operand tile in
// place, before the barrier that lets the warps' MMAs read it.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
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
// Whether the barrier's phase of this parity has completed (no wait).
__device__ __forceinline__ bool mbar_test(std::uint64_t* bar, std::uint32_t parity) {
  std::uint32_t done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(smem_u32(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

// ---- Bulk copies
// ---------------------------------------------------------------------------------- bytes (a
// multiple of 16) from src (16-byte aligned) to dst (16-byte aligned shared memory), on the copy
// engine; they count towards bar's transaction bytes (mbar_expect_tx before).
__device__ __forceinline__ void bulk_copy_g2s(void* dst, const void* src, std::uint32_t bytes,
                                              std::uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(smem_u32(dst)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
}

}  // namespace bench::sm90
