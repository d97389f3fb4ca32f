// The measured matmul ceiling of this GPU, for the op suite's system info (myops records it beside
// the datasheet peaks): what cuBLASLt reaches on a large square matmul per dtype, measured by the
// core's one ceiling measurement (core/matmul_ceiling.hpp). Defined in
// baselines/ops/cublaslt.cpp, so only in a build with CUDA (MYCONV_HAVE_CUDA); the registry
// (experiments/registry/ops.cpp gpu_limits) calls it.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"

namespace ops {

// Times a cuBLASLt 8192x8192x8192 matmul (row-major, random inputs, the heuristic's first
// algorithm, 32 MiB workspace) per dtype: the best of 5 timed calls after 2 warm-ups, by CUDA
// events. Returns {"method": "...", "tflops": {"fp32": x, "tf32": y, ...}}, a dtype whose run
// failed under "failed": {"fp16": "reason"}; without a usable GPU {"method": ..., "why": reason}.
// Takes about 2 s of GPU time per dtype; never throws.
nlohmann::ordered_json measure_matmul_ceiling(const std::vector<bench::DataType>& dtypes);

}  // namespace ops
