// Loads the oneDNN backends (conv's and ops') from their own module (libmyconv_onednn.so) with
// RTLD_DEEPBIND; each suite's factory takes its entry point from it.
//
// Why: pip's LibTorch bundles oneDNN 3.x and exports its vague-linkage symbols (template
// instantiations, e.g. the std::call_once trampoline of gemm_info_t<...>::jit_init). Linked into
// one program with Debian's oneDNN 2.6, the dynamic linker binds 63 of libdnnl's own references
// into libtorch_cpu.so (seen with LD_DEBUG=bindings on the H200), so oneDNN 2.6 runs pieces of
// 3.x and execute() fails. A module opened with RTLD_LOCAL | RTLD_DEEPBIND resolves its own and
// its dependencies' symbols (libdnnl) first, before those already loaded, and adds none of them
// to the global scope. The module is never closed: the backend's code lives in it.
//
// It needs one libstdc++ in the process: libdnnl's inline std::call_once writes libstdc++.so's
// thread-locals (the module's scope finds them there first) and the shared library's trampoline
// reads them through the global scope. A program holding copies from libstdc++.a would answer
// that lookup first, and the trampoline would call a null pointer
// (tests/build/test_libstdcxx_link.sh).
#include <dlfcn.h>

#include <string>

#include "baselines/conv/backends.hpp"
#include "baselines/module_loader.hpp"
#include "baselines/ops/backends.hpp"

namespace {

// Stands in for a suite's backend when the module cannot be loaded: every case is skipped with
// the loader's error.
template <typename Backend, typename Problem, typename HostData, typename Instance>
class MissingBackend final : public Backend {
 public:
  explicit MissingBackend(std::string why) : why_(std::move(why)) {}
  std::string name() const override { return "onednn_cpu"; }
  std::string device() const override { return "cpu"; }
  std::string library_version() const override { return "not loaded"; }
  bench::Support available() const override { return bench::Support::no(why_); }
  bench::Support check_support(const Problem&) const override { return bench::Support::no(why_); }
  std::unique_ptr<Instance> prepare(const Problem&, const HostData&) const override {
    return nullptr;
  }

 private:
  std::string why_;
};

// AddressSanitizer refuses RTLD_DEEPBIND (it would bypass its interceptors): a sanitized build
// opens the module without it, which is safe beside a LibTorch that bundles no oneDNN of its own
// (Debian's, which the sanitizer job uses).
#if defined(MYCONV_SANITIZED)
constexpr int kDlopenFlags = RTLD_NOW | RTLD_LOCAL;
#else
constexpr int kDlopenFlags = RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif

// The module, opened once; null with the loader's errors in *why when it cannot be.
void* onednn_module(std::string* why) {
  static std::string errors;
  static void* const handle = bench::open_module({"MYCONV_ONEDNN_MODULE", MYCONV_ONEDNN_INSTALL_DIR,
                                                  MYCONV_ONEDNN_MODULE, MYCONV_ONEDNN_MODULE_NAME},
                                                 kDlopenFlags, &errors);
  if (!handle) *why = "oneDNN module not loaded: " + errors;
  return handle;
}

// A suite's backend from the module's entry point `symbol`, or the stand-in saying why not.
template <typename Backend, typename Missing>
std::unique_ptr<Backend> load(const char* symbol) {
  std::string why;
  void* handle = onednn_module(&why);
  if (!handle) return std::make_unique<Missing>(why);
  using Factory = Backend* (*)();
  auto factory = reinterpret_cast<Factory>(dlsym(handle, symbol));
  if (!factory)
    return std::make_unique<Missing>(std::string("oneDNN module: no entry point ") + symbol);
  return std::unique_ptr<Backend>(factory());
}

}  // namespace

namespace conv {
std::unique_ptr<Backend> make_onednn_cpu_backend(const BackendOptions&) {
  return load<Backend, MissingBackend<Backend, Problem, HostData, Instance>>(
      "myconv_onednn_cpu_backend_new");
}
}  // namespace conv

namespace ops {
std::unique_ptr<Backend> make_onednn_cpu_ops_backend(const BackendOptions&) {
  return load<Backend, MissingBackend<Backend, Problem, HostData, Instance>>(
      "myconv_onednn_cpu_ops_backend_new");
}
}  // namespace ops
