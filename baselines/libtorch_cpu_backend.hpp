// The libtorch_cpu backend, written once for every suite (baselines/conv/libtorch_cpu.cpp,
// baselines/ops/libtorch_cpu.cpp): LibTorch on CPU tensors, its instance the suite's own
// (constructed from the problem and its host data); tf32 is unsupported (a GPU tensor-core math
// mode, which LibTorch has none of on the CPU).
#pragma once

#include <memory>
#include <string>
#include <utility>

#include <torch/version.h>

#include "core/dtype.hpp"
#include "core/runner.hpp"

namespace bench::libtorch {

template <class BackendT, class InstanceT, class ProblemT, class HostDataT>
class CpuBackend final : public BackendT {
 public:
  using InstancePtr = decltype(std::declval<const BackendT&>().prepare(
      std::declval<const ProblemT&>(), std::declval<const HostDataT&>()));

  std::string name() const override { return "libtorch_cpu"; }
  std::string device() const override { return "cpu"; }
  std::string library_version() const override { return "LibTorch " TORCH_VERSION; }
  Support check_support(const ProblemT& p) const override {
    if (p.dtype == DataType::tf32)
      return Support::no("tf32 is a GPU tensor-core math mode; LibTorch has none on the CPU");
    return Support::yes();
  }
  InstancePtr prepare(const ProblemT& p, const HostDataT& data) const override {
    return std::make_unique<InstanceT>(p, data);
  }
};

}  // namespace bench::libtorch
