// The one place that says which MLP backends exist and, for each one missing, why.
// MYCONV_HAVE_<DEP> and MYCONV_WHY_NO_<DEP> come from CMake (cmake/Dependencies.cmake).
#include "experiments/registry/mlp.hpp"

#include "baselines/mlp/backends.hpp"
#if MYCONV_HAVE_CUDA
#include "models/mlp/cuda/own_mlp.hpp"
#endif

namespace mlp {
namespace {

template <std::unique_ptr<Backend> (*Make)()>
std::unique_ptr<Backend> factory(const BackendOptions&) {
  return Make();
}

using Known = bench::KnownBackend<Backend, BackendOptions>;

// Report order: the CPU (the lecture's code on the host), then the GPU: the lecture's code, the
// same step replayed as a CUDA graph, the step written on cuBLASLt with fused epilogues, and the
// step on our own GEMM engine with fused epilogues.
const Known kKnown[] = {
    {"libtorch_cpu", "cpu",
     "the lecture's run_mlp in LibTorch: torch::nn::Linear + gelu, autograd, on the CPU",
#if MYCONV_HAVE_TORCH
     &factory<make_libtorch_eager_cpu_backend>, ""},
#else
     nullptr, MYCONV_WHY_NO_TORCH},
#endif
    {"libtorch_cuda", "cuda",
     "the lecture's run_mlp in LibTorch: torch::nn::Linear + gelu, autograd, on CUDA",
#if MYCONV_HAVE_TORCH_CUDA
     &factory<make_libtorch_eager_cuda_backend>, ""},
#else
     nullptr, MYCONV_WHY_NO_TORCH_CUDA},
#endif
    {"libtorch_graph", "cuda",
     "the same call captured once into a CUDA graph (at::cuda::CUDAGraph) and replayed; static "
     "input, gradients accumulated in place",
#if MYCONV_HAVE_TORCH_CUDA
     &factory<make_libtorch_graph_backend>, ""},
#else
     nullptr, MYCONV_WHY_NO_TORCH_CUDA},
#endif
    {"cublaslt_fused", "cuda",
     "forward and backward on cuBLASLt without autograd: GELU_AUX_BIAS epilogue forward, "
     "DGELU_BGRAD backward, plain GEMMs for the weight gradients (GeLU tanh)",
#if MYCONV_HAVE_CUDA
     &factory<make_cublaslt_fused_backend>, ""},
#else
     nullptr, MYCONV_WHY_NO_CUDA},
#endif
    {"own_cuda", "cuda",
     "the step on our GEMM engine without autograd: bias + GELU (erf) epilogue keeping the "
     "pre-activation, dGELU epilogue with the bias gradient; bf16 on wgmma, fp32 on SIMT SGEMMs",
#if MYCONV_HAVE_CUDA
     &factory<make_own_cuda_backend>, ""},
#else
     nullptr, MYCONV_WHY_NO_CUDA},
#endif
};

}  // namespace

std::vector<RegistryEntry> make_registry() {
  return bench::make_entries(kKnown, BackendOptions{});
}

std::vector<std::string> known_backend_names() {
  return bench::names_of(kKnown);
}

}  // namespace mlp
