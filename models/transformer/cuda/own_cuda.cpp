// own_cuda: the backend that runs our own decode step (own_decode.hpp), built only with a CUDA
// LibTorch. Prefill and the check's recompute stay on the suite's LibTorch model.
#include <memory>
#include <string>

#include "core/torch/libtorch_common.hpp"
#include "models/transformer/cuda/own_decode.hpp"

namespace transformer {

namespace {

class OwnCudaBackend final : public Backend {
 public:
  OwnCudaBackend() : Backend("own_cuda", "cuda", DecodeMode::own, &make_own_decode_graph) {}

  Support check_support(const Problem& p, const ModelConfig& cfg) const override {
    if (const Support s = Backend::check_support(p, cfg); !s.ok) return s;
    std::string why;
    if (!own_decode_supported(cfg, bench::libtorch::scalar_type(p.dtype), p.mb, &why))
      return Support::no(why);
    return Support::yes();
  }
};

}  // namespace

std::unique_ptr<Backend> make_own_cuda_backend() {
  return std::make_unique<OwnCudaBackend>();
}

}  // namespace transformer
