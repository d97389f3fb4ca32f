// A conv output that lies in a device buffer of the dtype's storage type, in the problem's layout,
// written on a stream: how the instances that keep it so (ours in conv/cuda/, cuDNN's in
// baselines/conv/) answer read_output() and device_output() (conv/backend.hpp).
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "conv/problem.hpp"
#include "core/compare.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/device_copy.hpp"

namespace conv {

// p.dst_elements() floats in out; waits for stream.
inline void read_output_of(const bench::DeviceBuffer<unsigned char>& dst, const Problem& p,
                           cudaStream_t stream, float* out) {
  bench::read_as_float(dst, std::size_t(p.dst_elements()), p.dtype, stream, out);
}

inline bench::DeviceValues device_values_of(const bench::DeviceBuffer<unsigned char>& dst,
                                            const Problem& p, cudaStream_t stream) {
  return bench::DeviceValues{dst.data(), p.dtype, std::size_t(p.dst_elements()), stream};
}

}  // namespace conv
