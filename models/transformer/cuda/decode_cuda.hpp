// ATen wrappers of the fused decode kernels (decode_kernels.cu), built with a CUDA LibTorch
// (MYCONV_HAVE_TORCH_CUDA): each launches on the current CUDA stream, so a graph capture takes
// it in. Model::decode_step_static uses them for tensors on CUDA; the CPU keeps the ATen ops.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace transformer {

// qkv [b, nq + 2 nkv, d] contiguous: q and k rotated in place with inv_freq (float32 [d/2]; an
// undefined tensor: none), k and v written into cache_k, cache_v [b, nkv, max_len, d] at pos
// (a 1-element int64 tensor on the device).
void fused_rope_write_kv(at::Tensor& qkv, at::Tensor& cache_k, at::Tensor& cache_v,
                         const at::Tensor& inv_freq, const at::Tensor& pos, std::int64_t nq,
                         std::int64_t nkv);
// silu(gu[:, :inter]) * gu[:, inter:], gu [b, 2 inter] contiguous.
at::Tensor fused_silu_mul(const at::Tensor& gu, std::int64_t inter);
// argmax over the last dimension of logits [b, V] (contiguous): [b] int64.
at::Tensor fused_argmax(const at::Tensor& logits);

}  // namespace transformer
