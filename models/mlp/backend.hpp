// The MLP suite's backend interface: one implementation of run_mlp (and of the square matmul its
// GEMMs are made of). One file per backend in baselines/mlp/; all registered in
// experiments/registry/mlp.cpp.
//
// Life of one case (core/runner.hpp drives it; models/mlp/bench.cpp gives it the hooks):
//   check_support(p) -> prepare(p, data) [untimed: model built, parameters and input uploaded] ->
//   compile() [timed as compile_time_ms: warm-up call, graph capture, cuBLASLt heuristics] ->
//   poison_output(), run(), sync() [first_run_ms], loss() and gradients() [checked against float64]
//   -> run()/sync() samples [timed: one sample = one run_mlp call] -> second check ->
//   time_phases() and peak_memory_bytes() [after_sampling] -> destructor.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/runner.hpp"
#include "models/mlp/data.hpp"
#include "models/mlp/problem.hpp"

namespace mlp {

using bench::Support;

// Per-step samples of the forward pass (with the loss) and of the backward pass, in ms.
struct PhaseTimes {
  std::vector<double> forward_ms, backward_ms;
  std::string clock;  // how they were taken, e.g. "CUDA events around each phase"
};

// One prepared MLP case. run() is one call of run_mlp: the gradients set to zero (or to none),
// then num_steps steps of forward, loss and backward, gradients accumulated.
class Instance : public bench::Instance {
 public:
  // The loss of the last step of the last run() (synchronizes).
  virtual double loss() = 0;
  // Every parameter's gradient after the last run(), as float, in parameter_names() order
  // (weights [out][in]).
  virtual std::vector<std::vector<float>> gradients() = 0;
  // Times `steps` single steps with the forward and the backward apart.
  virtual PhaseTimes time_phases(int steps) = 0;
  // The peak of device memory held during one call (parameters, input, activations, gradients,
  // workspaces), or nullopt with the reason in *why.
  virtual std::optional<std::int64_t> peak_memory_bytes(std::string* why) = 0;
  // --profile with LibTorch's profiler: one call of run_mlp with the forward and the backward of
  // each step in named ranges (RECORD_FUNCTION scopes). Backends profiled by CUPTI leave it.
  virtual void run_for_profile() { run(); }
};

// One prepared square matmul case (--matmul): run() computes C = A B.
class MatmulInstance : public bench::Instance {
 public:
  // C's elements at the given row-major indices, as double (synchronizes).
  virtual std::vector<double> read_elements(const std::vector<std::int64_t>& index) = 0;
};

// name, device, library_version, available, check_support(p), prepare(p, data): core/backend.hpp;
// and what the MLP suite asks beyond them.
class Backend : public bench::SuiteBackend<MlpProblem, MlpData, Instance> {
 public:
  virtual Gelu gelu() const = 0;
  // Which profiler sees its work under --profile: "libtorch" (Kineto / the LibTorch profiler) or
  // "cupti" (the core's CUPTI tracer).
  virtual std::string profiler() const = 0;
  // The GEMM the implementation is made of, on a square matmul; no where it has none of its own.
  virtual Support check_matmul_support(const MatmulProblem& p) const = 0;
  virtual std::unique_ptr<MatmulInstance> prepare_matmul(const MatmulProblem& p,
                                                         const MatmulData& data) const = 0;
};

}  // namespace mlp
