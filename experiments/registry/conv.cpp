// The one place that says which backends exist and, for each one missing, why.
// MYCONV_HAVE_<DEP> and MYCONV_WHY_NO_<DEP> come from CMake (cmake/Dependencies.cmake).
#include "experiments/registry/conv.hpp"

#include "baselines/conv/backends.hpp"
#include "conv/cuda/im2col_gemm_cuda.hpp"
#include "conv/cuda/reference_conv_cuda.hpp"

namespace conv {

namespace {

using Known = bench::KnownBackend<Backend, BackendOptions>;

// Report order: CPU reference first, then the other CPU backends, then GPU backends.
const Known kKnown[] = {
    {"libtorch_cpu", "cpu", "torch::conv2d on the CPU (the reference users know)",
#if MYCONV_HAVE_TORCH
     &make_libtorch_cpu_backend, ""},
#else
     nullptr, MYCONV_WHY_NO_TORCH},
#endif
    {"onednn_cpu", "cpu", "oneDNN convolution_forward primitive on the CPU",
#if MYCONV_HAVE_ONEDNN
     &make_onednn_cpu_backend, ""},
#else
     nullptr, MYCONV_WHY_NO_ONEDNN},
#endif
    {"halide_cpu", "cpu", "Halide JIT on the host CPU (manual or auto-scheduled)",
#if MYCONV_HAVE_HALIDE
     &make_halide_cpu_backend, ""},
#else
     nullptr, MYCONV_WHY_NO_HALIDE},
#endif
    {"im2col_gemm_cuda", "cuda",
     "our CUDA kernels, --variant auto|search|N (FP32 1-3; tensor cores 4-6, Hopper 10-11; "
     "small-OC 7, depthwise 8, im2col + cuBLASLt 9)",
#if MYCONV_HAVE_CUDA
     &make_im2col_gemm_cuda_backend, ""},
#else
     nullptr, MYCONV_WHY_NO_CUDA},
#endif
    {"cudnn", "cuda",
     "cuDNN: graph API (default) or cudnnConvolutionForward; heuristic, searched or fixed",
#if MYCONV_HAVE_CUDNN
     &make_cudnn_backend, ""},
#else
     nullptr, MYCONV_WHY_NO_CUDNN},
#endif
    {"libtorch_cuda", "cuda", "torch::conv2d on CUDA tensors (cudnn.benchmark on or off)",
#if MYCONV_HAVE_TORCH_CUDA
     &make_libtorch_cuda_backend, ""},
#else
     nullptr, MYCONV_WHY_NO_TORCH_CUDA},
#endif
    {"halide_cuda", "cuda", "Halide JIT for CUDA (manual, manual_basic or Li2018)",
#if MYCONV_HAVE_HALIDE && MYCONV_HAVE_CUDA
     &make_halide_cuda_backend, ""},
#elif !MYCONV_HAVE_HALIDE
     nullptr, "needs Halide: " MYCONV_WHY_NO_HALIDE},
#else
     nullptr, "needs CUDA: " MYCONV_WHY_NO_CUDA},
#endif
};

}  // namespace

std::vector<RegistryEntry> make_registry(const BackendOptions& options) {
  return bench::make_entries(kKnown, options);
}

DeviceReferenceConv device_reference() {
#if MYCONV_HAVE_CUDA
  return &reference_conv_cuda;
#else
  return nullptr;
#endif
}

std::vector<std::string> known_backend_names() {
  return bench::names_of(kKnown);
}

}  // namespace conv
