// The share of one block of our tiled, split-K GEMM grids (the op suite's matmul variants 2-3 in
// ops/cuda/matmul.cu, the engine's SGEMMs in core/cuda/gemm/sgemm.cu): grid x = output tile in
// grouped order, y = split, z = batch; and the FP32 kernels' store of four output columns.
#pragma once

#include <cstdint>

#include "core/cuda/mma.cuh"

namespace bench::gemm {

// The output tile of block x (first row m0, first column n0) and its split's k slices
// [first, first + slices) of the ceil(k / bk) slices of K.
struct MatmulBlockWork {
  int m0, n0, first, slices;
};

// Block x of a tiles_m x tiles_n grid of bm x bn tiles (bench::grouped_tile_coords<8> order),
// split `split` of `splits` (bench::mma_split_begin).
__device__ __forceinline__ MatmulBlockWork matmul_block_work(int x, int tiles_m, int tiles_n,
                                                             int bm, int bn, int k, int bk,
                                                             int split, int splits) {
  int tm, tn;
  bench::grouped_tile_coords<8>(x, tiles_m, tiles_n, tm, tn);
  const int all_slices = (k + bk - 1) / bk;
  const int first = bench::mma_split_begin(all_slices, splits, split);
  return {tm * bm, tn * bn, first, bench::mma_split_begin(all_slices, splits, split + 1) - first};
}

// Outputs v[0..3] of columns col..col + 3 of a row-major row with n columns, the first at o: one
// float4 store where vec (n % 4 == 0: o 16-byte aligned) and col < n, else those inside n one by
// one.
__device__ __forceinline__ void store_four_columns(float* o, int col, int n, bool vec,
                                                   const float* v) {
  if (vec && col < n) {
    *reinterpret_cast<float4*>(o) = make_float4(v[0], v[1], v[2], v[3]);
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (col + e < n) o[e] = v[e];
  }
}

// The block's share of an FP32 grid over contiguous batches of row-major a (m x k), b (k x n) and
// c (m x n): moves a, b and c to batch blockIdx.z's matrices and c on to split blockIdx.y's
// partial (split_stride floats apart); its tile and k slices as matmul_block_work (BM x BN x BK
// tiles).
template <int BM, int BN, int BK, class APtr, class BPtr, class CPtr>
__device__ __forceinline__ MatmulBlockWork fp32_matmul_block(APtr& a, BPtr& b, CPtr& c, int m,
                                                             int n, int k, int tiles_m, int tiles_n,
                                                             std::int64_t split_stride) {
  const int split = blockIdx.y;
  const std::int64_t batch = blockIdx.z;
  a += batch * m * k;
  b += batch * k * n;
  c += split * split_stride + batch * m * n;
  return matmul_block_work(blockIdx.x, tiles_m, tiles_n, BM, BN, k, BK, split, gridDim.y);
}

}  // namespace bench::gemm
