// What the backend tests share when they run cases through the runner: short sampling (a case
// takes milliseconds; quicker where only the status counts), one case of a problem on a backend,
// and a result's one-line description for failure messages.
#pragma once

#include <cmath>
#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"
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

// The message of the UsageError that parse(text) throws, or "accepted" where it throws none: a
// descriptor parser's rejection, for the problem tests.
template <class Parse>
std::string why_rejected_by(Parse&& parse, const std::string& text) {
  try {
    parse(text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "accepted";
}

// A suite's registry (experiments/registry/): each entry's name once, its device cpu or cuda, and
// either a backend that gives the entry's name and device and a library version, or the reason it
// is missing. Returns the names.
template <class Registry>
std::set<std::string> expect_well_formed_registry(const Registry& registry) {
  std::set<std::string> names;
  for (const auto& e : registry) {
    EXPECT_TRUE(names.insert(e.name).second) << e.name;
    EXPECT_TRUE(e.device == "cpu" || e.device == "cuda") << e.name;
    if (e.backend) {
      EXPECT_EQ(e.backend->name(), e.name);
      EXPECT_EQ(e.backend->device(), e.device);
      EXPECT_FALSE(e.backend->library_version().empty()) << e.name;
    } else {
      EXPECT_FALSE(e.why_missing.empty()) << e.name;
    }
  }
  return names;
}

// "problem: status reason", printed by a failed expectation (the tests compare statuses).
inline std::string describe(const Result& r) {
  return r.problem + ": " + to_string(r.status) + " " + r.reason;
}

}  // namespace bench::testing
