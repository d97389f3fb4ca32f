// Every op backend the suite knows, built or not, created in one explicit function.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "ops/backend.hpp"

namespace ops {

using RegistryEntry = bench::RegistryEntry<Backend>;

// All known backends in report order; see registry.cpp for what each needs.
std::vector<RegistryEntry> make_registry(const BackendOptions& options);

// Names of all known backends (built or not), in report order.
std::vector<std::string> known_backend_names();

// The backend every score is against on a device: libtorch_cpu or libtorch_cuda.
std::string reference_backend(const std::string& device);

}  // namespace ops
