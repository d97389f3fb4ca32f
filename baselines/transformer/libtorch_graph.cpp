// libtorch_graph: the decode step replayed from a CUDA graph, built only with a CUDA LibTorch
// (MYCONV_HAVE_TORCH_CUDA). The capture follows torch.cuda.graph: a few warm-up steps on a side
// stream (lazy initialization, cuBLAS workspaces), then at::cuda::CUDAGraph captures one static
// step (Model::decode_step_static) into its private memory pool; every replay reads the ids and
// the position from the static input buffers and writes the logits buffer.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdint>
#include <memory>
#include <string>

#include "baselines/transformer/backends.hpp"

namespace transformer {

namespace {

class CudaDecodeGraph final : public DecodeGraph {
 public:
  CudaDecodeGraph(const Model& model, KvCache& cache) : batch_(cache.batch) {
    const auto ids = at::TensorOptions().dtype(at::kLong).device(model.device());
    ids_ = at::zeros({batch_, 1}, ids);
    pos_ = at::zeros({1}, ids);
    const c10::cuda::CUDAStream side = at::cuda::getStreamFromPool();
    const c10::cuda::CUDAStream current = at::cuda::getCurrentCUDAStream();
    current.synchronize();
    {
      const c10::cuda::CUDAStreamGuard guard(side);
      for (int i = 0; i < 3; ++i) logits_ = model.decode_step_static(ids_, pos_, cache);
      side.synchronize();
      graph_.capture_begin();
      try {
        logits_ = model.decode_step_static(ids_, pos_, cache);
      } catch (...) {
        graph_.capture_end();
        throw;
      }
      graph_.capture_end();
      side.synchronize();
    }
  }

  at::Tensor step(const at::Tensor& ids, std::int64_t pos) override {
    ids_.copy_(ids.view({batch_, 1}));
    pos_.fill_(pos);
    graph_.replay();
    return logits_;
  }

 private:
  std::int64_t batch_;
  at::Tensor ids_, pos_, logits_;
  at::cuda::CUDAGraph graph_;
};

}  // namespace

std::unique_ptr<DecodeGraph> capture_libtorch_decode_graph(const Model& model, KvCache& cache,
                                                           std::string* why) {
  try {
    return std::make_unique<CudaDecodeGraph>(model, cache);
  } catch (const std::exception& e) {
    if (why) *why = std::string("CUDA graph capture of the decode step failed: ") + e.what();
    return nullptr;
  }
}

std::unique_ptr<Backend> make_libtorch_graph_backend() {
  return std::make_unique<Backend>("libtorch_graph", "cuda", DecodeMode::graph,
                                   &capture_libtorch_decode_graph);
}

}  // namespace transformer
