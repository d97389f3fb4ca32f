// The LibTorch backends of the conv and op suites (libtorch_cpu, libtorch_cuda) as the programs
// see them: each factory of baselines/<suite>/backends.hpp gives a bench::ModuleBackend
// (module_backend.hpp) whose real backend lives in libmyconv_libtorch.so, opened only when a
// LibTorch case runs.
//
// Why: loading LibTorch costs a program 0.6-1 s of every start (Debian's libtorch_cpu.so pulls in
// about 290 shared libraries, then runs its static operator registration), and the programs are
// started hundreds of times only to parse a command line or run other backends (the tests, the
// runner, the command-line fuzzer). tests/cli/test_myconv.sh and test_myops.sh check that a
// command line, a listing and a run of another backend load no LibTorch, and that a LibTorch case
// does.
//
// Opened RTLD_LOCAL (and not RTLD_DEEPBIND, which AddressSanitizer refuses): LibTorch's symbols,
// oneDNN 3.x's among them in pip's, stay out of the global scope (baselines/onednn_loader.cpp says
// why that matters). One libstdc++, shared, as for the oneDNN module.
#include <dlfcn.h>

#include <memory>
#include <string>
#include <utility>

#include <torch/version.h>  // TORCH_VERSION only: the header defines macros, links nothing

#include "baselines/conv/backends.hpp"
#include "baselines/module_backend.hpp"
#include "baselines/module_loader.hpp"
#include "baselines/ops/backends.hpp"
#include "core/cpu_threads.hpp"
#if MYCONV_HAVE_TORCH_CUDA
#include "core/cuda/cuda_info.hpp"
#endif

namespace {

const bench::ModuleLocation kWhere = {"MYCONV_LIBTORCH_MODULE", MYCONV_LIBTORCH_INSTALL_DIR,
                                      MYCONV_LIBTORCH_MODULE, MYCONV_LIBTORCH_MODULE_NAME};

void* libtorch_module(std::string* why) {
  static std::string errors;
  static void* const handle = bench::open_module(kWhere, RTLD_NOW | RTLD_LOCAL, &errors);
  if (!handle) *why = "LibTorch module not loaded: " + errors;
  return handle;
}

// libtorch_cpu runs wherever its module is.
bench::Support module_found() {
  if (!bench::find_module(kWhere).empty()) return bench::Support::yes();
  std::string tried;
  for (const std::string& path : bench::module_candidates(kWhere))
    tried += (tried.empty() ? "" : ", ") + path;
  return bench::Support::no("LibTorch module not found (looked for " + tried + ")");
}

bench::ModuleBackendInfo cpu_backend(const char* entry_point) {
  return {"libtorch_cpu",   "cpu",      "LibTorch " TORCH_VERSION, &module_found, false,
          &libtorch_module, entry_point};
}

#if MYCONV_HAVE_TORCH_CUDA
// libtorch_cuda needs a CUDA device before anything else (the backend's own first question).
bench::Support cuda_device() {
  const bench::CudaAvailability a = bench::cuda_device_available();
  return a.ok ? bench::Support::yes() : bench::Support::no(a.reason);
}

bench::ModuleBackendInfo cuda_backend(const char* entry_point) {
  return {"libtorch_cuda",  "cuda",     "LibTorch " TORCH_VERSION, &cuda_device, true,
          &libtorch_module, entry_point};
}
#endif

template <class Backend, class Problem, class HostData, class Instance, class Options>
std::unique_ptr<Backend> make(bench::ModuleBackendInfo info, const Options& options) {
  return std::make_unique<bench::ModuleBackend<Backend, Problem, HostData, Instance, Options>>(
      std::move(info), options, bench::cpu_threads());
}

}  // namespace

namespace conv {
std::unique_ptr<Backend> make_libtorch_cpu_backend(const BackendOptions& options) {
  return make<Backend, Problem, HostData, Instance>(cpu_backend("myconv_libtorch_cpu_backend_new"),
                                                    options);
}
#if MYCONV_HAVE_TORCH_CUDA
std::unique_ptr<Backend> make_libtorch_cuda_backend(const BackendOptions& options) {
  return make<Backend, Problem, HostData, Instance>(
      cuda_backend("myconv_libtorch_cuda_backend_new"), options);
}
#endif
}  // namespace conv

namespace ops {
std::unique_ptr<Backend> make_libtorch_cpu_ops_backend(const BackendOptions& options) {
  return make<Backend, Problem, HostData, Instance>(
      cpu_backend("myconv_libtorch_cpu_ops_backend_new"), options);
}
#if MYCONV_HAVE_TORCH_CUDA
std::unique_ptr<Backend> make_libtorch_cuda_ops_backend(const BackendOptions& options) {
  return make<Backend, Problem, HostData, Instance>(
      cuda_backend("myconv_libtorch_cuda_ops_backend_new"), options);
}
#endif
}  // namespace ops
