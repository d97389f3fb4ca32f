// What the cuDNN backend's two APIs share (the legacy API's instance lives in cudnn.cpp with the
// backend, the graph API's in cudnn_graph.cpp): owners of cuDNN objects, the "not supported"
// check, the algorithm selection (--cudnn-algo), the data type, the instance base with the device
// buffers, stream, handle and timer, and the graph instance's factory. Internal to the cuDNN
// backend; nothing outside baselines/conv/ includes it.
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "baselines/conv/backends.hpp"
#include "conv/cuda/device_output.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_raii.hpp"
#include "core/cuda/cudnn_check.hpp"
#include "core/cuda/device_copy.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"

namespace conv::cudnn {

// Move-only owner of one cuDNN object (handle or descriptor).
template <class T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class CudnnObject {
 public:
  CudnnObject() { CUDNN_CHECK(Create(&object_)); }
  ~CudnnObject() {
    if (object_) CUDNN_CHECK_NOTHROW(Destroy(object_));
  }
  CudnnObject(CudnnObject&& o) noexcept : object_(std::exchange(o.object_, nullptr)) {}
  CudnnObject& operator=(CudnnObject&& o) noexcept {
    std::swap(object_, o.object_);
    return *this;
  }
  CudnnObject(const CudnnObject&) = delete;
  CudnnObject& operator=(const CudnnObject&) = delete;
  T get() const { return object_; }

 private:
  T object_ = nullptr;
};

using Handle = CudnnObject<cudnnHandle_t, cudnnCreate, cudnnDestroy>;

// A cuDNN "not supported" answer is the case's status "unsupported", not a failure.
inline bool is_not_supported(cudnnStatus_t s) {
  return s == CUDNN_STATUS_NOT_SUPPORTED || (s / 1000) * 1000 == CUDNN_STATUS_NOT_SUPPORTED;
}
#define CUDNN_CHECK_SUPPORTED(call)                                                            \
  do {                                                                                         \
    const cudnnStatus_t status_ = (call);                                                      \
    if (status_ != CUDNN_STATUS_SUCCESS) {                                                     \
      const std::string text_ = bench::cudnn_error_text(#call, status_, __FILE__, __LINE__);   \
      if (conv::cudnn::is_not_supported(status_)) throw bench::Unsupported("cuDNN: " + text_); \
      throw std::runtime_error(text_);                                                         \
    }                                                                                          \
  } while (0)

// Which of cuDNN's APIs runs the convolution.
enum class Api { legacy, graph };

inline const char* api_name(Api a) {
  return a == Api::legacy ? "legacy" : "graph";
}

// How the algorithm (legacy) or engine config (graph) is chosen: heuristic, search, or a number.
struct AlgoSelection {
  enum class Mode { heuristic, search, fixed } mode = Mode::heuristic;
  int number = 0;  // Mode::fixed
  std::string text() const {
    return mode == Mode::heuristic ? "heuristic"
           : mode == Mode::search  ? "search"
                                   : std::to_string(number);
  }
};

inline cudnnDataType_t data_type(DataType dt) {
  switch (dt) {
    case DataType::fp16:
      return CUDNN_DATA_HALF;
    case DataType::bf16:
      return CUDNN_DATA_BFLOAT16;
    default:
      return CUDNN_DATA_FLOAT;  // fp32, and tf32 (FP32 storage)
  }
}

inline std::size_t free_device_bytes() {
  std::size_t free = 0, total = 0;
  CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

// What both APIs share: the problem, the device buffers with the inputs, the stream, the handle
// and the timer; poisoning and reading the output. Each API adds compile() and run().
class CudnnInstance : public Instance {
 public:
  CudnnInstance(const Problem& p, const HostData& data, AlgoSelection selection)
      : p_(p),
        selection_(selection),
        elem_bytes_(std::size_t(bench::storage_bytes(p.dtype))),
        src_(data.src.size() * elem_bytes_),
        wei_(data.wei.size() * elem_bytes_),
        dst_(std::size_t(p.dst_elements()) * elem_bytes_),
        timer_(stream_.get()) {
    bench::upload_as_storage(src_, data.src, p.dtype, stream_.get());
    bench::upload_as_storage(wei_, data.wei, p.dtype, stream_.get());
  }

  void poison_output() override { dst_.fill_bytes_async(0xFF, stream_.get()); }

  void sync() override { stream_.synchronize(); }

  void read_output(float* dst) override { read_output_of(dst_, p_, stream_.get(), dst); }
  std::optional<bench::DeviceValues> device_output() override {
    return device_values_of(dst_, p_, stream_.get());
  }

  std::vector<std::int64_t> output_dims() const override { return dims_; }
  std::optional<std::int64_t> workspace_bytes() const override {
    return std::int64_t(workspace_.bytes());
  }
  bench::DeviceTimer* device_timer() override { return &timer_; }
  void* cuda_stream() override { return stream_.get(); }

 protected:
  Problem p_;
  AlgoSelection selection_;
  std::size_t elem_bytes_;
  bench::Stream stream_;
  Handle handle_;
  bench::DeviceBuffer<unsigned char> src_, wei_, dst_, workspace_;
  bench::CudaEventTimer timer_;
  std::vector<std::int64_t> dims_;
};

// The graph API's instance (cudnn_graph.cpp).
std::unique_ptr<Instance> make_graph_instance(const Problem& p, const HostData& data,
                                              AlgoSelection selection);

}  // namespace conv::cudnn
