// Host floats to and from device buffers of a dtype's storage type: what every CUDA backend does
// with its inputs (in its constructor) and its output (in read_output()).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/dtype.hpp"

namespace bench {

// values as dt's storage type into buf, which holds exactly that many bytes: copied on stream and
// waited for, so that the host bytes may end.
inline void upload_as_storage(DeviceBuffer<unsigned char>& buf, const std::vector<float>& values,
                              DataType dt, cudaStream_t stream) {
  const std::vector<unsigned char> bytes = to_storage_bytes(values, dt);
  if (bytes.size() != buf.bytes())
    throw std::logic_error("upload_as_storage: " + std::to_string(bytes.size()) +
                           " bytes into a buffer of " + std::to_string(buf.bytes()));
  buf.upload_async(bytes.data(), stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

// The same into a new buffer of that size.
inline DeviceBuffer<unsigned char> upload_as_storage(const std::vector<float>& values, DataType dt,
                                                     cudaStream_t stream) {
  DeviceBuffer<unsigned char> buf(values.size() * std::size_t(storage_bytes(dt)));
  upload_as_storage(buf, values, dt, stream);
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
