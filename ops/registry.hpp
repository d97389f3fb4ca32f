// Every op backend the suite knows, built or not, created in one explicit function.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/backend.hpp"

namespace ops {

struct RegistryEntry {
  std::string name;
  std::string device;  // "cpu" or "cuda"
  std::string summary;
  std::unique_ptr<Backend> backend;  // null when not built into this binary
  std::string why_missing;           // set when backend is null
};

// All known backends in report order; see registry.cpp for what each needs.
std::vector<RegistryEntry> make_registry(const BackendOptions& options);

// Names of all known backends (built or not), in report order.
std::vector<std::string> known_backend_names();

// The backend every score is against on a device: libtorch_cpu or libtorch_cuda.
std::string reference_backend(const std::string& device);

}  // namespace ops
