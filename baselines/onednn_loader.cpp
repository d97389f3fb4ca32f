// Loads the oneDNN backend from its own module (libmyconv_onednn.so) with RTLD_DEEPBIND.
//
// Why: pip's LibTorch bundles oneDNN 3.x and exports its vague-linkage symbols (template
// instantiations, e.g. the std::call_once trampoline of gemm_info_t<...>::jit_init). Linked into
// one program with Debian's oneDNN 2.6, the dynamic linker binds 63 of libdnnl's own references
// into libtorch_cpu.so (seen with LD_DEBUG=bindings on the H200), so oneDNN 2.6 runs pieces of
// 3.x and execute() fails. A module opened with RTLD_LOCAL | RTLD_DEEPBIND resolves its own and
// its dependencies' symbols (libdnnl) first, before those already loaded, and adds none of them
// to the global scope. The module is never closed: the backend's code lives in it.
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "baselines/backends.hpp"

namespace conv {
namespace {

// Stands in for the backend when its module cannot be loaded: every case is skipped with the
// loader's error.
class MissingBackend final : public Backend {
 public:
  explicit MissingBackend(std::string why) : why_(std::move(why)) {}
  std::string name() const override { return "onednn_cpu"; }
  std::string device() const override { return "cpu"; }
  std::string library_version() const override { return "not loaded"; }
  Support available() const override { return Support::no(why_); }
  Support check_support(const Problem&) const override { return Support::no(why_); }
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

std::string executable_dir() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "";
  std::string p(path, static_cast<std::size_t>(n));
  return p.substr(0, p.find_last_of('/'));
}

}  // namespace

std::unique_ptr<Backend> make_onednn_cpu_backend(const BackendOptions&) {
  // Where to look: $MYCONV_ONEDNN_MODULE, the install tree's place beside the program
  // (PREFIX/bin/myconv -> PREFIX/lib/myconv/), the build tree's path, then beside the program's
  // build folder (build/experiments/myconv -> build/baselines/).
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("MYCONV_ONEDNN_MODULE")) candidates.emplace_back(env);
  candidates.push_back(executable_dir() +
                       "/../" MYCONV_ONEDNN_INSTALL_DIR "/" MYCONV_ONEDNN_MODULE_NAME);
  candidates.emplace_back(MYCONV_ONEDNN_MODULE);
  candidates.push_back(executable_dir() + "/../baselines/" MYCONV_ONEDNN_MODULE_NAME);
  std::string errors;
  for (const std::string& path : candidates) {
    void* handle = dlopen(path.c_str(), kDlopenFlags);
    if (!handle) {
      errors += std::string(errors.empty() ? "" : "; ") + dlerror();
      continue;
    }
    using Factory = Backend* (*)();
    auto factory = reinterpret_cast<Factory>(dlsym(handle, "myconv_onednn_cpu_backend_new"));
    if (!factory) return std::make_unique<MissingBackend>(path + ": no backend entry point");
    return std::unique_ptr<Backend>(factory());
  }
  return std::make_unique<MissingBackend>("oneDNN module not loaded: " + errors);
}

}  // namespace conv
