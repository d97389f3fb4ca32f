// Launchers of our im2col + GEMM convolution kernels (conv/cuda/im2col_gemm_kernels.cu), FP32.
// Every launcher only enqueues on `stream` and checks the launch (CUDA_CHECK_LAST_LAUNCH).
// Tensors are device pointers in the problem's layout (see conv/im2col_index.hpp for the GEMM
// view: per group, out[oc][m] = sum_k wei[oc][k] * col[k][m]).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include "conv/im2col_index.hpp"

namespace conv {

// Thread-block tile of the GEMM: BM output channels x BN output pixels, BK-deep k slices, each
// thread computing TM x TN outputs in registers. Chosen by the channels per group, since a tile
// taller than OC/G computes zeros.
enum class GemmTile {
  t128x128,  // BM 128, BN 128, BK 8, 8x8 per thread, 256 threads: OC/G > 64
  t64x128,   // BM  64, BN 128, BK 8, 8x8 per thread, 128 threads: 32 < OC/G <= 64
  t32x128,   // BM  32, BN 128, BK 8, 4x8 per thread, 128 threads: OC/G <= 32
};
GemmTile choose_gemm_tile(const Im2colGeometry& g);
std::string gemm_tile_name(GemmTile tile);  // e.g. "128x128x8 tile, 8x8 per thread, 256 threads"

// Variant 1, step 1: writes the column matrices of all groups, col[group][k][m] (G*K*M floats).
std::size_t im2col_buffer_elements(const Im2colGeometry& g);
void launch_im2col(const Im2colGeometry& g, const float* src, float* col, cudaStream_t stream);
// Variant 1, step 2: the tiled SGEMM of each group, reading the column matrices.
void launch_gemm_from_columns(const Im2colGeometry& g, GemmTile tile, const float* wei,
                              const float* col, float* dst, cudaStream_t stream);

// Variant 2: implicit GEMM, the im2col gather done in the GEMM's shared-memory load stage; row
// offsets computed from k on the fly.
void launch_implicit_gemm(const Im2colGeometry& g, GemmTile tile, const float* src,
                          const float* wei, float* dst, cudaStream_t stream);

// Variant 3: variant 2 with the row offsets of all k read from a table built once
// (im2col_row_table), as cuDNN's IMPLICIT_PRECOMP_GEMM does.
std::vector<Im2colRow> im2col_row_table(const Im2colGeometry& g);
void launch_implicit_gemm_precomp(const Im2colGeometry& g, GemmTile tile, const float* src,
                                  const float* wei, const Im2colRow* rows, float* dst,
                                  cudaStream_t stream);

// "nvcc 13.0, CUDA architectures 750 800 900": what the kernels were built with.
std::string im2col_gemm_build_info();

}  // namespace conv
