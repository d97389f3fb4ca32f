// A case's identity in its record: what ran where (suite, backend, device) on which problem
// (descriptor, name, dtype). Every suite's record of a case starts with it (case_identity), a
// suite whose problem has the usual members takes the whole start from case_result, and the
// JSON writers put it first (put_identity).
#pragma once

#include <string>

#include "core/dtype.hpp"
#include "core/result.hpp"
#include "core/runner.hpp"

namespace bench {

inline Result case_identity(const std::string& suite, const std::string& backend,
                            const std::string& device, const std::string& problem,
                            const std::string& name, DataType dtype) {
  Result r;
  r.suite = suite;
  r.backend = backend;
  r.device = device;
  r.problem = problem;
  r.name = name;
  r.dtype = to_string(dtype);
  return r;
}

// The record of one case of a suite whose Problem has str(), name, dtype, flops(), bytes() and
// params(): its identity, work counts and the command line that reproduces it alone
// (options.command_prefix, `program` when that is empty, then --problem and --backend).
template <class Problem>
Result case_result(const std::string& suite, const std::string& program, const std::string& backend,
                   const std::string& device, const Problem& p, const CaseOptions& options) {
  Result r = case_identity(suite, backend, device, p.str(), p.name, p.dtype);
  r.flop = p.flops();
  r.bytes = p.bytes();
  r.params = p.params();
  r.command = (options.command_prefix.empty() ? program : options.command_prefix) + " --problem " +
              r.problem + " --backend " + backend;
  return r;
}

// Writes the identity's fields into j, in the order every record and trace file has them.
template <class Json>
void put_identity(Json& j, const Result& r) {
  j["suite"] = r.suite;
  j["backend"] = r.backend;
  j["device"] = r.device;
  j["problem"] = r.problem;
  j["name"] = r.name;
  j["dtype"] = r.dtype;
}

}  // namespace bench
