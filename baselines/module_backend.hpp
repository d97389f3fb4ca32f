// A backend that lives in a module of its own (module_loader.hpp), as the program sees it: its
// name, device and library version are known without the module, which is opened, and the real
// backend made by the module's entry point, only at the first call that needs the library (the
// first case's check_support or prepare; available() and library_version() too where
// ask_module is set and the precheck passes). --list-backends, --list-cases and cases of other
// backends never open it.
//
// The module links its own copies of the static libraries below it (core/, the suite): the
// entry point gets what the program has set in its copy (the suite's BackendOptions and
// --threads, bench::cpu_threads()) as arguments.
#pragma once

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <dlfcn.h>

#include "core/runner.hpp"

namespace bench {

struct ModuleBackendInfo {
  const char* name;
  const char* device;
  std::string library_version;  // the answer while the module is not asked
  // Whether the backend can run here, judged without the module (null: yes), e.g. whether the
  // module's file exists, or a CUDA device does.
  Support (*precheck)();
  // After the precheck passes, available() and library_version() are the module's (e.g. whether
  // LibTorch finds the GPU, which cuDNN it runs).
  bool ask_module;
  void* (*open_module)(std::string* why);  // the module, opened once; null with why
  const char* entry_point;                 // extern "C" Backend* (const Options*, int cpu_threads)
};

template <class Backend, class Problem, class HostData, class Instance, class Options>
class ModuleBackend final : public Backend {
 public:
  using EntryPoint = Backend* (*)(const Options*, int);

  ModuleBackend(ModuleBackendInfo info, Options options, int cpu_threads)
      : info_(std::move(info)), options_(std::move(options)), cpu_threads_(cpu_threads) {}

  std::string name() const override { return info_.name; }
  std::string device() const override { return info_.device; }
  std::string library_version() const override {
    if (info_.ask_module && precheck().ok)
      if (const Backend* b = loaded()) return b->library_version();
    return info_.library_version;
  }
  Support available() const override {
    const Support pre = precheck();
    if (!pre.ok || !info_.ask_module) return pre;
    const Backend* b = loaded();
    return b ? b->available() : Support::no(why_);
  }
  Support check_support(const Problem& p) const override {
    const Backend* b = loaded();
    return b ? b->check_support(p) : Support::no(why_);
  }
  std::unique_ptr<Instance> prepare(const Problem& p, const HostData& data) const override {
    const Backend* b = loaded();
    if (!b) throw std::runtime_error(why_);
    return b->prepare(p, data);
  }

 private:
  Support precheck() const { return info_.precheck ? info_.precheck() : Support::yes(); }

  // The module's backend, made at the first call; null with the reason in why_.
  const Backend* loaded() const {
    std::call_once(once_, [this] {
      void* handle = info_.open_module(&why_);
      if (!handle) return;
      auto entry = reinterpret_cast<EntryPoint>(dlsym(handle, info_.entry_point));
      if (!entry) {
        why_ = std::string(info_.name) + ": the module has no entry point " + info_.entry_point;
        return;
      }
      backend_.reset(entry(&options_, cpu_threads_));
      if (!backend_) why_ = std::string(info_.name) + ": the module's entry point made nothing";
    });
    return backend_.get();
  }

  ModuleBackendInfo info_;
  Options options_;
  int cpu_threads_;
  mutable std::once_flag once_;
  mutable std::unique_ptr<Backend> backend_;
  mutable std::string why_;
};

}  // namespace bench
