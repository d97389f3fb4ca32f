// Every op backend the suite knows, built or not, created in one explicit function.
// The op suite's manifest stands above the suite and baselines/ (it includes both), beside the
// drivers: STYLE.md's "Layers that only point down".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "ops/backend.hpp"
#include "ops/bench.hpp"

namespace ops {

using RegistryEntry = bench::RegistryEntry<Backend>;

// All known backends in report order; see ops.cpp for what each needs.
std::vector<RegistryEntry> make_registry(const BackendOptions& options);

// Names of all known backends (built or not), in report order.
std::vector<std::string> known_backend_names();

// The GPU's limits the scores are held against (SuiteRun::measure_gpu_limits): the current
// device's copy bandwidth and cuBLASLt's matmul ceiling (baselines/ops/matmul_ceiling.hpp); empty
// where the build has no CUDA.
using GpuLimits = decltype(SuiteRun::measure_gpu_limits);
GpuLimits gpu_limits();

}  // namespace ops
