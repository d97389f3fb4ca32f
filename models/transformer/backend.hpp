// The transformer suite's backend interface: one implementation of generation (and of the
// training step) over the suite's model (model.hpp). Every backend runs the same harness
// (generate.hpp: prefill on the model, then one timed decode step per token from the static
// cache); a backend says how its decode steps run (its DecodeMode) and, where they are replayed
// from a CUDA graph, captures that graph. The library backends are in baselines/transformer/
// (libtorch_cpu, libtorch_cuda, libtorch_graph), ours in cuda/ (own_cuda); all are registered in
// experiments/registry/transformer.cpp, with hf_transformers (the external Python reference,
// scripts/references/hf_reference.py, which writes the same result records).
//
// Life of one case (bench.cpp gives core/runner.hpp the hooks): available() and
// check_support(p, cfg) -> the model made or reused (ModelCache) -> a Generator over it with the
// backend's mode and decode_capture(); prepare() captures the step [timed as compile_time_ms] ->
// run()/finish() samples -> the last logits checked against a full recompute.
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

class Backend {
 public:
  // capture: the decode step captured into a CUDA graph (graph and own modes); empty for the
  // modes that run their steps as they come.
  Backend(std::string name, std::string device, DecodeMode mode, DecodeCapture capture = {})
      : name_(std::move(name)),
        device_(std::move(device)),
        mode_(mode),
        capture_(std::move(capture)) {}
  virtual ~Backend() = default;
  const std::string& name() const { return name_; }
  const std::string& device() const { return device_; }
  DecodeMode mode() const { return mode_; }
  const DecodeCapture& decode_capture() const { return capture_; }
  std::string library_version() const;
  // Whether it can run here at all (a CUDA device for the cuda ones).
  Support available() const;
  // Whether it runs p on cfg: positions within the model's, dtypes, training lengths; a backend
  // with limits of its own (own_cuda's kernels) adds them.
  virtual Support check_support(const Problem& p, const ModelConfig& cfg) const;

 private:
  std::string name_, device_;
  DecodeMode mode_;
  DecodeCapture capture_;
};

using RegistryEntry = bench::RegistryEntry<Backend>;

// The implementations --backend asks for (every one built for the device when none is named),
// on `device` ("cpu" or "cuda"), in the registry's order; with available_only only those that can
// run here (bench::UsageError when none can). One asked that runs only on the other device is an
// entry without a backend ("NAME does not run on DEVICE"), kept in `elsewhere`.
std::vector<const RegistryEntry*> select_implementations(const std::vector<RegistryEntry>& registry,
                                                         const std::vector<std::string>& names,
                                                         const std::string& device,
                                                         bool available_only,
                                                         std::deque<RegistryEntry>& elsewhere);
// Whether LibTorch sees a CUDA device.
bool cuda_available();

// --device: auto, cpu, cuda (device 0), or the CUDA device's index N (also cuda:N), as the other
// programs' --device N. A CUDA device named (not auto) is made current through select_cuda (the
// core's device facts, memory gate and services see it too). UsageError where LibTorch finds no
// such device.
c10::Device resolve_device(const std::string& d, const std::function<void(int)>& select_cuda);

}  // namespace transformer
