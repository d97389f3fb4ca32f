// One conv problem's device buffers in the storage type of its dtype, for the tests that launch
// our kernels directly (test_im2col_gemm_cuda, test_small_conv, test_depthwise_cuda,
// test_caffe_gemm_cuda, test_wgmma_conv), and the check they share.
#pragma once

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "conv/data.hpp"
#include "conv/im2col_index.hpp"
#include "conv/problem.hpp"
#include "core/compare.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/dtype.hpp"
#include "tests/common/gpu_skip.hpp"

namespace conv::testing {

// Input and weights uploaded in the storage type (bench::to_storage_bytes); dst uninitialized.
struct DeviceBuffers {
  Problem p;
  Im2colGeometry g;
  int bytes;  // per value: 4 (fp32, tf32) or 2 (fp16, bf16)
  bench::Stream stream;
  bench::DeviceBuffer<unsigned char> src, wei, dst;

  DeviceBuffers(const Problem& problem, const HostData& data)
      : p(problem),
        g(make_im2col_geometry(problem)),
        bytes(bench::storage_bytes(problem.dtype)),
        src(data.src.size() * std::size_t(bytes)),
        wei(data.wei.size() * std::size_t(bytes)),
        dst(std::size_t(problem.dst_elements()) * std::size_t(bytes)) {
    const std::vector<unsigned char> s = bench::to_storage_bytes(data.src, p.dtype);
    const std::vector<unsigned char> w = bench::to_storage_bytes(data.wei, p.dtype);
    src.upload_async(s.data(), stream.get());
    wei.upload_async(w.data(), stream.get());
    stream.synchronize();
  }

  // dst as float (waits for the stream).
  std::vector<float> output() {
    std::vector<unsigned char> raw(dst.bytes());
    dst.download_async(raw.data(), stream.get());
    stream.synchronize();
    std::vector<float> out(std::size_t(p.dst_elements()));
    bench::from_storage_bytes(raw.data(), out.size(), p.dtype, out.data());
    return out;
  }

  // Calls f(src, wei, dst) with the buffers as pointers to the storage type of p.dtype (float,
  // __half or __nv_bfloat16): the typed kernel launchers' arguments.
  template <class F>
  void with_storage_type(F&& f) {
    auto run = [&](auto* type_tag) {
      using T = std::remove_pointer_t<decltype(type_tag)>;
      f(reinterpret_cast<const T*>(src.data()), reinterpret_cast<const T*>(wei.data()),
        reinterpret_cast<T*>(dst.data()));
    };
    if (p.dtype == DataType::fp16)
      run(static_cast<__half*>(nullptr));
    else if (p.dtype == DataType::bf16)
      run(static_cast<__nv_bfloat16*>(nullptr));
    else
      run(static_cast<float*>(nullptr));
  }

  // Poisons dst (0xFF bytes: NaN in every storage type) and checks that the poison reads back,
  // so that an element `launch` leaves unwritten fails; runs `launch` on the stream; compares
  // with the float64 reference at the dtype's tolerance. Returns "" when it passes, else the
  // failure; the output in *out when given. A fault in the kernel throws (the download waits).
  std::string check(const HostData& data, const std::function<void(cudaStream_t)>& launch,
                    std::vector<float>* out = nullptr) {
    dst.fill_bytes_async(0xFF, stream.get());
    for (float v : output())
      if (!std::isnan(v)) return "poison does not read back as NaN";
    launch(stream.get());
    CUDA_CHECK(cudaGetLastError());
    std::vector<float> result = output();
    const bench::Correctness c =
        bench::compare(result.data(), data.ref.data(), result.size(),
                       bench::dot_tolerance(p.dtype, p.reduction_length(), data.ref_rms));
    if (out) *out = std::move(result);
    return c.passed ? "" : c.message;
  }
};

// Whether two outputs are the same bits (a deterministic kernel run twice, or two tilings).
inline bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace conv::testing
