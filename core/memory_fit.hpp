// Whether a case fits in memory, decided before it runs: the suite estimates the host and device
// bytes of each case from its problem and dtype (conv/data.hpp, ops/data.hpp,
// models/mlp/problem.hpp, models/transformer/memory.hpp), the core compares them with the memory
// there. When no case of an invocation fits, the invocation is refused (exit 2, both numbers
// named); inside a sweep where only some do not fit, those cases are recorded `unsupported` with
// both numbers and the rest run.
#pragma once

#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace bench {

// What one case needs at least: its tensors (inputs, outputs, the reference, the backend's own
// copies), in bytes. Workspaces a library picks at run time are not known before and not counted.
struct MemoryNeed {
  double host_bytes = 0;
  double device_bytes = 0;  // 0 for a case on the CPU
};

// The memory there. 0 = not known (then that side is not checked).
struct MemoryAvailable {
  double host_bytes = 0;    // /proc/meminfo MemAvailable
  double device_bytes = 0;  // free memory of the current CUDA device (cudaMemGetInfo)
  std::string host_source = "MemAvailable", device_source = "cudaMemGetInfo";
};

// The host's side: MemAvailable, at most MYCONV_MEMORY_LIMIT_BYTES where that is set (a cap a
// user puts on a sweep on a shared machine; the tests use it for a host of known size). Throws
// UsageError when the variable is not a positive integer.
MemoryAvailable host_memory_available();
// Caps a device's free bytes by MYCONV_MEMORY_LIMIT_BYTES as above (0 stays 0: no device).
void apply_memory_limit_to_device(MemoryAvailable& a);

// "1.5 GiB", "320 MiB", "12 KiB", "100 B"; past 1024 TiB in TiB with an exponent.
std::string bytes_text(double bytes);

// "" when need fits, else why not, both numbers named: "needs about 3.2 TiB of host memory
// (estimate), 7.8 GiB available (MemAvailable)".
std::string memory_shortfall(const MemoryNeed& need, const MemoryAvailable& available);

// The record's extra.memory: the estimate and what was available, in bytes.
nlohmann::ordered_json memory_json(const MemoryNeed& need, const MemoryAvailable& available);

// identity recorded as unsupported because it does not fit: reason "does not fit in memory: "
// + shortfall, extra.memory filled.
Result memory_unsupported(Result identity, const std::string& shortfall, const MemoryNeed& need,
                          const MemoryAvailable& available);

// The whole invocation: every case that would run, checked once before any runs.
class MemoryGate {
 public:
  explicit MemoryGate(MemoryAvailable available) : available_(std::move(available)) {}
  const MemoryAvailable& available() const { return available_; }
  // The case's shortfall ("" when it fits); remembered for refuse_if_nothing_fits.
  std::string check(const std::string& case_name, const MemoryNeed& need);
  // Throws UsageError when cases were checked and none fits: "CASE does not fit in memory: needs
  // ..., ... available; no case of this invocation fits" (the case needing the least named).
  void refuse_if_nothing_fits() const;

 private:
  MemoryAvailable available_;
  int checked_ = 0, fitting_ = 0;
  std::string least_case_, least_shortfall_;
  double least_need_ = 0;
};

}  // namespace bench
