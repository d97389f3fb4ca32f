// Variant 9 of im2col_gemm_cuda ("Caffe-classic": im2col into a column buffer, then a cuBLASLt
// GEMM) as cuBLASLt sees it: which buffer is A and which is B, the column-major shapes, leading
// dimensions, strided batches and host-loop offsets that make cublasLtMatmul write the
// convolution's output directly in the problem's layout, with no extra pass. Host-only (no CUDA),
// so that tests/conv/test_caffe_gemm_plan.cpp checks it on the CPU by running the plan as plain
// loops.
//
// The column buffer is variant 5's (launch_mma_im2col): col[group][m][Kp] in the storage type,
// K padded to whole 16-byte vectors (mma_padded_k). Read column-major it is, per group, a K x M
// matrix with leading dimension Kp (k contiguous), so both operands of every GEMM below are
// k-contiguous ("TN", the layout cuBLASLt's tensor-core kernels read best) and the padding rows
// are never read.
//
// cuBLASLt is column-major: D(i, j) = sum_l op(A)(i, l) op(B)(l, j), X(r, c) at r + c * ld.
//   nhwc: the output of group g is, column-major, D(oc, m) at m * OC + g * OC/G + oc: an
//         OC/G x M matrix with ld OC. So D = op_T(W) * col: A = the weights (stored K x OC/G,
//         ld K, transposed), B = the columns (K x M, ld Kp). The images are all in M, so one call
//         covers the convolution: a strided batch over the groups (D's batch stride OC/G: the
//         groups' outputs interleave within each pixel's row, without overlapping).
//   nchw: the output of image n, group g is D(p, oc) at n * OC * OH*OW + (g * OC/G + oc) * OH*OW
//         + p, p = oy * OW + ox: an OH*OW x OC/G matrix with ld OH*OW. So D = op_T(col_n) * W:
//         A = image n's columns (K x OH*OW, ld Kp, transposed), B = the weights (K x OC/G, ld K).
//         That needs two batch indices (image and group), which one strided batch cannot
//         express (the weights' offset would be b mod G): the call batches over the larger of
//         images and groups (the weights' batch stride 0 when over images: every image reads the
//         same weights), and a host loop makes one call per value of the other (one call in all
//         where G = 1 or N = 1).
#pragma once

#include <cstdint>
#include <string>

#include "conv/cuda/mma_index.hpp"
#include "conv/im2col_index.hpp"

namespace conv {

enum class CaffeBuffer { columns, weights, output };

// One matrix of the GEMM as cuBLASLt reads it: stored column-major (rows x cols before op, ld),
// the b-th matrix of a call at batch_stride * b, the c-th call's at call_stride * c (elements).
struct CaffeOperand {
  CaffeBuffer buffer = CaffeBuffer::columns;
  bool transposed = false;  // op(X) = X^T
  std::int64_t rows = 0, cols = 0, ld = 0;
  std::int64_t batch_stride = 0;  // 0: every matrix of the batch is the same one
  std::int64_t call_stride = 0;
};

struct CaffeGemmPlan {
  std::int64_t m = 0, n = 0, k = 0;  // cuBLASLt's: D is m x n, op(A) m x k, op(B) k x n
  CaffeOperand a, b, d;
  int batch = 1;           // strided batch count of one cublasLtMatmul
  int calls = 1;           // cublasLtMatmul calls (a host loop where > 1)
  std::string batch_over;  // "groups", "images" or "" (batch 1)
  std::string calls_over;  // "groups", "images" or "" (one call)
  int kp = 0;              // the column buffer's padded K
};

// The plan of g with values of element_bytes bytes (4: fp32 and tf32, 2: fp16 and bf16).
inline CaffeGemmPlan plan_caffe_gemm(const Im2colGeometry& g, int element_bytes) {
  CaffeGemmPlan p;
  p.kp = mma_padded_k(g.k, element_bytes);
  const std::int64_t K = g.k, Kp = p.kp, M = g.m, ocg = g.ocg, oc = g.oc;
  const std::int64_t ohw = std::int64_t(g.oh) * g.ow;
  const std::int64_t weights_per_group = ocg * K, columns_per_group = M * Kp;
  p.k = K;
  if (g.nhwc) {
    p.m = ocg;
    p.n = M;
    p.a = {CaffeBuffer::weights, true, K, ocg, K, weights_per_group, 0};
    p.b = {CaffeBuffer::columns, false, K, M, Kp, columns_per_group, 0};
    p.d = {CaffeBuffer::output, false, ocg, M, oc, ocg, 0};
    p.batch = g.groups;
    p.batch_over = g.groups > 1 ? "groups" : "";
    return p;
  }
  p.m = ohw;
  p.n = ocg;
  p.a = {CaffeBuffer::columns, true, K, ohw, Kp, 0, 0};
  p.b = {CaffeBuffer::weights, false, K, ocg, K, 0, 0};
  p.d = {CaffeBuffer::output, false, ohw, ocg, ohw, 0, 0};
  const std::int64_t image_cols = ohw * Kp, image_out = oc * ohw;
  const std::int64_t group_out = ocg * ohw;
  if (g.n >= g.groups) {  // batch over images, a call per group
    p.a.batch_stride = image_cols;
    p.a.call_stride = columns_per_group;
    p.b.batch_stride = 0;
    p.b.call_stride = weights_per_group;
    p.d.batch_stride = image_out;
    p.d.call_stride = group_out;
    p.batch = g.n;
    p.calls = g.groups;
    p.batch_over = g.n > 1 ? "images" : "";
    p.calls_over = g.groups > 1 ? "groups" : "";
  } else {  // batch over groups, a call per image
    p.a.batch_stride = columns_per_group;
    p.a.call_stride = image_cols;
    p.b.batch_stride = weights_per_group;
    p.b.call_stride = 0;
    p.d.batch_stride = group_out;
    p.d.call_stride = image_out;
    p.batch = g.groups;
    p.calls = g.n;
    p.batch_over = "groups";
    p.calls_over = g.n > 1 ? "images" : "";
  }
  return p;
}

// The alignment, in bytes, of every matrix start of operand o (batch matrices and calls), given a
// buffer start aligned to 256 bytes (cudaMalloc's): the largest power of two up to 256 dividing
// every offset. What cuBLASLt's CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES must be told, since its
// default assumes 256.
inline std::uint32_t caffe_operand_alignment(const CaffeOperand& o, const CaffeGemmPlan& p,
                                             int element_bytes) {
  std::uint64_t bits = 256;
  if (p.batch > 1) bits |= std::uint64_t(o.batch_stride) * std::uint64_t(element_bytes);
  if (p.calls > 1) bits |= std::uint64_t(o.call_stride) * std::uint64_t(element_bytes);
  return std::uint32_t(bits & (~bits + 1));  // the lowest set bit
}

// Elements of each buffer the plan may read or write: the column buffer (variant 5's size), the
// weights and the output.
inline std::int64_t caffe_buffer_elements(const Im2colGeometry& g, int element_bytes,
                                          CaffeBuffer buffer) {
  switch (buffer) {
    case CaffeBuffer::columns:
      return std::int64_t(g.groups) * g.m * mma_padded_k(g.k, element_bytes);
    case CaffeBuffer::weights:
      return std::int64_t(g.oc) * g.k;
    case CaffeBuffer::output:
      return std::int64_t(g.m) * g.oc;
  }
  return 0;
}

// "nchw: 8 calls (one per group) of a strided batch of 32 (images)", for the algorithm text.
inline std::string caffe_batching_text(const CaffeGemmPlan& p) {
  std::string s = p.calls == 1
                      ? "1 call"
                      : std::to_string(p.calls) + " calls (host loop over " + p.calls_over + ")";
  s += p.batch == 1
           ? ", batch 1"
           : " of a strided batch of " + std::to_string(p.batch) + " (" + p.batch_over + ")";
  return s;
}

}  // namespace conv
