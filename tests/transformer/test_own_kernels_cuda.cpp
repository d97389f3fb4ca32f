// own_cuda's GEMV and split-KV attention (models/transformer/cuda/own_decode_kernels.hpp:
// norm_gemv, split_kv_attention) on raw device memory against a float64 reference on the host,
// without LibTorch's kernels, so that compute-sanitizer's racecheck (which stops on those) can run
// it. The GEMV cases: the tensor-core GEMV (several tiles a block, fewer tiles than
// multiprocessors, one and two n-tiles, several batch passes, the input rows from the norm
// kernel, from its own prologue, copied into shared memory or read from global memory, exactly 48
// KiB of shared memory) and the SIMT GEMV, in fp16 and bf16 (and the SIMT GEMV in float32), with
// the store, residual, SwiGLU and gelu_new epilogues. Compiled with a CUDA LibTorch only (the
// kernels are built with it); without a GPU it skips.
#if MYCONV_HAVE_TORCH_CUDA
#include <gtest/gtest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "models/transformer/cuda/own_decode_kernels.hpp"
#include "models/transformer/cuda/own_decode_math.hpp"

namespace transformer {
namespace {

using cuda::Elem;
using cuda::Epilogue;
using cuda::NormKind;

std::string dtype_name(Elem e) {
  return e == Elem::f32 ? "fp32" : e == Elem::f16 ? "fp16" : "bf16";
}

// Host storage of element type e: bits, and the float a value rounds to.
std::size_t bytes_of(Elem e) {
  return e == Elem::f32 ? 4 : 2;
}
float round_elem(float v, Elem e) {
  if (e == Elem::f16) return __half2float(__float2half_rn(v));
  if (e == Elem::bf16) return __bfloat162float(__float2bfloat16_rn(v));
  return v;
}
void store_elem(std::vector<unsigned char>& buf, std::size_t i, float v, Elem e) {
  if (e == Elem::f32) {
    std::memcpy(&buf[i * 4], &v, 4);
  } else if (e == Elem::f16) {
    const __half h = __float2half_rn(v);
    std::memcpy(&buf[i * 2], &h, 2);
  } else {
    const __nv_bfloat16 h = __float2bfloat16_rn(v);
    std::memcpy(&buf[i * 2], &h, 2);
  }
}
float load_elem(const std::vector<unsigned char>& buf, std::size_t i, Elem e) {
  if (e == Elem::f32) {
    float v;
    std::memcpy(&v, &buf[i * 4], 4);
    return v;
  }
  if (e == Elem::f16) {
    __half h;
    std::memcpy(&h, &buf[i * 2], 2);
    return __half2float(h);
  }
  __nv_bfloat16 h;
  std::memcpy(&h, &buf[i * 2], 2);
  return __bfloat162float(h);
}

// A device buffer holding host bytes.
struct Device {
  void* p = nullptr;
  explicit Device(const std::vector<unsigned char>& host) {
    EXPECT_EQ(cudaMalloc(&p, host.size()), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~Device() { cudaFree(p); }
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  std::vector<unsigned char> read(std::size_t n) const {
    std::vector<unsigned char> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), p, n, cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
};

struct GemvCase {
  int n, k, batch;
  NormKind norm;
  Epilogue epilogue;
  int mma_from;
  bool scratch;  // the input rows made apart (GemvArgs::xn)
  bool bias;
  bool pdl;
};

std::string name_of(const GemvCase& c, Elem e) {
  static const char* norms[] = {"none", "rms", "layer"};
  static const char* epis[] = {"store", "rope_kv", "swiglu", "gelu", "residual"};
  return dtype_name(e) + " n " + std::to_string(c.n) + " k " + std::to_string(c.k) + " batch " +
         std::to_string(c.batch) + " norm " + norms[static_cast<int>(c.norm)] + " " +
         epis[static_cast<int>(c.epilogue)] + " mma from " + std::to_string(c.mma_from) +
         (c.scratch ? " scratch" : "");
}

// One case: random inputs (never zeros), the output poisoned (NaN bytes) except where the
// residual epilogue reads it, the GEMV, then every output element against the reference within
// the dtype's tolerance.
void check_case(const GemvCase& c, Elem e, int sms) {
  const std::string what = name_of(c, e);
  std::mt19937 gen(1234 + c.n + 7 * c.k + 31 * c.batch);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const std::size_t es = bytes_of(e);
  const std::size_t xn_count = std::size_t(c.batch) * c.k;
  std::vector<unsigned char> w(std::size_t(c.n) * c.k * es), x(xn_count * es), nw(c.k * es),
      nb(c.k * es), bias(c.n * es);
  for (std::size_t i = 0; i < std::size_t(c.n) * c.k; ++i) store_elem(w, i, u(gen) * 0.1f, e);
  for (std::size_t i = 0; i < xn_count; ++i) store_elem(x, i, u(gen) * 2.0f, e);
  for (int i = 0; i < c.k; ++i) {
    store_elem(nw, i, 1.0f + 0.5f * u(gen), e);
    store_elem(nb, i, 0.2f * u(gen), e);
  }
  for (int i = 0; i < c.n; ++i) store_elem(bias, i, 0.5f * u(gen), e);
  const int out_cols = c.epilogue == Epilogue::swiglu ? c.n / 2 : c.n;
  const std::size_t out_count = std::size_t(c.batch) * out_cols;
  std::vector<unsigned char> out(out_count * es);
  if (c.epilogue == Epilogue::residual) {
    for (std::size_t i = 0; i < out_count; ++i) store_elem(out, i, u(gen), e);
  } else {
    std::memset(out.data(), 0xff, out.size());  // NaN in every dtype
  }
  const std::vector<unsigned char> out0 = out;

  // The reference: the input rows as the kernels make them (float32 statistics, each rounding
  // to the element type), then the sums in float64 and the epilogue's roundings.
  std::vector<double> xr(xn_count);
  for (int b = 0; b < c.batch; ++b) {
    std::vector<float> row(c.k);
    for (int j = 0; j < c.k; ++j) row[j] = load_elem(x, std::size_t(b) * c.k + j, e);
    if (c.norm == NormKind::rms) {
      double ss = 0;
      for (float v : row) ss += double(v) * v;
      const float inv = 1.0f / std::sqrt(float(ss / c.k) + 1e-6f);
      for (int j = 0; j < c.k; ++j)
        row[j] = round_elem(load_elem(nw, j, e) * round_elem(row[j] * inv, e), e);
    } else if (c.norm == NormKind::layer) {
      double s = 0, v = 0;
      for (float r : row) s += r;
      const float mean = float(s / c.k);
      for (float r : row) v += double(r - mean) * (r - mean);
      const float inv = 1.0f / std::sqrt(float(v / c.k) + 1e-5f);
      for (int j = 0; j < c.k; ++j)
        row[j] = round_elem((row[j] - mean) * inv * load_elem(nw, j, e) + load_elem(nb, j, e), e);
    }
    for (int j = 0; j < c.k; ++j) xr[std::size_t(b) * c.k + j] = row[j];
  }
  std::vector<double> want(out_count);
  double scale = 0;
  for (int b = 0; b < c.batch; ++b) {
    std::vector<float> y(c.n);
    for (int r = 0; r < c.n; ++r) {
      double s = 0;
      for (int j = 0; j < c.k; ++j)
        s += xr[std::size_t(b) * c.k + j] * load_elem(w, std::size_t(r) * c.k + j, e);
      if (c.bias) s += load_elem(bias, r, e);
      y[r] = static_cast<float>(s);
    }
    for (int o = 0; o < out_cols; ++o) {
      const std::size_t i = std::size_t(b) * out_cols + o;
      double v = 0;
      switch (c.epilogue) {
        case Epilogue::store:
          v = round_elem(y[o], e);
          break;
        case Epilogue::residual:
          v = round_elem(load_elem(out0, i, e) + round_elem(y[o], e), e);
          break;
        case Epilogue::gelu:
          v = round_elem(own::gelu_new_f(round_elem(y[o], e)), e);
          break;
        case Epilogue::swiglu: {
          const float g = round_elem(y[o], e), up = round_elem(y[out_cols + o], e);
          v = round_elem(round_elem(own::silu_f(g), e) * up, e);
          break;
        }
        case Epilogue::rope_kv:
          break;
      }
      want[i] = v;
      scale += v * v;
    }
  }
  scale = std::sqrt(scale / double(out_count));

  const Device dw(w), dx(x), dnw(nw), dnb(nb), dbias(bias), dout(out),
      dxn(std::vector<unsigned char>(xn_count * es, 0xff));
  cuda::GemvArgs a;
  a.w = dw.p;
  a.bias = c.bias ? dbias.p : nullptr;
  a.n = c.n;
  a.k = c.k;
  a.batch = c.batch;
  a.x = dx.p;
  a.norm = c.norm;
  a.norm_w = c.norm != NormKind::none ? dnw.p : nullptr;
  a.norm_b = c.norm == NormKind::layer ? dnb.p : nullptr;
  a.eps = c.norm == NormKind::rms ? 1e-6f : 1e-5f;
  a.xn = c.scratch ? dxn.p : nullptr;
  a.epilogue = c.epilogue;
  a.out = dout.p;
  a.mma_from = c.mma_from;
  const char* why = nullptr;
  ASSERT_TRUE(cuda::gemv_supported(a, e, &why)) << what << ": " << why;
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  cuda::norm_gemv(a, e, sms, c.pdl, stream);
  const cudaError_t done = cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  ASSERT_EQ(done, cudaSuccess) << what << ": " << cudaGetErrorString(done);
  const std::vector<unsigned char> got = dout.read(out.size());

  // fp32: the sums' order; 16-bit: one rounding of the output (and of the epilogue's steps).
  const double rel = e == Elem::f32 ? 1e-4 : e == Elem::f16 ? 1e-2 : 2e-2;
  int bad = 0;
  for (std::size_t i = 0; i < out_count; ++i) {
    const double g = load_elem(got, i, e);
    if (!(std::fabs(g - want[i]) <= rel * (std::fabs(want[i]) + scale))) {
      if (++bad <= 3)
        ADD_FAILURE() << what << ": element " << i << " is " << g << ", want " << want[i];
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << out_count << " elements off";
}

// GPU 0's multiprocessors, or 0 where there is no GPU.
int gpu_sms() {
  int devices = 0, sms = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return 0;
  return cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess ? sms : 0;
}

TEST(TransformerCuda, OwnGemvKernelsMatchReference) {
  const int sms = gpu_sms();
  if (sms == 0) GTEST_SKIP() << "no GPU";
  const std::vector<GemvCase> tensor_core = {
      // several tiles a block (300 tiles), the rows made by the norm kernel
      {4800, 1024, 8, NormKind::rms, Epilogue::store, 4, true, true, true},
      // fewer tiles than multiprocessors (16 warps a block), two rounds, two batch passes
      {96, 2816, 17, NormKind::none, Epilogue::residual, 4, false, true, false},
      // batch 3 on tensor cores, LayerNorm in the GEMV's own prologue, SwiGLU
      {2400, 320, 3, NormKind::layer, Epilogue::swiglu, 1, false, false, true},
      // batch 1: the rows (16 KiB) and the sums (32 KiB) are exactly 48 KiB of shared memory
      {64, 8192, 1, NormKind::none, Epilogue::store, 1, false, true, false},
      // batch 20 x k 8192: the rows do not fit in shared memory (read from global memory), two
      // batch passes, four rounds on blocks of 16 warps
      {48, 8192, 20, NormKind::none, Epilogue::residual, 4, false, false, true},
      // the same on blocks of 8 warps (132 tiles: as many as an H100's multiprocessors)
      {2112, 6144, 16, NormKind::none, Epilogue::store, 4, false, true, true},
      // gelu_new, the rows made apart
      {160, 768, 12, NormKind::layer, Epilogue::gelu, 4, true, true, true},
  };
  const std::vector<GemvCase> simt = {
      {96, 320, 2, NormKind::rms, Epilogue::gelu, 4, true, true, true},
      {1200, 2816, 3, NormKind::none, Epilogue::residual, 4, false, true, false},
  };
  for (Elem e : {Elem::f16, Elem::bf16}) {
    for (const GemvCase& c : tensor_core) check_case(c, e, sms);
    for (const GemvCase& c : simt) check_case(c, e, sms);
  }
  for (const GemvCase& c : simt) check_case(c, Elem::f32, sms);
}

// The split-KV attention (split_kv_attention) on raw device memory against a float64 softmax:
// q, the cache's K and V rows random (never zeros) in the element type, positions past *pos
// poisoned (NaN) so that reading one shows, the output poisoned; both kernels, grouped-query
// heads, several splits (and splits wholly past *pos), a split longer than one shared-memory tile.
struct AttentionCase {
  int batch, nq, nkv, d;
  std::int64_t max_len, pos;
};

void check_attention(const AttentionCase& c, Elem e, int kernels, int sms) {
  const std::string what = dtype_name(e) + " attention v" + std::to_string(kernels) + " batch " +
                           std::to_string(c.batch) + " heads " + std::to_string(c.nq) + "/" +
                           std::to_string(c.nkv) + " d " + std::to_string(c.d) + " pos " +
                           std::to_string(c.pos) + " of " + std::to_string(c.max_len);
  std::mt19937 gen(99 + c.batch + 3 * c.nq + 5 * c.d);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const std::size_t es = bytes_of(e);
  const std::size_t q_count = std::size_t(c.batch) * c.nq * c.d;
  const std::size_t kv_count = std::size_t(c.batch) * c.nkv * c.max_len * c.d;
  std::vector<unsigned char> q(q_count * es), k(kv_count * es), v(kv_count * es);
  for (std::size_t i = 0; i < q_count; ++i) store_elem(q, i, u(gen) * 2.0f, e);
  for (std::size_t i = 0; i < kv_count; ++i) {
    const bool filled = std::int64_t(i / c.d % c.max_len) <= c.pos;
    store_elem(k, i, filled ? u(gen) * 2.0f : NAN, e);
    store_elem(v, i, filled ? u(gen) : NAN, e);
  }
  std::vector<double> want(q_count);
  double scale = 0;
  const int rep = c.nq / c.nkv;
  for (int b = 0; b < c.batch; ++b)
    for (int h = 0; h < c.nq; ++h) {
      const std::size_t kv0 = (std::size_t(b) * c.nkv + h / rep) * c.max_len * c.d;
      const std::size_t q0 = (std::size_t(b) * c.nq + h) * c.d;
      std::vector<double> s(c.pos + 1);
      double big = -INFINITY;
      for (std::int64_t t = 0; t <= c.pos; ++t) {
        double dot = 0;
        for (int j = 0; j < c.d; ++j)
          dot += double(load_elem(q, q0 + j, e)) * load_elem(k, kv0 + t * c.d + j, e);
        s[t] = dot / std::sqrt(double(c.d));
        big = std::max(big, s[t]);
      }
      double den = 0;
      for (double& x : s) den += (x = std::exp(x - big));
      for (int j = 0; j < c.d; ++j) {
        double o = 0;
        for (std::int64_t t = 0; t <= c.pos; ++t) o += s[t] * load_elem(v, kv0 + t * c.d + j, e);
        want[q0 + j] = o / den;
        scale += (o / den) * (o / den);
      }
    }
  scale = std::sqrt(scale / double(q_count));

  cuda::AttentionArgs a;
  a.batch = c.batch;
  a.nq = c.nq;
  a.nkv = c.nkv;
  a.d = c.d;
  a.max_len = c.max_len;
  a.kernels = kernels;
  a.chunk = cuda::attention_chunk(c.max_len, kernels, std::int64_t(c.batch) * c.nkv, sms);
  const int splits = cuda::attention_splits(a);
  const std::vector<unsigned char> pos_bytes(reinterpret_cast<const unsigned char*>(&c.pos),
                                             reinterpret_cast<const unsigned char*>(&c.pos) + 8);
  const std::size_t parts = std::size_t(c.batch) * c.nq * splits;
  const Device dq(q), dk(k), dv(v), dpos(pos_bytes),
      dout(std::vector<unsigned char>(q_count * es, 0xff)),
      dpo(std::vector<unsigned char>(parts * c.d * 4, 0xff)),
      dpml(std::vector<unsigned char>(parts * 2 * 4, 0xff)),
      dcount(std::vector<unsigned char>(std::size_t(c.batch) * c.nkv * 4, 0));
  a.q = dq.p;
  a.cache_k = dk.p;
  a.cache_v = dv.p;
  a.pos = static_cast<const std::int64_t*>(dpos.p);
  a.out = dout.p;
  a.partial_o = static_cast<float*>(dpo.p);
  a.partial_ml = static_cast<float*>(dpml.p);
  a.counters = static_cast<unsigned*>(dcount.p);
  const char* why = nullptr;
  ASSERT_TRUE(cuda::attention_supported(a, e, &why)) << what << ": " << why;
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  cuda::split_kv_attention(a, e, true, stream);
  const cudaError_t done = cudaStreamSynchronize(stream);
  cudaStreamDestroy(stream);
  ASSERT_EQ(done, cudaSuccess) << what << ": " << cudaGetErrorString(done);
  const std::vector<unsigned char> got = dout.read(q_count * es);
  const double rel = e == Elem::f32 ? 1e-4 : e == Elem::f16 ? 1e-2 : 2e-2;
  int bad = 0;
  for (std::size_t i = 0; i < q_count; ++i) {
    const double g = load_elem(got, i, e);
    if (!(std::fabs(g - want[i]) <= rel * (std::fabs(want[i]) + scale)) && ++bad <= 3)
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", want " << want[i];
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << q_count << " elements off";
  // The counters are left zero for the next step.
  const std::vector<unsigned char> counts = dcount.read(std::size_t(c.batch) * c.nkv * 4);
  for (unsigned char byte : counts) EXPECT_EQ(byte, 0) << what;
}

TEST(TransformerCuda, OwnAttentionKernelsMatchReference) {
  const int sms = gpu_sms();
  if (sms == 0) GTEST_SKIP() << "no GPU";
  const std::vector<AttentionCase> cases = {
      {1, 8, 2, 64, 256, 200},    // several splits, four query heads a KV head
      {3, 6, 3, 32, 48, 20},      // splits wholly past pos
      {17, 16, 16, 8, 256, 199},  // splits longer than one 64-position tile
  };
  for (Elem e : {Elem::f32, Elem::f16, Elem::bf16})
    for (int kernels : {2, 1})
      for (const AttentionCase& c : cases) check_attention(c, e, kernels, sms);
}

}  // namespace
}  // namespace transformer
#endif  // MYCONV_HAVE_TORCH_CUDA
