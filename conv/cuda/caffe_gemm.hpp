// Variant 9 of im2col_gemm_cuda, "Caffe-classic": our im2col kernel writes a column buffer
// (variant 5's launch_mma_im2col: col[group][m][Kp] in the storage type), then cublasLtMatmul
// computes the GEMM straight into the output in the problem's layout, no extra pass
// (conv/cuda/caffe_gemm_plan.hpp: the layouts, strided batches and host loop, nchw and nhwc).
// Its purpose is the split: with the vendor's GEMM in place of ours, how much of our gap to cuDNN
// is the GEMM and how much the im2col. The instance times the two apart (time_phases: the
// results' metrics.im2col_ms and metrics.gemm_ms).
//
// Math: fp32 -> CUBLAS_COMPUTE_32F, strict FP32 (an algorithm whose numerical implementation
// reads TF32, FP16 or BF16 inputs is passed over); tf32 -> CUBLAS_COMPUTE_32F_FAST_TF32 on FP32
// storage; fp16 / bf16 -> 16-bit A, B and D with CUBLAS_COMPUTE_32F (FP32 accumulation). Scale
// type FP32. For fp32 and tf32 the im2col is the kernel's tf32 instantiation, which copies FP32
// values unchanged (the rounding to tf32 is cuBLASLt's).
//
// Life: the constructor (prepare, untimed) allocates the column buffer (bench::Unsupported with
// its size where it does not fit in free memory) and creates the cuBLASLt handle; compile()
// (timed) creates the descriptors, asks the heuristic for the algorithm and allocates the
// workspace it needs; run() only enqueues: the im2col kernel, then the cublasLtMatmul calls.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "conv/backend.hpp"
#include "conv/cuda/caffe_gemm_plan.hpp"
#include "conv/im2col_index.hpp"
#include "core/cuda/cublaslt_raii.hpp"
#include "core/dtype.hpp"

namespace conv {

// The most workspace the heuristic may ask for: 32 MiB, as the op suite's cuBLASLt backend
// allows (cuBLAS's recommendation for Hopper, and PyTorch's on sm_90).
inline constexpr std::size_t kCaffeMaxWorkspaceBytes = std::size_t(32) << 20;

// The GEMM of variant 9 for one geometry and dtype: the cuBLASLt descriptors of
// plan_caffe_gemm(g, ...) and the algorithm the heuristic chose.
class CaffeGemm {
 public:
  // The plan only; descriptors and algorithm come with choose(). handle must outlive this.
  CaffeGemm(cublasLtHandle_t handle, const Im2colGeometry& g, bench::DataType dt);

  // Creates the descriptors and takes the heuristic's first algorithm that the dtype's math
  // allows (see the header comment), with the least alignment the plan's matrix starts have
  // (caffe_operand_alignment). Where the heuristic has none for the strided batch, or
  // strided_batch is false (the tests' way to that path), it asks for one matrix and run() loops
  // over the batch on the host. bench::Unsupported where it has none at all.
  void choose(bool strided_batch = true);

  // Workspace bytes run() needs (the chosen algorithm's; 0 before choose()).
  std::size_t workspace_bytes() const;

  // dst (the problem's layout, storage type) from the weights and the column buffer; only
  // enqueues on stream. workspace: workspace_bytes() bytes of device memory.
  void run(const void* wei, const void* col, void* dst, void* workspace, cudaStream_t stream) const;

  const CaffeGemmPlan& plan() const { return plan_; }
  int matmul_calls() const;   // cublasLtMatmul calls per run()
  bool tensor_cores() const;  // the algorithm's numerical implementation is a tensor-core MMA
  // e.g. "cublasLtMatmul, CUBLAS_COMPUTE_32F, heuristic's first: algo 21, tile 128x128, stages
  // 64x3, split-k 1, workspace 0 B; 1 call of a strided batch of 32 (images)".
  std::string describe() const;
  nlohmann::ordered_json json() const;

 private:
  bool try_heuristic(int batch);  // false where cuBLASLt has no algorithm in that form

  cublasLtHandle_t handle_;
  bench::DataType dt_;
  int bytes_;
  CaffeGemmPlan plan_;
  bench::LtMatmulDesc desc_;
  bench::LtMatrixLayout a_, b_, d_;
  cublasLtMatmulHeuristicResult_t heuristic_{};
  int heuristic_rank_ = 0;  // 1-based rank of the chosen algorithm among the heuristic's
  int lt_batch_ = 0;        // batch count of each call: plan_.batch, or 1 (host loop); 0 unchosen
  std::string unbatched_why_;  // why the strided batch was not used, where it was not
};

// Empty where variant 9 can run p, else why not (from the problem alone; never throws).
std::string caffe_unsupported_reason(const Problem& p);

// Variant 9's instance: buffers allocated, inputs uploaded (bench::Unsupported where the column
// buffer does not fit in free device memory). variant_name names it in algorithm().
std::unique_ptr<Instance> make_caffe_instance(const Problem& p, const HostData& data,
                                              const std::string& variant_name);

}  // namespace conv
