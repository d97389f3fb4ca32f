// The measured matmul ceiling the MLP suite's TFLOP/s are held against: per (device, dtype) the
// best TFLOP/s of every available backend's GEMM on a square matmul.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/registry.hpp"
#include "core/result.hpp"
#include "models/mlp/backend.hpp"
#include "models/mlp/problem.hpp"

namespace mlp {

// system.mlp_matmul_ceiling (results/README.md): for each dtype of `problems` and each selected
// backend that runs it, a square n^3 matmul (n_cuda on the GPU, n_cpu on the CPU), random
// inputs, best of 3 synchronized calls after one warm-up, host clock; one "measuring" line each on
// stdout. A backend that throws is recorded under "failed".
nlohmann::ordered_json measure_ceilings(
    const std::vector<const bench::RegistryEntry<Backend>*>& selected,
    const std::vector<Problem>& problems, std::int64_t n_cpu, std::int64_t n_cuda);

// The ceiling of r's device and dtype in `ceilings`, where measured.
std::optional<double> ceiling_of(const nlohmann::ordered_json& ceilings, const bench::Result& r);

}  // namespace mlp
