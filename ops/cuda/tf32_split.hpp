// 3xTF32's operand split (ops/cuda/matmul_3xtf32.cu, CUTLASS's "3xTF32":
// cutlass/gemm/warp/mma_tensor_op_fast_f32.h): x = big + small + r with big = tf32(x) and small
// = tf32(x - big), both exact tf32 values (10 mantissa bits), |r| <= 2^-22 |x| or so; then
// A B ~ A_big B_big + A_big B_small + A_small B_big, three tf32 products whose FP32 sum keeps
// about FP32's accuracy (the dropped A_small B_small and the r terms are ~2^-22 relative), where
// one tf32 product (1xTF32) errs by ~2^-11. Host and device code, so that the CPU tests
// (tests/ops/test_tf32_split.cpp) check the device's arithmetic itself.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/cuda/mma_index.hpp"  // BENCH_HD

namespace ops::cuda {

// FP32 bits rounded to tf32 as cvt.rna.tf32.f32 rounds: to nearest on 10 mantissa bits, ties
// away from zero (adding half of the kept last bit to the magnitude carries into the exponent
// where it must), the low 13 bits cleared; infinities and NaN as they are.
BENCH_HD std::uint32_t tf32_rna_bits(std::uint32_t bits) {
  if ((bits & 0x7F800000u) == 0x7F800000u) return bits;
  return (bits + 0x1000u) & 0xFFFFE000u;
}

BENCH_HD float tf32_rna(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  u = tf32_rna_bits(u);
  float r;
  std::memcpy(&r, &u, sizeof r);
  return r;
}

struct Tf32Pair {
  float big, small;
};

// x - big is exact in FP32 (the two are within a factor of 2 of each other).
BENCH_HD Tf32Pair tf32_split(float x) {
  const float big = tf32_rna(x);
  return {big, tf32_rna(x - big)};
}

// The split operands of a GEMM of depth k: k' = 3 kp, kp = k rounded up to a multiple of 8 (the
// Hopper engine's 16-byte rows; the padding is zeros), three thirds along k: A' = [A_big | A_big
// | A_small], B' = [B_big | B_small | B_big], so that A' B' (one accumulator) is the 3-term sum.
BENCH_HD std::int64_t tf32x3_padded_k(std::int64_t k) {
  return (k + 7) / 8 * 8;
}
BENCH_HD float tf32x3_a_term(const Tf32Pair& x, int third) {
  return third == 2 ? x.small : x.big;
}
BENCH_HD float tf32x3_b_term(const Tf32Pair& x, int third) {
  return third == 1 ? x.small : x.big;
}

}  // namespace ops::cuda
