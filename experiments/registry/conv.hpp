// Every backend the suite knows, built or not, created in one explicit function.
// The conv suite's manifest stands above the suite and baselines/ (it includes both), beside the
// drivers: STYLE.md's "Layers that only point down".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "conv/backend.hpp"
#include "conv/data.hpp"
#include "core/registry.hpp"

namespace conv {

using RegistryEntry = bench::RegistryEntry<Backend>;

// All known backends in report order; see conv.cpp for what each needs.
std::vector<RegistryEntry> make_registry(const BackendOptions& options);

// The float64 reference on the GPU for make_host_data (conv/cuda/reference_conv_cuda.hpp), or
// nullptr when built without CUDA.
DeviceReferenceConv device_reference();

// Names of all known backends (built or not), in report order.
std::vector<std::string> known_backend_names();

}  // namespace conv
