// Move-only owners of cuBLASLt objects (handle, matmul descriptor, matrix layout, preference),
// released by their Destroy function with the non-throwing check, and cuBLASLt's version as text.
// Shared by every suite's cuBLASLt code (baselines/ops/cublaslt.cpp, baselines/mlp/).
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <string>
#include <utility>

#include "core/cuda/cublas_check.hpp"

namespace bench {

// Move-only owner of one cuBLASLt object, released by Destroy (never throws).
template <typename H, cublasStatus_t (*Destroy)(H)>
class LtOwner {
 public:
  LtOwner() = default;
  explicit LtOwner(H h) : h_(h) {}
  ~LtOwner() {
    if (h_) CUBLAS_CHECK_NOTHROW(Destroy(h_));
  }
  LtOwner(LtOwner&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  LtOwner& operator=(LtOwner&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  LtOwner(const LtOwner&) = delete;
  LtOwner& operator=(const LtOwner&) = delete;
  H get() const { return h_; }

 private:
  H h_ = nullptr;
};

using LtHandle = LtOwner<cublasLtHandle_t, &cublasLtDestroy>;
using LtMatmulDesc = LtOwner<cublasLtMatmulDesc_t, &cublasLtMatmulDescDestroy>;
using LtMatrixLayout = LtOwner<cublasLtMatrixLayout_t, &cublasLtMatrixLayoutDestroy>;
using LtPreference = LtOwner<cublasLtMatmulPreference_t, &cublasLtMatmulPreferenceDestroy>;

inline LtHandle make_lt_handle() {
  cublasLtHandle_t h = nullptr;
  CUBLAS_CHECK(cublasLtCreate(&h));
  return LtHandle(h);
}

// "13.1.0" from cuBLASLt's version number (major * 10000 + minor * 100 + patch).
inline std::string cublaslt_version() {
  const std::size_t v = cublasLtGetVersion();
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

}  // namespace bench
