// The one place that says which op backends exist and, for each one missing, why.
// MYCONV_HAVE_<DEP> and MYCONV_WHY_NO_<DEP> come from CMake (cmake/Dependencies.cmake).
#include "experiments/registry/ops.hpp"

#include "baselines/ops/backends.hpp"
#include "ops/cuda/own_cuda.hpp"
#if MYCONV_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "baselines/ops/matmul_ceiling.hpp"
#include "core/cuda/cuda_info.hpp"
#include "core/cuda/cuda_peak.hpp"
#endif

namespace ops {

namespace {

using Known = bench::KnownBackend<Backend, BackendOptions>;

// Report order: the CPU backends (PyTorch first: every CPU score is against it), then the GPU
// backends (ours, the vendor libraries, then PyTorch, every GPU score's reference).
const Known kKnown[] = {
    {"libtorch_cpu", "cpu", "the PyTorch call a user would write, on CPU tensors",
#if MYCONV_HAVE_TORCH
     &make_libtorch_cpu_ops_backend, ""},
#else
     nullptr, MYCONV_WHY_NO_TORCH},
#endif
    {"onednn_cpu", "cpu",
     "oneDNN primitives on the CPU: binary, eltwise, reduction, softmax, layer normalization, "
     "matmul, reorder, concat",
#if MYCONV_HAVE_ONEDNN
     &make_onednn_cpu_ops_backend, ""},
#else
     nullptr, MYCONV_WHY_NO_ONEDNN},
#endif
    {"own_cuda", "cuda",
     "our CUDA kernels (ops/cuda/): vectorized elementwise, reductions, one-pass row "
     "normalizations, tiled transpose, tensor-core matmul; numbered variants (--variant)",
#if MYCONV_HAVE_CUDA
     &make_own_cuda_backend, ""},
#else
     nullptr, MYCONV_WHY_NO_CUDA},
#endif
    {"cub_cuda", "cuda", "CUB device-wide transforms and segmented reductions (CUDA toolkit)",
#if MYCONV_HAVE_CUDA
     &make_cub_cuda_backend, ""},
#else
     nullptr, MYCONV_WHY_NO_CUDA},
#endif
    {"cublaslt", "cuda", "cuBLASLt matmul with its heuristic's first algorithm (CUDA toolkit)",
#if MYCONV_HAVE_CUDA
     &make_cublaslt_backend, ""},
#else
     nullptr, MYCONV_WHY_NO_CUDA},
#endif
    {"libtorch_cuda", "cuda", "the PyTorch call a user would write, on CUDA tensors",
#if MYCONV_HAVE_TORCH_CUDA
     &make_libtorch_cuda_ops_backend, ""},
#else
     nullptr, MYCONV_WHY_NO_TORCH_CUDA},
#endif
};

}  // namespace

std::vector<RegistryEntry> make_registry(const BackendOptions& options) {
  return bench::make_entries(kKnown, options);
}

std::vector<std::string> known_backend_names() {
  return bench::names_of(kKnown);
}

GpuLimits gpu_limits() {
#if MYCONV_HAVE_CUDA
  return [](std::ostream& os, nlohmann::ordered_json& system,
            const std::vector<bench::DataType>& matmul_dtypes) {
    if (!bench::cuda_device_available().ok) return;
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) device = 0;
    os << "measuring device " << device << "'s copy bandwidth (device-to-device copy)...\n";
    system["bandwidth"]["cuda"] =
        nlohmann::ordered_json::array({bench::measure_cuda_copy_bandwidth(device)});
    if (!matmul_dtypes.empty()) {
      os << "measuring the matmul ceiling (cuBLASLt)...\n";
      system["matmul_ceiling"] = measure_matmul_ceiling(matmul_dtypes);
    }
  };
#else
  return {};
#endif
}

}  // namespace ops
