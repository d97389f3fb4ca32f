// What every LibTorch user shares, whatever its suite (the backends in baselines/conv/,
// baselines/ops/ and baselines/mlp/, the transformer suite in models/transformer/): our dtype as
// an ATen scalar type, and ATen's errors as the case's status. Header-only; only code built with
// LibTorch includes it.
#pragma once

#include <stdexcept>
#include <string>

#include <ATen/Parallel.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include "core/cpu_threads.hpp"
#include "core/dtype.hpp"
#include "core/error.hpp"

namespace bench::libtorch {

// Storage type of dt: tf32 is FP32 storage (its math mode is a separate, global switch).
inline c10::ScalarType scalar_type(DataType dt) {
  switch (dt) {
    case DataType::fp16:
      return c10::ScalarType::Half;
    case DataType::bf16:
      return c10::ScalarType::BFloat16;
    default:
      return c10::ScalarType::Float;
  }
}

// --threads (core/cpu_threads.hpp) on LibTorch's CPU kernels: at::set_num_threads(N) where asked
// and not already so; nothing otherwise (LibTorch's default).
inline void apply_cpu_threads() {
  const int n = cpu_threads();
  if (n > 0 && at::get_num_threads() != n) at::set_num_threads(n);
}

// An ATen error as the case's status: a kernel missing for the dtype is "unsupported" (reason
// prefixed by where, e.g. "LibTorch 2.11.0 on CUDA"), anything else a failure. First line only.
[[noreturn]] inline void rethrow(const c10::Error& e, const std::string& where) {
  const std::string what = e.what_without_backtrace();
  const std::string line = what.substr(0, what.find('\n'));
  if (what.find("not implemented for") != std::string::npos ||
      what.find("CUDNN_STATUS_NOT_SUPPORTED") != std::string::npos)
    throw Unsupported(where + ": " + line);
  throw std::runtime_error(line);
}

}  // namespace bench::libtorch
