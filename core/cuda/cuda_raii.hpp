// Move-only owners of CUDA runtime objects: Stream, Event, DeviceBuffer<T>, and CudaEventTimer (a
// bench::DeviceTimer made of two events on a stream). Constructors throw through CUDA_CHECK;
// destructors never throw (CUDA_CHECK_NOTHROW). A moved-from object owns nothing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "core/cuda/cuda_check.hpp"
#include "core/timer.hpp"

namespace bench {

// A non-blocking stream (no implicit synchronization with the legacy default stream).
class Stream {
 public:
  Stream() { CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (stream_) CUDA_CHECK_NOTHROW(cudaStreamDestroy(stream_));
  }
  Stream(Stream&& o) noexcept : stream_(std::exchange(o.stream_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept {
    std::swap(stream_, o.stream_);
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }
  void synchronize() const { CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  // cudaEventDefault records timing; cudaEventDisableTiming makes a cheaper sync-only event.
  explicit Event(unsigned flags = cudaEventDefault) {
    CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags));
  }
  ~Event() {
    if (event_) CUDA_CHECK_NOTHROW(cudaEventDestroy(event_));
  }
  Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    std::swap(event_, o.event_);
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream) { CUDA_CHECK(cudaEventRecord(event_, stream)); }
  void synchronize() const { CUDA_CHECK(cudaEventSynchronize(event_)); }

 private:
  cudaEvent_t event_ = nullptr;
};

// count elements of T in device memory (cudaMalloc), uninitialized. A size of 0 owns nothing.
template <typename T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), bytes()));
  }
  ~DeviceBuffer() {
    if (data_) CUDA_CHECK_NOTHROW(cudaFree(data_));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(count_, o.count_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  // Copies size() elements from host memory, in stream order (src must stay alive until then).
  void upload_async(const T* src, cudaStream_t stream) {
    if (count_) CUDA_CHECK(cudaMemcpyAsync(data_, src, bytes(), cudaMemcpyHostToDevice, stream));
  }
  // Copies size() elements to host memory, in stream order.
  void download_async(T* dst, cudaStream_t stream) const {
    if (count_) CUDA_CHECK(cudaMemcpyAsync(dst, data_, bytes(), cudaMemcpyDeviceToHost, stream));
  }
  // Sets every byte to value (0xFF makes every float a NaN), in stream order.
  void fill_bytes_async(int value, cudaStream_t stream) {
    if (count_) CUDA_CHECK(cudaMemsetAsync(data_, value, bytes(), stream));
  }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

// Device time between start() and stop() on one stream, from a pair of CUDA events. start() and
// stop() only enqueue; elapsed() waits for the stop event. Resolution about 0.5 us.
class CudaEventTimer final : public DeviceTimer {
 public:
  explicit CudaEventTimer(cudaStream_t stream) : stream_(stream) {}
  void start() override { start_.record(stream_); }
  void stop() override { stop_.record(stream_); }
  Millis elapsed() override {
    stop_.synchronize();
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start_.get(), stop_.get()));
    return Millis(static_cast<double>(ms));
  }

 private:
  cudaStream_t stream_;
  Event start_, stop_;
};

}  // namespace bench
