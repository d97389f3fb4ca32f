// The GEMM engine's checks that need no kernel (gemm.hpp): whether the device and the build can
// run the wgmma kernels, which epilogues the build holds for each layout, type and schedule, and
// the buffers an epilogue needs. Host code only; the launchers (gemm_sm90.cu, gemm_small.cu)
// call them before anything is enqueued.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/cuda/gemm/gemm.hpp"

#ifndef MYCONV_GEMM_SM90A
#define MYCONV_GEMM_SM90A 0
#endif

namespace bench::gemm {
namespace {

bool aligned16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

}  // namespace

void check_epilogue_buffers(const void* a, const void* b, const void* c, const Epilogue& epilogue) {
  const EpilogueKind e = epilogue.kind;
  const bool needs_bias = e == EpilogueKind::bias || e == EpilogueKind::bias_gelu_erf ||
                          e == EpilogueKind::bias_gelu_tanh || e == EpilogueKind::bias_gelu_erf_aux;
  const bool needs_aux = e == EpilogueKind::bias_gelu_erf_aux || e == EpilogueKind::dgelu_erf;
  const auto misaligned = [](const void* p, std::uintptr_t to) {
    return reinterpret_cast<std::uintptr_t>(p) % to != 0;
  };
  if (!aligned16(a) || !aligned16(b) || !aligned16(c) ||
      (needs_bias && (epilogue.bias == nullptr || !aligned16(epilogue.bias))) ||
      (e == EpilogueKind::residual &&
       (epilogue.residual == nullptr || !aligned16(epilogue.residual))) ||
      (needs_aux && (epilogue.aux == nullptr || !aligned16(epilogue.aux))) ||
      (e == EpilogueKind::dgelu_erf &&
       (misaligned(epilogue.aux_t, 2) || misaligned(epilogue.column_sums, 4))))
    throw std::invalid_argument("gemm: tensors must be present and 16-byte aligned");
}

std::string gemm_epilogue_unsupported_reason(MmaDtype type, bool b_k_major, GemmSchedule schedule,
                                             EpilogueKind e) {
  if (e == EpilogueKind::identity) return "";
  if (type == MmaDtype::tf32) return "tf32 takes the identity epilogue only";
  const bool mlp = type == MmaDtype::bf16 && schedule == GemmSchedule::cooperative;
  if (e == EpilogueKind::dgelu_erf) {
    if (!mlp || b_k_major)
      return "the dgelu epilogue is built for bf16, B MN-major and the cooperative schedule only";
    return "";
  }
  if (b_k_major && !mlp)
    return "a K-major B takes the identity epilogue, or in bf16 with the cooperative schedule the "
           "bias, GELU and residual ones";
  return "";
}

std::string gemm_sm90_unusable_reason() {
  static const std::string reason = []() -> std::string {
    if (!MYCONV_GEMM_SM90A)
      return "the wgmma GEMM needs a build for sm_90a (CMAKE_CUDA_ARCHITECTURES including 90)";
    int device = 0, major = 0, minor = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
      cudaGetLastError();  // clear the error the query left
      return "no CUDA device to ask for its compute capability";
    }
    if (major != 9 || minor != 0)
      return "the wgmma GEMM (sm_90a) runs on compute capability 9.0 only; this device is " +
             std::to_string(major) + "." + std::to_string(minor);
    return "";
  }();
  return reason;
}

}  // namespace bench::gemm
