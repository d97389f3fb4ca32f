// Fused CUDA kernels of the graph decode step (Model::decode_step_static on CUDA) and of greedy
// sampling: plain CUDA on raw pointers, launched on the caller's stream (decode_cuda.cpp wraps
// them for ATen tensors). Each does what a chain of ATen kernels does, in transformers' order of
// roundings, in one launch: at batch 1 a decode step is hundreds of tiny kernels and their count
// sets its time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace transformer::cuda {

enum class Elem { f32, f16, bf16 };

// The new token's q, k and v: qkv [b, nq + 2 nkv, d] contiguous. With inv_freq (float32 [d/2]),
// q and k are rotated in place as transformers' rotary embedding does at position *pos
// (freqs = pos * inv_freq in float32, cos and sin of (freqs, freqs) cast to the element type,
// x * cos + rotate_half(x) * sin, each product and the sum rounded to it); without, nothing is
// rotated (GPT-2). k and v are written into cache_k, cache_v [b, nkv, max_len, d] at *pos.
void rope_write_kv(void* qkv, void* cache_k, void* cache_v, const float* inv_freq,
                   const std::int64_t* pos, int b, int nq, int nkv, int d, std::int64_t max_len,
                   Elem e, cudaStream_t s);

// out [b, inter] = silu(gu[:, :inter]) * gu[:, inter:] (gu [b, 2 inter] contiguous): silu rounded
// to the element type, then the product, as at::silu(gate) * up.
void silu_mul(const void* gu, void* out, std::int64_t b, std::int64_t inter, Elem e,
              cudaStream_t s);

// out[r] = the index of the maximum of row r of x [rows, n] (contiguous), the first one where it
// repeats; NaN counts above every number, as torch.argmax. keys: scratch of `rows` 64-bit words.
// Each row is spread over many blocks (one block reading a 150k vocabulary took 52 us on the
// H200): a memset, the blocks' atomicMax of (value, index) keys, the keys' indices.
void argmax_rows(const void* x, std::int64_t rows, std::int64_t n, std::int64_t* out,
                 unsigned long long* keys, Elem e, cudaStream_t s);

}  // namespace transformer::cuda
