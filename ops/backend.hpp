// The op backend interface: one implementation of op problems. One file per backend (ours in
// ops/cuda/, the libraries' in baselines/ops/); all are registered in experiments/registry/ops.cpp.
//
// Life of one case (core/runner.hpp drives it; ops/bench.cpp gives it the op hooks):
//   check_support(p) -> prepare(p, data) [untimed: allocate, upload] -> compile() [timed as
//   compile_time_ms: plans, primitives, heuristics] -> poison_output(), run(), sync() [timed as
//   first_run_ms], read_output() [checked] -> run()/sync() samples [timed] -> destructor.
#pragma once

#include <memory>
#include <string>

#include "core/backend.hpp"
#include "core/runner.hpp"
#include "ops/data.hpp"
#include "ops/problem.hpp"

namespace ops {

using bench::Support;

// One prepared op case (core/runner.hpp: the life the runner gives it), with how its output is read
// for the check.
class Instance : public bench::Instance {
 public:
  // Copies the output to dst as float: p.output_elements() values, row-major in p.output_shape().
  virtual void read_output(float* dst) = 0;
};

// name, device, library_version, available, check_support(p) (judged from the op, dtype, rank
// and axes), prepare(p, data) (data.inputs converted to p.dtype): core/backend.hpp.
using Backend = bench::SuiteBackend<Problem, HostData, Instance>;

// Settings that select a backend's implementation.
struct BackendOptions {
  // Kernel variant of own_cuda, e.g. "2" ("" = the best for the op, the default). A variant that
  // does not exist for an op makes that case unsupported with the list of the op's variants.
  std::string variant;
};

}  // namespace ops
