// The op suite's figures of merit, derived from measured results and the machine's measured
// limits (system.bandwidth, system.matmul_ceiling): bandwidth and its efficiency against the
// measured copy bandwidth of the backend's device, matmul throughput against the measured matmul
// ceiling, the speed-up against PyTorch on the same device, and Genesis's score band; and the
// tables that show them (console, Markdown).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace ops {

// The backend every score is against on a device: libtorch_cpu or libtorch_cuda.
std::string reference_backend(const std::string& device);

// Genesis's bands of PyTorch time / backend time: >= 0.9 excellent, 0.7-0.9 good, 0.5-0.7 fair,
// 0.2-0.5 poor, < 0.2 critical.
std::string score_band(double ratio);

// PyTorch's result of r's problem on r's device in r's timing mode (real or pure), if it is among
// the results.
const bench::Result* reference_of(const std::vector<bench::Result>& results,
                                  const bench::Result& r);

// Fills r.metrics (results/README.md): bandwidth_gbs, peak_bandwidth_gbs, bandwidth_efficiency,
// gflops, and for matmul matmul_ceiling_tflops and compute_efficiency; speedup_vs_pytorch and
// score_band when `reference` (PyTorch's result of the same problem, device and timing mode)
// passed. Only for a passed r with a time; a figure whose limit was not measured is left out.
void fill_metrics(bench::Result& r, const bench::Result* reference,
                  const nlohmann::ordered_json& system);

// One line per case: time, GB/s, % of the measured peak, speed-up and band.
void print_scores(std::ostream& os, const std::vector<bench::Result>& results);

// The results as a Markdown table, written atomically to path.
void write_markdown(const std::string& path, const bench::ResultSet& set);

}  // namespace ops
