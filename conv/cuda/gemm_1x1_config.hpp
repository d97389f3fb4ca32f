// Variant 11 of im2col_gemm_cuda: a 1x1 convolution (stride 1, no padding, one group) as one call
// of the Hopper GEMM engine (core/cuda/gemm/), fp16 and bf16, no repack, no column buffer:
//   nchw: Y[n][OC][H*W] = W[OC][IC] X[n][IC][H*W], a batch of N GEMMs m = OC, n = H*W, k = IC:
//         A the weights, one matrix every image reads (GemmShape::a_shared), B the image;
//   nhwc: Y[N*H*W][OC] = X[N*H*W][IC] W[OC][IC]^T, one GEMM m = N*H*W, n = OC, k = IC: A the
//         input, B the weights read K-major ([n][k] storage: GemmShape::b_k_major).
// The engine's own rule (gemm_auto_plan) chooses tile, schedule and split-K. Host-only, no CUDA
// dependency, so that the variant choice (conv/cuda/variant_choice.cpp) asks it and
// tests/conv/test_variant_choice.cpp checks it on the CPU.
#pragma once

#include <string>

#include "conv/problem.hpp"
#include "core/cuda/gemm/gemm_config.hpp"
#include "core/dtype.hpp"

namespace conv {

// The engine's GEMM of p (meaningful where gemm_1x1_unsupported_reason(p) is empty).
inline bench::gemm::GemmShape gemm_1x1_shape(const Problem& p) {
  bench::gemm::GemmShape s;
  if (p.layout == Layout::nchw) {
    s.batch = p.mb;
    s.m = p.oc;
    s.n = p.ih * p.iw;
    s.a_shared = true;
  } else {
    s.m = p.mb * p.ih * p.iw;
    s.n = p.oc;
    s.b_k_major = true;
  }
  s.k = p.ic;
  return s;
}

// Empty where variant 11 computes p (on a device where the engine runs: that is the caller's
// question), else why not. Never throws.
inline std::string gemm_1x1_unsupported_reason(const Problem& p) {
  if (p.dtype != DataType::fp16 && p.dtype != DataType::bf16)
    return "fp16 and bf16 only (tf32 1x1 layers stay with variant 10, which rounds its operands)";
  if (p.is_3d() || p.kh != 1 || p.kw != 1 || p.g != 1) return "a 2D 1x1 filter with one group only";
  if (p.sh != 1 || p.sw != 1 || p.ph != 0 || p.pw != 0 || p.oh() != p.ih || p.ow() != p.iw)
    return "stride 1 and no padding only (the input is the GEMM's operand as it lies)";
  const std::string why = bench::gemm::gemm_unsupported_reason(gemm_1x1_shape(p), 2);
  if (why.empty()) return "";
  return (p.layout == Layout::nchw ? "nchw as a GEMM m = OC, n = H*W, k = IC: "
                                   : "nhwc as a GEMM m = N*H*W, n = OC, k = IC: ") +
         why;
}

}  // namespace conv
