#include "models/transformer/cuda/decode_cuda.hpp"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include "core/error.hpp"
#include "models/transformer/cuda/decode_kernels.hpp"

namespace transformer {
namespace {

cuda::Elem elem_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return cuda::Elem::f32;
    case at::kHalf: return cuda::Elem::f16;
    case at::kBFloat16: return cuda::Elem::bf16;
    default: break;
  }
  throw std::runtime_error(std::string("fused decode kernels: no kernel for dtype ") +
                           c10::toString(t.scalar_type()));
}

}  // namespace

void fused_rope_write_kv(at::Tensor& qkv, at::Tensor& cache_k, at::Tensor& cache_v,
                         const at::Tensor& inv_freq, const at::Tensor& pos, std::int64_t nq,
                         std::int64_t nkv) {
  BENCH_CHECK(qkv.is_contiguous() && qkv.dim() == 3 && qkv.size(1) == nq + 2 * nkv,
              "fused_rope_write_kv: qkv must be [b, nq + 2 nkv, d], contiguous");
  BENCH_CHECK(cache_k.is_contiguous() && cache_v.is_contiguous() &&
                  cache_k.scalar_type() == qkv.scalar_type(),
              "fused_rope_write_kv: the caches must be contiguous, of qkv's dtype");
  BENCH_CHECK(pos.scalar_type() == at::kLong && pos.numel() == 1, "pos: one int64");
  const std::int64_t d = qkv.size(2);
  BENCH_CHECK(d <= 1024 && d % 2 == 0, "fused_rope_write_kv: head_dim must be even and <= 1024");
  if (inv_freq.defined())
    BENCH_CHECK(inv_freq.scalar_type() == at::kFloat && inv_freq.numel() == d / 2 &&
                    inv_freq.is_cuda(),
                "fused_rope_write_kv: inv_freq must be float32 [d/2] on the device");
  cuda::rope_write_kv(qkv.data_ptr(), cache_k.data_ptr(), cache_v.data_ptr(),
                      inv_freq.defined() ? inv_freq.data_ptr<float>() : nullptr,
                      pos.data_ptr<std::int64_t>(), static_cast<int>(qkv.size(0)),
                      static_cast<int>(nq), static_cast<int>(nkv), static_cast<int>(d),
                      cache_k.size(2), elem_of(qkv), at::cuda::getCurrentCUDAStream());
}

at::Tensor fused_silu_mul(const at::Tensor& gu, std::int64_t inter) {
  BENCH_CHECK(gu.is_contiguous() && gu.dim() == 2 && gu.size(1) == 2 * inter,
              "fused_silu_mul: gu must be [b, 2 inter], contiguous");
  at::Tensor out = at::empty({gu.size(0), inter}, gu.options());
  cuda::silu_mul(gu.data_ptr(), out.data_ptr(), gu.size(0), inter, elem_of(gu),
                 at::cuda::getCurrentCUDAStream());
  return out;
}

at::Tensor fused_argmax(const at::Tensor& logits) {
  BENCH_CHECK(logits.is_contiguous() && logits.dim() == 2, "fused_argmax: logits [b, V]");
  at::Tensor out = at::empty({logits.size(0)}, logits.options().dtype(at::kLong));
  at::Tensor keys = at::empty({logits.size(0)}, logits.options().dtype(at::kLong));
  cuda::argmax_rows(logits.data_ptr(), logits.size(0), logits.size(1),
                    out.data_ptr<std::int64_t>(),
                    reinterpret_cast<unsigned long long*>(keys.data_ptr<std::int64_t>()),
                    elem_of(logits), at::cuda::getCurrentCUDAStream());
  return out;
}

}  // namespace transformer
