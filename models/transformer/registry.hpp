// Every implementation of the transformer suite, built or not, in one explicit table
// (registry.cpp) with the reason where one is missing: libtorch_eager (CPU and CUDA),
// libtorch_graph (CUDA graphs, a CUDA LibTorch only) and hf_transformers (the external Python
// reference, scripts/references/hf_reference.py, which writes the same result records).
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "core/runner.hpp"
#include "models/transformer/generate.hpp"
#include "models/transformer/problem.hpp"

namespace transformer {

using bench::Support;

class Implementation {
 public:
  Implementation(std::string name, std::string device, DecodeMode mode)
      : name_(std::move(name)), device_(std::move(device)), mode_(mode) {}
  const std::string& name() const { return name_; }
  const std::string& device() const { return device_; }
  DecodeMode mode() const { return mode_; }
  std::string library_version() const;
  // Whether it can run here at all (a CUDA device for the cuda ones).
  Support available() const;
  // Whether it runs p on cfg: positions within the model's, dtypes, training lengths.
  Support check_support(const Problem& p, const ModelConfig& cfg) const;

 private:
  std::string name_, device_;
  DecodeMode mode_;
};

struct RegistryOptions {};
using RegistryEntry = bench::RegistryEntry<Implementation>;

std::vector<RegistryEntry> make_registry();

// The implementations --backend asks for (every one built for the device when none is named),
// on `device` ("cpu" or "cuda"), in the known order; with available_only only those that can run
// here (bench::UsageError when none can). One asked that runs only on the other device is an
// entry without a backend ("NAME does not run on DEVICE"), kept in `elsewhere`.
std::vector<const RegistryEntry*> select_implementations(const std::vector<RegistryEntry>& registry,
                                                         const std::vector<std::string>& names,
                                                         const std::string& device,
                                                         bool available_only,
                                                         std::deque<RegistryEntry>& elsewhere);
std::vector<std::string> known_implementation_names();
// Whether LibTorch sees a CUDA device.
bool cuda_available();

// --device: auto, cpu, cuda (device 0), or the CUDA device's index N (also cuda:N), as the other
// programs' --device N. A CUDA device named (not auto) is made current through select_cuda (the
// core's device facts, memory gate and services see it too). UsageError where LibTorch finds no
// such device.
c10::Device resolve_device(const std::string& d, const std::function<void(int)>& select_cuda);

}  // namespace transformer
