// The output check on the GPU (compare_cuda.hpp).
//
// Pass 1: a grid-stride loop per thread gathers compare()'s quantities with the host loop's
// per-element operations (each rounded apart: no fused multiply-add, so the tolerance test of an
// element decides exactly as the host's), cub::BlockReduce folds each block's into one partial.
// Pass 2: one block folds the partials in a fixed order, so that a run repeats to the bit. The
// first mismatch comes out as a minimum index; an output that fails gets up to four more passes,
// each the least mismatching index past the last one found.
#include "core/cuda/compare_cuda.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <exception>

#include <cub/block/block_reduce.cuh>

#include "core/cuda/caught_error.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/element.cuh"

namespace bench {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 1024;
constexpr unsigned long long kNone = ~0ull;

struct Partial {
  double err2, ref2, max_abs_err;
  unsigned long long mismatches, non_finite, first_mismatch;  // first: least index, or kNone
  int out_constant, ref_constant;
};

__host__ __device__ Partial empty_partial() {
  return {0, 0, 0, 0, 0, kNone, 1, 1};
}

struct Fold {
  __device__ Partial operator()(const Partial& a, const Partial& b) const {
    return {__dadd_rn(a.err2, b.err2),
            __dadd_rn(a.ref2, b.ref2),
            fmax(a.max_abs_err, b.max_abs_err),
            a.mismatches + b.mismatches,
            a.non_finite + b.non_finite,
            a.first_mismatch < b.first_mismatch ? a.first_mismatch : b.first_mismatch,
            a.out_constant & b.out_constant,
            a.ref_constant & b.ref_constant};
  }
};

// compare()'s test of one element: non-finite, or |got - ref| > atol + rtol*|ref|.
__device__ bool mismatching(double got, double expected, double atol, double rtol) {
  if (!isfinite(got)) return true;
  return fabs(__dsub_rn(got, expected)) > __dadd_rn(atol, __dmul_rn(rtol, fabs(expected)));
}

template <typename T>
__global__ void compare_kernel(const T* __restrict__ out, const double* __restrict__ ref,
                               unsigned long long n, double atol, double rtol,
                               Partial* __restrict__ partials) {
  using Reduce = cub::BlockReduce<Partial, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  Partial p = empty_partial();
  const float out0 = to_float(out[0]);
  const double ref0 = ref[0];
  const unsigned long long step = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i =
           static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += step) {
    const float v = to_float(out[i]);
    const double got = v, expected = ref[i];
    p.ref2 = __dadd_rn(p.ref2, __dmul_rn(expected, expected));
    p.out_constant &= (v == out0 || (isnan(v) && isnan(out0))) ? 1 : 0;
    p.ref_constant &= expected == ref0 ? 1 : 0;
    const bool bad = mismatching(got, expected, atol, rtol);
    if (bad) {
      ++p.mismatches;
      if (i < p.first_mismatch) p.first_mismatch = i;
    }
    if (!isfinite(got)) {
      ++p.non_finite;
      continue;
    }
    const double diff = fabs(__dsub_rn(got, expected));
    p.err2 = __dadd_rn(p.err2, __dmul_rn(diff, diff));
    p.max_abs_err = fmax(p.max_abs_err, diff);
  }
  const Partial block = Reduce(temp).Reduce(p, Fold{});
  if (threadIdx.x == 0) partials[blockIdx.x] = block;
}

__global__ void fold_kernel(const Partial* __restrict__ partials, unsigned count,
                            Partial* __restrict__ total) {
  using Reduce = cub::BlockReduce<Partial, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  Partial p = empty_partial();
  for (unsigned i = threadIdx.x; i < count; i += blockDim.x) p = Fold{}(p, partials[i]);
  const Partial all = Reduce(temp).Reduce(p, Fold{});
  if (threadIdx.x == 0) *total = all;
}

// The least mismatching index past `after` (kNone: none), by atomicMin.
template <typename T>
__global__ void next_mismatch_kernel(const T* __restrict__ out, const double* __restrict__ ref,
                                     unsigned long long n, double atol, double rtol,
                                     unsigned long long after, unsigned long long* least) {
  const unsigned long long step = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i =
           after + 1 + static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += step)
    if (mismatching(to_float(out[i]), ref[i], atol, rtol)) {
      atomicMin(least, i);
      return;  // this thread's later elements have larger indices
    }
}

template <typename T>
float host_value(const T* out, unsigned long long i, cudaStream_t s);
template <>
float host_value(const float* out, unsigned long long i, cudaStream_t s) {
  float v = 0;
  CUDA_CHECK(cudaMemcpyAsync(&v, out + i, sizeof v, cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return v;
}
template <>
float host_value(const __half* out, unsigned long long i, cudaStream_t s) {
  __half v;
  CUDA_CHECK(cudaMemcpyAsync(&v, out + i, sizeof v, cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return __half2float(v);
}
template <>
float host_value(const __nv_bfloat16* out, unsigned long long i, cudaStream_t s) {
  __nv_bfloat16 v;
  CUDA_CHECK(cudaMemcpyAsync(&v, out + i, sizeof v, cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));
  return __bfloat162float(v);
}

template <typename T>
CompareSums gather(const T* out, const double* ref, unsigned long long n, const Tolerance& tol,
                   cudaStream_t s) {
  const auto blocks = static_cast<unsigned>(
      std::min<unsigned long long>((n + kThreads - 1) / kThreads, kMaxBlocks));
  DeviceBuffer<Partial> partials(blocks);
  DeviceBuffer<Partial> total(1);
  compare_kernel<T><<<blocks, kThreads, 0, s>>>(out, ref, n, tol.atol, tol.rtol, partials.data());
  CUDA_CHECK_LAST_LAUNCH();
  fold_kernel<<<1, kThreads, 0, s>>>(partials.data(), blocks, total.data());
  CUDA_CHECK_LAST_LAUNCH();
  Partial all = empty_partial();
  CUDA_CHECK(cudaMemcpyAsync(&all, total.data(), sizeof all, cudaMemcpyDeviceToHost, s));
  CUDA_CHECK(cudaStreamSynchronize(s));

  CompareSums sums;
  sums.elements = static_cast<std::size_t>(n);
  sums.err2 = all.err2;
  sums.ref2 = all.ref2;
  sums.max_abs_err = all.max_abs_err;
  sums.mismatches = static_cast<std::size_t>(all.mismatches);
  sums.non_finite = static_cast<std::size_t>(all.non_finite);
  sums.out_constant = all.out_constant != 0;
  sums.ref_constant = all.ref_constant != 0;
  sums.first_out = host_value(out, 0, s);
  // The first mismatches, in index order, as the host loop keeps them (an output that fails).
  DeviceBuffer<unsigned long long> least(1);
  unsigned long long index = all.first_mismatch;
  while (index != kNone && sums.first_mismatches.size() < 5) {
    double expected = 0;
    CUDA_CHECK(cudaMemcpyAsync(&expected, ref + index, sizeof expected, cudaMemcpyDeviceToHost, s));
    sums.first_mismatches.push_back(
        {static_cast<std::size_t>(index), host_value(out, index, s), expected});
    if (sums.first_mismatches.size() == 5 || sums.first_mismatches.size() == sums.mismatches) break;
    CUDA_CHECK(cudaMemsetAsync(least.data(), 0xFF, least.bytes(), s));  // kNone
    next_mismatch_kernel<T>
        <<<blocks, kThreads, 0, s>>>(out, ref, n, tol.atol, tol.rtol, index, least.data());
    CUDA_CHECK_LAST_LAUNCH();
    CUDA_CHECK(cudaMemcpyAsync(&index, least.data(), sizeof index, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
  }
  return sums;
}

}  // namespace

std::string compare_on_device(const DeviceValues& out, const double* ref, const Tolerance& tol,
                              Correctness* result) {
  try {
    const auto s = static_cast<cudaStream_t>(out.stream);
    const auto n = static_cast<unsigned long long>(out.count);
    CompareSums sums;
    if (n > 0) {
      switch (out.dtype) {
        case DataType::fp32:
        case DataType::tf32:
          sums = gather(static_cast<const float*>(out.data), ref, n, tol, s);
          break;
        case DataType::fp16:
          sums = gather(static_cast<const __half*>(out.data), ref, n, tol, s);
          break;
        case DataType::bf16:
          sums = gather(static_cast<const __nv_bfloat16*>(out.data), ref, n, tol, s);
          break;
      }
    }
    *result = finish_compare(sums, tol);
    return "";
  } catch (...) {
    return caught_error_text();  // the CUDA error left pending cleared
  }
}

}  // namespace bench
