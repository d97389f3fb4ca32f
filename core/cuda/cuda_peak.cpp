#include "core/cuda/cuda_peak.hpp"

#include <algorithm>
#include <exception>
#include <string>

#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_raii.hpp"

namespace bench {

nlohmann::ordered_json measure_cuda_copy_bandwidth(int device) {
  nlohmann::ordered_json j;
  j["index"] = device;
  try {
    const nlohmann::ordered_json info = cuda_device_info(device);
    CUDA_CHECK(cudaSetDevice(device));
    const std::size_t bytes = std::size_t(kCudaCopyMiB) << 20;
    DeviceBuffer<unsigned char> src(bytes), dst(bytes);
    Stream stream;
    src.fill_bytes_async(1, stream.get());
    Event start, stop;
    float best = 1e30f;
    for (int rep = 0; rep < 12; ++rep) {  // the first two are warm-ups
      start.record(stream.get());
      CUDA_CHECK(
          cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, stream.get()));
      stop.record(stream.get());
      stop.synchronize();
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
      if (rep >= 2) best = std::min(best, ms);
    }
    j["name"] = info["name"];
    j["measured_copy_gbs"] = 2.0 * double(bytes) / (double(best) * 1e-3) / 1e9;
    j["theoretical_gbs"] = info["theoretical_memory_bandwidth_gb_s"];
    j["method"] = "cudaMemcpyAsync device to device of " + std::to_string(kCudaCopyMiB) +
                  " MiB, CUDA events, best of 10 after 2 warm-ups, read + write bytes counted";
  } catch (const std::exception& e) {
    j["why"] = e.what();
  }
  return j;
}

}  // namespace bench
