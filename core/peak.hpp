// Measured limits of the machine, taken once at a driver's start, against which the op suite
// scores bandwidth efficiency (never a table of known devices with a fallback figure).
#pragma once

#include <nlohmann/json.hpp>

namespace bench {

// The host's copy bandwidth, STREAM's copy kernel (a[i] = b[i]) over two arrays of
// kCpuCopyArrayMiB each (larger than any CPU's caches), one thread per hardware thread, each
// thread touching its own part first; best of 5 after a warm-up. Bytes counted as STREAM counts
// them: each element read once and written once. {"measured_copy_gbs", "threads", "array_mib",
// "method"}. Never throws: {"why": ...} when the arrays cannot be allocated.
nlohmann::ordered_json measure_cpu_copy_bandwidth();

inline constexpr int kCpuCopyArrayMiB = 512;

}  // namespace bench
