#include "baselines/conv/halide_cuda_runtime.hpp"

#include <cudaTypedefs.h>  // PFN_* types of driver entry points
#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "baselines/conv/halide_conv.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/cuda_info.hpp"

namespace conv {
namespace {

// Compute capability of the current device as 10 * major + minor, 0 without a usable device.
int device_capability() {
  static const int cc = [] {
    if (!bench::cuda_device_available().ok) return 0;
    int device = 0, major = 0, minor = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return 10 * major + minor;
  }();
  return cc;
}

// ---- Driver API through cudart --------------------------------------------------------------

// A driver API function from cudart's entry-point query (the driver the runtime already loaded),
// so that the program links no libcuda and starts where no driver is installed.
void* driver_entry_point(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status));
#else
  CUDA_CHECK(cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &status));
#endif
  if (status != cudaDriverEntryPointSuccess || !fn)
    throw std::runtime_error(std::string("CUDA driver entry point ") + name +
                             " not found (cudaDriverEntryPointQueryResult " +
                             std::to_string(static_cast<int>(status)) + ")");
  return fn;
}

constexpr const char* kMaxRegisters = "128";

// ---- Halide's CUDA hooks --------------------------------------------------------------------

int acquire_context(Halide::JITUserContext* user_context, void** cuda_context, bool /*create*/) {
  auto* c = static_cast<HalideCudaJitContext*>(user_context);
  *cuda_context = c->cu_context;
  ++c->counts->acquires;
  return 0;
}

int release_context(Halide::JITUserContext* /*user_context*/) {
  return 0;
}

int get_stream(Halide::JITUserContext* user_context, void* /*cuda_context*/, void** stream) {
  auto* c = static_cast<HalideCudaJitContext*>(user_context);
  *stream = c->stream;
  ++c->counts->streams;
  return 0;
}

void collect_error(Halide::JITUserContext* user_context, const char* message) {
  auto* c = static_cast<HalideCudaJitContext*>(user_context);
  if (c->errors) *c->errors += message;
}

}  // namespace

Halide::Target halide_cuda_target() {
  struct Capability {
    int cc;
    Halide::Target::Feature feature;
  };
  static const Capability kCapabilities[] = {
      {86, Halide::Target::CUDACapability86}, {80, Halide::Target::CUDACapability80},
      {75, Halide::Target::CUDACapability75}, {70, Halide::Target::CUDACapability70},
      {61, Halide::Target::CUDACapability61}, {50, Halide::Target::CUDACapability50},
      {35, Halide::Target::CUDACapability35}, {30, Halide::Target::CUDACapability30}};
  const int cc = device_capability();
  Halide::Target t = halide_host_target().with_feature(Halide::Target::CUDA);
  for (const Capability& c : kCapabilities)
    if (cc == 0 || c.cc <= cc) return t.with_feature(c.feature);
  return t.with_feature(Halide::Target::CUDACapability30);
}

CUcontext cuda_stream_context(cudaStream_t stream) {
  static const auto get_ctx =
      reinterpret_cast<PFN_cuStreamGetCtx_v9020>(driver_entry_point("cuStreamGetCtx"));
  CUcontext ctx = nullptr;
  const CUresult r = get_ctx(stream, &ctx);
  if (r != CUDA_SUCCESS || !ctx) {
    const char* name = "unknown";
    try {
      reinterpret_cast<PFN_cuGetErrorName_v6000>(driver_entry_point("cuGetErrorName"))(r, &name);
    } catch (const std::exception&) {
    }
    throw std::runtime_error(std::string("cuStreamGetCtx failed: ") + name + " (" +
                             std::to_string(static_cast<int>(r)) + ")");
  }
  return ctx;
}

void make_libcuda_visible() {
  static const std::string error = [] {
    if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL)) return std::string();
    const char* e = dlerror();
    return std::string("dlopen(libcuda.so.1): ") + (e ? e : "unknown error");
  }();
  if (!error.empty()) throw std::runtime_error(error);
}

void use_halide_cuda_register_budget() {
  setenv("HL_CUDA_JIT_MAX_REGISTERS", kMaxRegisters, /*overwrite=*/0);
}

std::string halide_cuda_register_budget() {
  const char* v = std::getenv("HL_CUDA_JIT_MAX_REGISTERS");
  return v ? v : "64 (Halide's default)";
}

HalideCudaJitContext make_halide_cuda_jit_context(CUcontext context, cudaStream_t stream,
                                                  HalideHookCounts* counts, std::string* errors) {
  HalideCudaJitContext c;
  c.handlers.custom_cuda_acquire_context = &acquire_context;
  c.handlers.custom_cuda_release_context = &release_context;
  c.handlers.custom_cuda_get_stream = &get_stream;
  if (errors) c.handlers.custom_error = &collect_error;
  c.cu_context = context;
  c.stream = stream;
  c.counts = counts;
  c.errors = errors;
  return c;
}

}  // namespace conv
