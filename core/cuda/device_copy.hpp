// Host floats to and from device buffers of a dtype's storage type: what every CUDA backend does
// with its inputs (in its constructor) and its output (in read_output()).
#pragma once

#include <cstddef>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/dtype.hpp"

namespace bench {

// values as dt's storage type in a new device buffer: copied on stream and waited for, so that the
// host bytes may end.
inline DeviceBuffer<unsigned char> upload_as_storage(const std::vector<float>& values, DataType dt,
                                                     cudaStream_t stream) {
  const std::vector<unsigned char> bytes = to_storage_bytes(values, dt);
  DeviceBuffer<unsigned char> buf(bytes.size());
  buf.upload_async(bytes.data(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return buf;
}

// The first count values of buf, stored as dt, as floats in dst: copied on stream, waited for.
inline void read_as_float(const DeviceBuffer<unsigned char>& buf, std::size_t count, DataType dt,
                          cudaStream_t stream, float* dst) {
  std::vector<unsigned char> bytes(buf.bytes());
  buf.download_async(bytes.data(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  from_storage_bytes(bytes.data(), count, dt, dst);
}

}  // namespace bench
