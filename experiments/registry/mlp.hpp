// Every MLP backend the suite knows, built or not, created in one explicit function.
// The MLP suite's manifest stands above the suite and baselines/ (it includes both), beside the
// drivers: STYLE.md's "Layers that only point down".
#pragma once

#include <string>
#include <vector>

#include "core/registry.hpp"
#include "models/mlp/backend.hpp"

namespace mlp {

struct BackendOptions {};
using RegistryEntry = bench::RegistryEntry<Backend>;

// All known backends in report order; see mlp.cpp for what each needs.
std::vector<RegistryEntry> make_registry();
std::vector<std::string> known_backend_names();

}  // namespace mlp
