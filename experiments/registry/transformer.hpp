// Every implementation of the transformer suite, built or not, created in one explicit function
// (transformer.cpp) with the reason where one is missing. The transformer suite's manifest stands
// above the suite and baselines/ (it includes both), beside the drivers: STYLE.md's "Layers that
// only point down".
#pragma once

#include <string>
#include <vector>

#include "core/registry.hpp"
#include "models/transformer/backend.hpp"

namespace transformer {

struct BackendOptions {};

// All known implementations in report order; see transformer.cpp for what each needs.
std::vector<RegistryEntry> make_registry();
std::vector<std::string> known_implementation_names();

}  // namespace transformer
