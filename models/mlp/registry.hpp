// Every MLP backend the suite knows, built or not, created in one explicit function.
#pragma once

#include <string>
#include <vector>

#include "core/registry.hpp"
#include "models/mlp/backend.hpp"

namespace mlp {

struct BackendOptions {};
using RegistryEntry = bench::RegistryEntry<Backend>;

// All known backends in report order; see registry.cpp for what each needs.
std::vector<RegistryEntry> make_registry();
std::vector<std::string> known_backend_names();

}  // namespace mlp
