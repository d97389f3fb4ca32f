// The transformer suite's library backends, one file each: LibTorch's eager decode
// (libtorch_eager.cpp: libtorch_cpu and libtorch_cuda, the model's forward over the filled cache
// prefix for every step) and its CUDA graph (libtorch_graph.cpp: the fixed-shape step captured
// once per case and replayed; a CUDA LibTorch only). The model they run is the suite's
// (models/transformer/model.hpp: the LibTorch model every backend shares, own_cuda's prefill and
// weights and the check's full recompute); registered in experiments/registry/transformer.cpp.
#pragma once

#include <memory>
#include <string>

#include "models/transformer/backend.hpp"

namespace transformer {

// libtorch_cpu (device "cpu") or libtorch_cuda (device "cuda").
std::unique_ptr<Backend> make_libtorch_eager_backend(const std::string& device);

#if MYCONV_HAVE_TORCH_CUDA
std::unique_ptr<Backend> make_libtorch_graph_backend();
// libtorch_graph's capture: model.decode_step_static over cache into an at::cuda::CUDAGraph;
// null with *why where the capture fails.
std::unique_ptr<DecodeGraph> capture_libtorch_decode_graph(const Model& model, KvCache& cache,
                                                           std::string* why);
#endif

}  // namespace transformer
