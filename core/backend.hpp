// The backend interface every suite shares (CUTLASS's Operation): what a backend is (name,
// device, library version, whether it runs here) and, typed on the suite's problem, input data
// and prepared case, whether it runs a problem and how it prepares one. conv/backend.hpp and
// ops/backend.hpp name it for their types; models/mlp/backend.hpp adds the MLP suite's members.
#pragma once

#include <memory>
#include <string>

#include "core/runner.hpp"

namespace bench {

template <class Problem, class HostData, class Instance>
class SuiteBackend {
 public:
  virtual ~SuiteBackend() = default;
  virtual std::string name() const = 0;
  virtual std::string device() const = 0;  // "cpu" or "cuda"
  // Version of the library behind the backend, e.g. "oneDNN 2.6.3", "CUDA 13.0 (ours)".
  virtual std::string library_version() const = 0;
  // Whether the backend can run here at all (e.g. a CUDA device exists).
  virtual Support available() const { return Support::yes(); }
  // Whether the backend can run p, judged from the problem alone; otherwise a reason naming what
  // is missing, e.g. "CUB has no layernorm".
  virtual Support check_support(const Problem& p) const = 0;
  // Allocates buffers and copies the inputs in, converted to the problem's dtype (not timed).
  virtual std::unique_ptr<Instance> prepare(const Problem& p, const HostData& data) const = 0;
};

// The runner's hooks (core/runner.hpp) that every backend fills alike: whether it is built (why
// not otherwise) and whether it runs here. The suite adds check_support, prepare and the check.
template <class Backend>
CaseHooks backend_hooks(const Backend* backend, const std::string& why_missing) {
  CaseHooks hooks;
  hooks.built = backend != nullptr;
  hooks.why_missing = why_missing;
  if (backend) hooks.available = [backend] { return backend->available(); };
  return hooks;
}

}  // namespace bench
