// What the LibTorch backends (libtorch_cpu.cpp, libtorch_cuda.cpp) share: our dtype as an ATen
// scalar type, host buffers in the problem's layout as tensors, outputs back to host floats, and
// ATen's errors as the case's status.
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "conv/problem.hpp"
#include "core/error.hpp"

namespace conv::libtorch {

// Storage type of dt: tf32 is FP32 storage (its math mode is a separate, global switch).
inline at::ScalarType scalar_type(DataType dt) {
  switch (dt) {
    case DataType::fp16:
      return at::kHalf;
    case DataType::bf16:
      return at::kBFloat16;
    default:
      return at::kFloat;
  }
}

// nhwc is ATen's channels_last: logical NCHW sizes over NHWC memory.
inline at::MemoryFormat memory_format(Layout layout) {
  return layout == Layout::nhwc ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
}

// A host buffer in the problem's layout (src NCHW/NHWC, weights OIHW/OHWI), copied into a new
// logical NCHW (OIHW) tensor of dtype dt on device, in the layout's memory format. Synchronous.
inline at::Tensor to_tensor(const std::vector<float>& data, const std::vector<std::int64_t>& shape,
                            Layout layout, DataType dt, at::Device device) {
  at::Tensor t = torch::from_blob(const_cast<float*>(data.data()), shape, at::kFloat);
  if (layout == Layout::nhwc) t = t.permute({0, 3, 1, 2});
  return t.to(at::TensorOptions().dtype(scalar_type(dt)).device(device), /*non_blocking=*/false,
              /*copy=*/true, memory_format(layout));
}

// Copies t (logical NCHW, any device and dtype) to dst as float in the layout's order.
inline void copy_to_host(const at::Tensor& t, Layout layout, float* dst) {
  at::Tensor h = t.to(at::kFloat);
  if (layout == Layout::nhwc) h = h.permute({0, 2, 3, 1});
  h = h.contiguous().to(at::kCPU);
  std::memcpy(dst, h.data_ptr<float>(), sizeof(float) * static_cast<std::size_t>(h.numel()));
}

// An ATen error as the case's status: a kernel missing for the dtype is "unsupported" (reason
// prefixed by where, e.g. "LibTorch 2.11.0 on CUDA"), anything else a failure. First line only.
[[noreturn]] inline void rethrow(const c10::Error& e, const std::string& where) {
  const std::string what = e.what_without_backtrace();
  const std::string line = what.substr(0, what.find('\n'));
  if (what.find("not implemented for") != std::string::npos ||
      what.find("CUDNN_STATUS_NOT_SUPPORTED") != std::string::npos)
    throw bench::Unsupported(where + ": " + line);
  throw std::runtime_error(line);
}

}  // namespace conv::libtorch
