// What the backend tests share when they run cases through the runner: short sampling (a case
// takes milliseconds; quicker where only the status counts), one case of a problem on a backend,
// and a result's one-line description for failure messages.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/runner.hpp"

namespace bench::testing {

// One warm-up, 2 samples at least, 1 to 20 ms of sampling.
inline CaseOptions tiny_case_options() {
  CaseOptions o;
  o.measure.warmup_iters = 1;
  o.measure.min_iters = 2;
  o.measure.min_time_ms = 1;
  o.measure.max_time_ms = 20;
  return o;
}

// No warm-up, 1 or 2 samples within 1 ms: for tests that run many cases and judge only their
// status and output.
inline CaseOptions quick_case_options() {
  CaseOptions o;
  o.measure.warmup_iters = 0;
  o.measure.min_iters = 1;
  o.measure.min_time_ms = 0;
  o.measure.max_time_ms = 1;
  o.measure.max_iters = 2;
  return o;
}

// The result of p's case (inputs of seed 1) on backend, through the suite's make_host_data and
// run_case (found by argument-dependent lookup on Problem) with tiny_case_options.
template <class Backend, class Problem>
Result run_on(const Backend& backend, const Problem& p) {
  const auto data = make_host_data(p, 1);
  return run_case(&backend, backend.name(), backend.device(), "", p, data, tiny_case_options())
      .result;
}

// The poison test of an instance (compiled) with n output values: its output read after
// poison_output() (all NaN when `poisoned`), then read after each of two runs, each run preceded
// by poison_output(). A backend that skips writing an output leaves NaN in `first` or `second`.
struct PoisonedRuns {
  bool poisoned = true;
  std::vector<float> first, second;
};
template <class Instance>
PoisonedRuns run_twice_after_poison(Instance& inst, std::size_t n) {
  PoisonedRuns r;
  r.first.resize(n);
  r.second.resize(n);
  inst.poison_output();
  inst.read_output(r.first.data());
  for (float v : r.first) r.poisoned = r.poisoned && std::isnan(v);
  for (std::vector<float>* out : {&r.first, &r.second}) {
    inst.poison_output();
    inst.run();
    inst.sync();
    inst.read_output(out->data());
  }
  return r;
}

// "problem: status reason", printed by a failed expectation (the tests compare statuses).
inline std::string describe(const Result& r) {
  return r.problem + ": " + to_string(r.status) + " " + r.reason;
}

}  // namespace bench::testing
