// The Hopper GEMM engine the suites share (core/cuda/gemm/gemm_sm90.cu; its checks gemm_checks.cpp,
// its small-tile path gemm_small.cu): C[b][m][n] =
// epilogue(sum_k A[b][m][k] B[b][k][n]) on wgmma fed by TMA, fp16 or bf16 in and out, or tf32
// (FP32 in and out, B K-major, the identity epilogue; wgmma reads the top 19 bits of each FP32
// operand, so a caller that wants round-to-nearest rounds first), FP32 accumulation; A row-major
// [b][m][k] (or one [m][k] for every batch: GemmShape::a_shared), B row-major [b][k][n] (or K-major
// [b][n][k]: GemmShape::b_k_major), C row-major [b][m][n], all contiguous. Its plan (tile, stages,
// grid, what it takes) is core/cuda/gemm/gemm_config.hpp. The launcher only enqueues on `stream`
// and checks the launch (CUDA graphs can capture it).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/cuda/gemm/gemm_config.hpp"
#include "core/cuda/mma_index.hpp"  // MmaDtype

namespace bench::gemm {

// What is applied to each FP32 result before its conversion to the output type, per column j
// (bias: a vector of n values in the output type) and per element (residual, aux: tensors of C's
// shape and type, at the element's own index). The last two are an MLP layer's forward and
// backward (models/mlp/cuda/own_mlp.cpp), as cuBLASLt's GELU_AUX_BIAS and DGELU_BGRAD.
enum class EpilogueKind {
  identity,           // C = A B
  bias,               // C = A B + bias[j]
  bias_gelu_erf,      // C = gelu(A B + bias[j]), x Phi(x) with erf
  bias_gelu_tanh,     // C = gelu(A B + bias[j]), the tanh approximation (cuBLASLt's GELU)
  residual,           // C = A B + residual[b][i][j] (residual may be C itself: C += A B)
  bias_gelu_erf_aux,  // C = gelu(A B + bias[j]) (erf) and aux[b][i][j] = A B + bias[j]
  // C = A B * gelu'(aux[b][i][j]) (erf); where given, C also to aux_t[b][j][i] (transposed) and
  // each column's FP32 sum over all rows added to column_sums[j] (atomically: the order of the
  // additions, and so the last bits, differ between runs).
  dgelu_erf,
};
struct Epilogue {
  EpilogueKind kind = EpilogueKind::identity;
  const void* bias = nullptr;      // bias kinds: n values
  const void* residual = nullptr;  // residual: batch * m * n values
  void* aux = nullptr;             // bias_gelu_erf_aux: written; dgelu_erf: read
  void* aux_t = nullptr;           // dgelu_erf, optional: batch * n * m values
  float* column_sums = nullptr;    // dgelu_erf, optional: n values, added to
};

// Empty when gemm_sm90 takes epilogue kind e on B of that layout in that type with that
// schedule, else why not. The build holds what a user needs, no more: tf32 the identity only;
// a K-major B the identity, or (bf16, cooperative) every kind but dgelu_erf; dgelu_erf bf16, B
// MN-major, cooperative.
std::string gemm_epilogue_unsupported_reason(MmaDtype type, bool b_k_major, GemmSchedule schedule,
                                             EpilogueKind e);

// Empty when the engine can run on the current device (compute capability 9.0 and a build that
// holds its sm_90a code), else why not. Never throws; asks the device once per process.
std::string gemm_sm90_unusable_reason();

// Enqueues the GEMM of shape s (gemm_unsupported_reason(s, mma_dtype_bytes(type)) empty) in type
// with the plan gemm_plan(s, SMs[, bn[, splits]]) on stream. a, b, c and the epilogue's tensors
// must be 16-byte aligned (the tensor copies' rule); a plan with split-K (plan.splits > 1) needs
// `workspace`, gemm_workspace_bytes(s, plan) bytes, 16-byte aligned, that nothing else uses until
// the stream has run the GEMM (two kernels: the splits, then their sum in split order; one with
// plan.reduce_in_kernel, whose tile counters after the partials must be zero at launch:
// gemm_clear_counters zeroes them once, and each launch leaves them zero); otherwise workspace
// may be null. The epilogues each layout, type and schedule takes:
// gemm_epilogue_unsupported_reason. Throws std::invalid_argument where a buffer is missing or
// misaligned (aux 16 bytes, aux_t 2, column_sums 4), s is not supported or the epilogue is not
// one s takes, or reduce_in_kernel asks for a plan gemm_can_sum_in_kernel refuses;
// std::logic_error for a plan
// that is not gemm_plan's for s.
void gemm_sm90(MmaDtype type, const GemmShape& s, const GemmPlan& plan, const void* a,
               const void* b, void* c, const Epilogue& epilogue, void* workspace,
               cudaStream_t stream);

// Enqueues the zeroing of the workspace's tile counters (plan.reduce_in_kernel with split-K;
// nothing otherwise): once after allocating it, and after anything else wrote over it.
void gemm_clear_counters(const GemmShape& s, const GemmPlan& plan, void* workspace,
                         cudaStream_t stream);

// The small-tile path (core/cuda/gemm/gemm_small.cu): mma.sync on tiles of 64 x 64 or 32 x 32
// (4 warps), for problems whose 128-row wgmma tiles would leave most SMs idle; bf16, one batch,
// B either layout, every epilogue (dgelu_erf with B MN-major); split-K with FP32 partials in a
// workspace where the caller asks.
struct GemmSmallPlan {
  int tile = 64;                     // square tiles of 64 or 32
  std::int64_t blocks = 0;           // tiles
  int splits = 1, split_slices = 0;  // k in splits of split_slices slices of 32 values
};
// tile 32 or 64 forces the tile, else 64 where its tiles give every SM one, else 32; splits > 0
// asks for that many (fewer where the last would be empty), else none.
GemmSmallPlan gemm_small_plan(const GemmShape& s, int sm_count, int tile = 0, int splits = 0);
std::size_t gemm_small_workspace_bytes(const GemmShape& s, const GemmSmallPlan& p);
// Empty when gemm_small takes s with epilogue e in type (on an sm_80+ device), else why not.
std::string gemm_small_unsupported_reason(MmaDtype type, const GemmShape& s, EpilogueKind e);
// Enqueues it on stream; the buffers' rules are gemm_sm90's (workspace: split-K's,
// gemm_small_workspace_bytes). Throws as gemm_sm90 does.
void gemm_small(MmaDtype type, const GemmShape& s, const GemmSmallPlan& plan, const void* a,
                const void* b, void* c, const Epilogue& epilogue, void* workspace,
                cudaStream_t stream);

// Throws std::invalid_argument where a, b, c or a buffer the epilogue needs is missing or
// misaligned (16 bytes; aux_t 2, column_sums 4).
void check_epilogue_buffers(const void* a, const void* b, const void* c, const Epilogue& e);

// Registers, spills and shared memory of the kernel the plan selects for the identity
// epilogue (with B K-major where b_k_major), e.g. "168 registers, 0 B local, 197888 B dynamic
// shared".
std::string gemm_sm90_kernel_resources(MmaDtype type, const GemmPlan& plan, bool b_k_major = false);

}  // namespace bench::gemm
