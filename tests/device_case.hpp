// One conv problem's device buffers in the storage type of its dtype, for the tests that launch
// our kernels directly (tests/test_im2col_gemm_cuda.cpp, tests/test_small_conv.cpp).
#pragma once

#include <string>
#include <vector>

#include "conv/data.hpp"
#include "conv/im2col_index.hpp"
#include "conv/problem.hpp"
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
};

}  // namespace conv::testing
