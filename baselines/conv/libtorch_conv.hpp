// What the conv suite's LibTorch backends (libtorch_cpu.cpp, libtorch_cuda.cpp) share: host buffers
// in the problem's layout as tensors and outputs back to host floats; the dtype's scalar type and
// ATen's errors as the case's status come from core/torch/libtorch_common.hpp.
#pragma once

#include <cstring>
#include <vector>

#include <torch/types.h>  // torch:: tensors and ATen ops (torch/torch.h adds nn, optim, data, jit)

#include "conv/problem.hpp"
#include "core/torch/libtorch_common.hpp"

namespace conv::libtorch {

using bench::libtorch::rethrow;
using bench::libtorch::scalar_type;

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

}  // namespace conv::libtorch
