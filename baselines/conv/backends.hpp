// Factories of the backends in baselines/ (one .cpp each). Declared unconditionally; each is
// defined only when its library was found, and called only under the matching MYCONV_HAVE_* guard
// in experiments/registry/conv.cpp.
// The LibTorch and oneDNN factories are their loaders' (baselines/libtorch_loader.cpp,
// onednn_loader.cpp): the backends' code lives in a module of its own.
#pragma once

#include <memory>

#include "conv/backend.hpp"

namespace conv {

std::unique_ptr<Backend> make_libtorch_cpu_backend(const BackendOptions& options);
std::unique_ptr<Backend> make_onednn_cpu_backend(const BackendOptions& options);
std::unique_ptr<Backend> make_halide_cpu_backend(const BackendOptions& options);
// options.halide_schedule: manual | manual_basic | li2018, options.halide_tile: manual's tile
// preset (the others report why not from available()).
std::unique_ptr<Backend> make_halide_cuda_backend(const BackendOptions& options);
// options.cudnn_algo: heuristic | search | 0..7; throws bench::UsageError otherwise.
std::unique_ptr<Backend> make_cudnn_backend(const BackendOptions& options);
// options.torch_cudnn_benchmark: ATen's cudnn.benchmark for every case of this backend.
std::unique_ptr<Backend> make_libtorch_cuda_backend(const BackendOptions& options);

}  // namespace conv
