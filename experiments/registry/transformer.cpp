// The one place that says which transformer implementations exist and, for each one missing,
// why. MYCONV_HAVE_TORCH_CUDA and MYCONV_WHY_NO_TORCH_CUDA come from CMake
// (models/transformer/CMakeLists.txt, from cmake/Dependencies.cmake).
#include "experiments/registry/transformer.hpp"

#include <algorithm>

#include "baselines/transformer/backends.hpp"
#if MYCONV_HAVE_TORCH_CUDA
#include "models/transformer/cuda/own_decode.hpp"
#endif

namespace transformer {

namespace {

std::unique_ptr<Backend> eager_cpu(const BackendOptions&) {
  return make_libtorch_eager_backend("cpu");
}
#if MYCONV_HAVE_TORCH_CUDA
std::unique_ptr<Backend> eager_cuda(const BackendOptions&) {
  return make_libtorch_eager_backend("cuda");
}
std::unique_ptr<Backend> graph_cuda(const BackendOptions&) {
  return make_libtorch_graph_backend();
}
std::unique_ptr<Backend> own_cuda(const BackendOptions&) {
  return make_own_cuda_backend();
}
#define MYCONV_TF_CUDA(factory) factory, ""
#else
#define MYCONV_TF_CUDA(factory) nullptr, "needs a CUDA LibTorch: " MYCONV_WHY_NO_TORCH_CUDA
#endif

// Report order: LibTorch on the CPU, then on CUDA (eager, the CUDA graph), our own decode step,
// and the external reference.
const bench::KnownBackend<Backend, BackendOptions> kKnown[] = {
    {"libtorch_cpu", "cpu", "prefill and every decode step as ATen calls over the static cache",
     eager_cpu, ""},
    {"libtorch_cuda", "cuda", "prefill and every decode step as ATen calls over the static cache",
     MYCONV_TF_CUDA(eager_cuda)},
    {"libtorch_graph", "cuda",
     "decode steps replayed from a CUDA graph captured per batch size over the static cache",
     MYCONV_TF_CUDA(graph_cuda)},
    {"own_cuda", "cuda",
     "decode steps of our own kernels (norm fused into the GEMVs, RoPE and the KV write in the "
     "QKV GEMV, split-KV attention, argmax) replayed from one CUDA graph; prefill on LibTorch",
     MYCONV_TF_CUDA(own_cuda)},
    {"hf_transformers", "cuda", "Hugging Face transformers in Python (external reference)", nullptr,
     "external reference: scripts/references/hf_reference.py runs it and writes the same result "
     "records"},
};

}  // namespace

std::vector<RegistryEntry> make_registry() {
  return bench::make_entries(kKnown, BackendOptions{});
}

std::vector<std::string> known_implementation_names() {
  std::vector<std::string> names;
  for (const auto& n : bench::names_of(kKnown))
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  return names;
}

}  // namespace transformer
