// Launchers of our im2col + GEMM convolution kernels: FP32 on CUDA cores
// (conv/cuda/im2col_gemm_kernels.cu, variants 1-3) and TF32/FP16/BF16 on tensor cores
// (conv/cuda/im2col_gemm_mma.cu and im2col_gemm_mma_pipelined.cu, variants 4-6).
// Every launcher only enqueues on `stream` and checks the launch (CUDA_CHECK_LAST_LAUNCH).
// Tensors are device pointers in the problem's layout (see conv/im2col_index.hpp for the GEMM
// view: per group, out[oc][m] = sum_k wei[oc][k] * col[k][m]).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include "conv/cuda/mma_index.hpp"
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
// Split-K of the FP32 GEMM (variants 1-3): where the grid has fewer blocks than 1.4 per SM
// (mma_unsplit_blocks), enough splits to reach two per SM, each at least 16 slices (128 k) long
// (choose_split_k). With
// splits > 1 the launchers below write FP32 partials (splits * M * OC floats) to `partial`, and
// launch_fp32_split_reduce sums them, in split order (deterministic), into dst.
int choose_fp32_splits(const Im2colGeometry& g, GemmTile tile, int sm_count);
void launch_fp32_split_reduce(const Im2colGeometry& g, int splits, const float* partial, float* dst,
                              cudaStream_t stream);

// Variant 1, step 2: the tiled SGEMM of each group, reading the column matrices.
void launch_gemm_from_columns(const Im2colGeometry& g, GemmTile tile, const float* wei,
                              const float* col, float* dst, cudaStream_t stream, int splits = 1,
                              float* partial = nullptr);

// Variant 2: implicit GEMM, the im2col gather done in the GEMM's shared-memory load stage; row
// offsets computed from k on the fly.
void launch_implicit_gemm(const Im2colGeometry& g, GemmTile tile, const float* src,
                          const float* wei, float* dst, cudaStream_t stream, int splits = 1,
                          float* partial = nullptr);

// Variant 3: variant 2 with the row offsets of all k read from a table built once
// (im2col_row_table), as cuDNN's IMPLICIT_PRECOMP_GEMM does.
std::vector<Im2colRow> im2col_row_table(const Im2colGeometry& g);
void launch_implicit_gemm_precomp(const Im2colGeometry& g, GemmTile tile, const float* src,
                                  const float* wei, const Im2colRow* rows, float* dst,
                                  cudaStream_t stream, int splits = 1, float* partial = nullptr);

// ---- Tensor cores (variants 4-6; conv/cuda/im2col_gemm_mma.cu, im2col_gemm_mma_pipelined.cu) ----
// Operand storage and MMA: tf32 = fp32 storage, operands rounded to tf32 (mma m16n8k8); fp16 and
// bf16 = 16-bit storage (mma m16n8k16). FP32 accumulation; the output has the storage type.
// Tensors are device pointers to values of that type, in the problem's layout.
enum class MmaType { tf32, fp16, bf16 };
int mma_type_bytes(MmaType type);                // 4 or 2
std::string mma_instruction_name(MmaType type);  // e.g. "mma.sync m16n8k16 bf16"
// Empty when the tensor-core kernels can run on the current device, else why not (compute
// capability below 8.0, or kernels built without sm_80/sm_90 code). Throws on CUDA errors.
std::string mma_kernels_unusable_reason();

// Variant 4: implicit GEMM on tensor cores, rows from a table of K entries built once. The
// cp.async pipelined kernel where every gather is a 16-byte run (mma_pipelined_gather: nhwc with
// IC/G a multiple of the vector), the register-staged element gather otherwise.
std::vector<Im2colRow16> im2col_row16_table(const Im2colGeometry& g);
// Split-K (plan.splits > 1) only in the pipelined kernel: it writes FP32 partials to `partial`
// (mma_partial_elements floats) and launch_mma_split_reduce then sums them, in split order, into
// dst; partial may be null where plan.splits == 1. Throws std::logic_error for a plan the kernel
// cannot run.
bool mma_pipelined_gather(const Im2colGeometry& g, MmaType type);
void launch_mma_implicit_gemm(const Im2colGeometry& g, MmaType type, const MmaPlan& plan,
                              const void* src, const void* wei, const Im2colRow16* rows, void* dst,
                              float* partial, cudaStream_t stream);
std::size_t mma_partial_elements(const Im2colGeometry& g, const MmaPlan& plan);
void launch_mma_split_reduce(const Im2colGeometry& g, MmaType type, const MmaPlan& plan,
                             const float* partial, void* dst, cudaStream_t stream);

// Variant 5, step 1: the column buffer in the storage type, col[group][m][k], K padded to whole
// 16-byte vectors (mma_padded_k) with zeros.
std::size_t mma_column_buffer_elements(const Im2colGeometry& g, MmaType type);
void launch_mma_im2col(const Im2colGeometry& g, MmaType type, const void* src, void* col,
                       cudaStream_t stream);
// Variant 5, step 2: the tensor-core GEMM reading the column buffer; pipelined where the weights'
// rows are whole vectors (mma_pipelined_columns: K a multiple of the vector).
bool mma_pipelined_columns(const Im2colGeometry& g, MmaType type);
void launch_mma_gemm_from_columns(const Im2colGeometry& g, MmaType type, const MmaPlan& plan,
                                  const void* wei, const void* col, void* dst, float* partial,
                                  cudaStream_t stream);

// Variant 6, step 1 (where mma_needs_repack: all but nhwc with IC/G a multiple of the vector):
// the input to nhwc and the weights to [OC][KH][KW][Cp], each group's channels padded with zeros
// to Cp, a whole number of vectors (mma_repacked_geometry in conv/cuda/mma_index.hpp).
bool mma_needs_repack(const Im2colGeometry& g, MmaType type);
std::size_t mma_repacked_src_elements(const Im2colGeometry& g, MmaType type);
std::size_t mma_repacked_wei_elements(const Im2colGeometry& g, MmaType type);
void launch_mma_repack(const Im2colGeometry& g, MmaType type, const void* src, const void* wei,
                       void* src_repacked, void* wei_repacked, cudaStream_t stream);
// Variant 6, step 2: the pipelined implicit GEMM on the repacked tensors (or on src and wei
// themselves where no repack is needed), writing dst in g's layout. rows: the table of the
// repacked geometry, im2col_row16_table(mma_repacked_geometry(g, mma_type_bytes(type))).
void launch_mma_repacked_implicit_gemm(const Im2colGeometry& g, MmaType type, const MmaPlan& plan,
                                       const void* src, const void* wei, const Im2colRow16* rows,
                                       void* dst, float* partial, cudaStream_t stream);

// "nvcc 13.0, CUDA architectures 750 800 900": what the kernels were built with.
std::string im2col_gemm_build_info();

}  // namespace conv
