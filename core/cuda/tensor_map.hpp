// The copy engine's tensor maps (TMA descriptors), encoded through the CUDA driver's entry points
// as the runtime hands them out (cudaGetDriverEntryPointByVersion), so that no program links
// libcuda itself. Users: conv's variant 10 (conv/cuda/wgmma_conv.cu) and the GEMM engine
// (core/cuda/gemm/gemm_sm90.cu).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncode*
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "core/cuda/cuda_check.hpp"

namespace bench {

// The driver function `symbol` in its CUDA 12.0 form; throws where the driver has none.
template <class Fn>
Fn driver_entry(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status{};
  CUDA_CHECK(cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &status));
  if (status != cudaDriverEntryPointSuccess || fn == nullptr)
    throw std::runtime_error(std::string("the CUDA driver has no ") + symbol);
  return reinterpret_cast<Fn>(fn);
}

// Throws std::runtime_error naming `what` where an encoder failed.
inline void check_encode(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed (CUresult " + std::to_string(int(r)) +
                             ")");
}

}  // namespace bench
