// own_cuda's decode step (own_decode.cpp) as our own kernels on raw device pointers: five launches
// per layer and one for the head (a norm_rows kernel more before each normalized tensor-core
// GEMV), every one on the caller's stream (a graph capture takes them in).
// The GEMV (norm_gemv, own_decode_kernels.cu) streams a weight [n][k] (nn.Linear's row-major
// layout) once for every row of the batch: 16-byte loads, each group of warps two output rows (k
// split over the group's lanes so that a row's loads go out at once; the first rows' weights loaded
// before the wait on the previous kernel, the next rows' before the current rows' sums), float32
// accumulation (in fp16 and bf16 from batch GemvArgs::mma_from on: mma.sync tiles of 16 weight rows
// x 8 batch rows, k split over a block's warps, the input rows made once by a kernel before it:
// own_gemv_mma_kernels.cu); the SIMT GEMV's prologue makes the input rows in shared memory
// (embedding, RMSNorm or LayerNorm of the residual stream, recomputed by every block: the rows are
// small at batch 1 to 3), its epilogue does what follows the GEMV (bias, RoPE and the KV-cache
// write, SwiGLU or gelu_new, the residual add). The attention (own_attention_kernels.cu) is
// split-KV (flash-decoding) over the static cache with the grouped-query heads of one KV head in
// one block: the split's K and V rows staged in shared memory, positions past *pos skipped, the
// splits merged by the last block of each KV head (no second launch). Roundings to the element type
// follow transformers' eager order (what Model::forward does). Every kernel waits for the kernels
// before it (griddepcontrol.wait) before it reads their output, so each may be launched with
// programmatic dependent launch.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "models/transformer/cuda/decode_kernels.hpp"

namespace transformer::cuda {

enum class NormKind { none, rms, layer };

// The batch from which the 16-bit GEMVs run on tensor cores unless asked otherwise
// (GemvArgs::mma_from): the SIMT GEMV reads every x row from shared memory again for each pair of
// weight rows (x traffic = batch x 16 bytes per 32 bytes of weights), an mma.sync m16n8k16 reads
// it once per 16 rows.
constexpr int kMmaFromBatch = 4;

// What the GEMV's output rows become. store: y = xW^T + b into out [batch][n]. rope_kv: rows are
// q, k, v heads of head_dim d: q (RoPE'd) into out [batch][nq d], k (RoPE'd) and v into the cache
// at *pos. swiglu: rows [gate; up] (n = 2 inter): silu(gate) * up into out [batch][inter].
// gelu: gelu_new(y) into out. residual: out [batch][n] += y (the residual stream).
enum class Epilogue { store, rope_kv, swiglu, gelu, residual };

struct GemvArgs {
  const void* w = nullptr;     // [n][k] row-major
  const void* bias = nullptr;  // [n] or null
  int n = 0, k = 0, batch = 0;
  // The input rows [batch][k]: x as is (norm none), or norm(x) with norm_w, norm_b, eps; with
  // ids, x is made first as wte[ids[b]] (+ wpe[*pos]) and written to x_out by block 0.
  const void* x = nullptr;
  NormKind norm = NormKind::none;
  const void* norm_w = nullptr;
  const void* norm_b = nullptr;
  float eps = 0;
  const std::int64_t* ids = nullptr;
  const void* wte = nullptr;
  const void* wpe = nullptr;
  void* x_out = nullptr;
  // Scratch [batch][k] for the normalized input rows (or null): where the tensor-core GEMV runs
  // a norm or embedding prologue, norm_gemv makes the rows once in it (norm_rows, one block a
  // row) and the GEMV copies them, instead of every block of the GEMV making all of them.
  void* xn = nullptr;
  Epilogue epilogue = Epilogue::store;
  void* out = nullptr;
  // rope_kv: inv_freq (float32 [d/2]; null: no rotation), the cache [batch][nkv][max_len][d].
  const float* inv_freq = nullptr;
  const std::int64_t* pos = nullptr;
  void* cache_k = nullptr;
  void* cache_v = nullptr;
  int nq = 0, nkv = 0, d = 0;
  std::int64_t max_len = 0;
  // Which SIMT kernel (fp16 and bf16 below batch mma_from, every batch in float32): 2 (k split
  // over a group of warps, loads issued ahead as above), 1 (a warp a row pair, k over its lanes).
  int kernels = 2;
  // The batch from which fp16 and bf16 GEMVs run on tensor cores.
  int mma_from = kMmaFromBatch;
};

// Shared memory the GEMV's prologue needs (0 without a norm or embedding), and whether the
// arguments are ones it runs (k a multiple of 16 bytes of elements, n even where rows pair up).
std::size_t gemv_shared_bytes(const GemvArgs& a, Elem e);
bool gemv_supported(const GemvArgs& a, Elem e, const char** why);
// sms: the device's multiprocessors (the grid is sized on them). pdl: launched with programmatic
// stream serialization (sm_90): the kernel prefetches its first weight rows into L2 and is
// scheduled while the previous kernel ends, then waits for it before reading anything it wrote.
void norm_gemv(const GemvArgs& a, Elem e, int sms, bool pdl, cudaStream_t s);
// Kernels norm_gemv launches for a (2 where its input rows are made apart, else 1).
int gemv_launches(const GemvArgs& a, Elem e);

struct AttentionArgs {
  const void* q = nullptr;  // [batch][nq][d]
  const void* cache_k = nullptr;
  const void* cache_v = nullptr;  // [batch][nkv][max_len][d]
  const std::int64_t* pos = nullptr;
  void* out = nullptr;  // [batch][nq d]
  int batch = 0, nq = 0, nkv = 0, d = 0;
  std::int64_t max_len = 0;
  int chunk = 0;                 // positions per split
  float* partial_o = nullptr;    // [batch][nq][splits][d]
  float* partial_ml = nullptr;   // [batch][nq][splits][2]
  unsigned* counters = nullptr;  // [batch][nkv], zero before the first launch (left zero)
  // Which kernel: 2 (the split's K and V rows staged in shared memory, all scores at once), 1
  // (each warp walks its positions one by one).
  int kernels = 2;
};

// Positions a split covers for `kernels`' variant: for 2, about four blocks (batch x KV heads =
// blocks_per_split, times the splits) a multiprocessor, 16 positions at least, at most 256
// splits, at most max_len (rounded up to 16); for 1, 32 (more where the cache is long).
int attention_chunk(std::int64_t max_len, int kernels, std::int64_t blocks_per_split, int sms);
int attention_splits(const AttentionArgs& a);
// Shared memory of the attention's block; whether it runs the shape (why not, where it does not).
std::size_t attention_shared_bytes(const AttentionArgs& a, Elem e);
bool attention_supported(const AttentionArgs& a, Elem e, const char** why);
void split_kv_attention(const AttentionArgs& a, Elem e, bool pdl, cudaStream_t s);

}  // namespace transformer::cuda
