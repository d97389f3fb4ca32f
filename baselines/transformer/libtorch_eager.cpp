// libtorch_cpu and libtorch_cuda: prefill and every decode step as ATen calls over the static
// cache (Model::forward over the filled prefix [0, pos]); training through autograd.
#include "baselines/transformer/backends.hpp"

namespace transformer {

std::unique_ptr<Backend> make_libtorch_eager_backend(const std::string& device) {
  return std::make_unique<Backend>("libtorch_" + device, device, DecodeMode::eager);
}

}  // namespace transformer
