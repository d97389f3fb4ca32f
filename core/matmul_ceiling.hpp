// The measured matmul ceiling: what a library's GEMM reaches on a large square matmul here, the
// figure a suite's TFLOP/s are held against (never a datasheet's). One measurement for every
// suite: myops times cuBLASLt per dtype (baselines/ops/cublaslt.cpp, system.matmul_ceiling), mymlp
// each implementation's GEMM per device and dtype (models/mlp/bench.cpp,
// system.mlp_matmul_ceiling); a suite says which matmuls and how each call is timed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"

namespace bench {

// One matmul a ceiling is measured on.
struct CeilingMatmul {
  std::string backend;  // who runs it ("cublaslt", "libtorch_cpu")
  std::string device;   // "cpu" or "cuda"
  DataType dtype = DataType::fp32;
  std::string what;  // the matmul as the suite writes it ("mm:n8192:bf16"), for progress lines
  double flop = 0;   // of one call
  // Sets the matmul up, untimed (inputs, plan, workspace), and returns one timed call of it: runs
  // the matmul once and returns its time in ms (synchronized, or by device events). May throw.
  std::function<std::function<double()>()> prepare;
};

// Warm-up calls, then timed calls of which the best counts.
struct CeilingSampling {
  int warmups = 1;
  int timed = 3;
};

// Measures each matmul in order: prepare, sampling.warmups calls, then the best of sampling.timed
// calls, as TFLOP/s (flop / best time). before(m), when given, runs first (a "measuring" line).
// Returns {"method": method, "by_backend": {backend: {dtype: tflops}}, "tflops": {device: {dtype:
// the best of its backends}}, "failed": {backend: {dtype: reason}}}, each key made when its first
// entry is, in that order. Never throws: a matmul that throws is recorded under "failed".
nlohmann::ordered_json measure_matmul_ceiling(
    const std::string& method, const std::vector<CeilingMatmul>& matmuls, CeilingSampling sampling,
    const std::function<void(const CeilingMatmul&)>& before = {});

}  // namespace bench
