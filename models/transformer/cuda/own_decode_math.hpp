// The scalar math of own_cuda's decode kernels (own_decode_kernels.cu) that the host can run too:
// the merge of split-KV (flash-decoding) softmax partials, SwiGLU's silu and GPT-2's gelu_new in
// float. Written once, for the kernels and for the CPU tests (tests/transformer/test_model.cpp)
// that check it against a direct softmax.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define MYCONV_HD __host__ __device__
#else
#define MYCONV_HD
#endif

namespace transformer::own {

// A split's partial over its positions t: m = max_t s_t, l = sum_t exp(s_t - m),
// o = sum_t exp(s_t - m) v_t (m = -inf, l = 0 for a split with no position). The merge of
// `splits` partials (m(i), l(i), o(i): callables, so that the kernel reads them past L1) is
// sum_t softmax(s)_t v_t: each split's numbers rescaled to the largest m. Split 0 must hold a
// position (m finite).
template <typename M, typename L, typename O>
MYCONV_HD inline float merge_split_softmax(int splits, M m, L l, O o) {
  float big = m(0);
  for (int i = 1; i < splits; ++i) big = fmaxf(big, m(i));
  float num = 0, den = 0;
  for (int i = 0; i < splits; ++i) {
    const float li = l(i);
    if (li == 0) continue;  // no position in this split
    const float w = expf(m(i) - big);
    den += li * w;
    num += o(i) * w;
  }
  return num / den;
}

// at::silu in float: x / (1 + exp(-x)).
MYCONV_HD inline float silu_f(float x) {
  return x / (1.0f + expf(-x));
}

// transformers' gelu_new (NewGELUActivation), the tanh form, in float (at::gelu(x, "tanh")).
MYCONV_HD inline float gelu_new_f(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

}  // namespace transformer::own
