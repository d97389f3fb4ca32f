// One conv problem's device buffers in the storage type of its dtype, for the tests that launch
// our kernels directly (test_im2col_gemm_cuda, test_small_conv, test_depthwise_cuda,
// test_caffe_gemm_cuda, test_wgmma_conv), and the check they share.
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "conv/data.hpp"
#include "conv/im2col_index.hpp"
#include "conv/problem.hpp"
#include "core/compare.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/dtype.hpp"
#include "tests/gpu_skip.hpp"

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

}  // namespace conv::testing
