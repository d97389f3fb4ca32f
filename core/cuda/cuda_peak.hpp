// Measured limits of a CUDA device (core/peak.hpp has the host's): the copy bandwidth the op
// suite scores efficiency against, timed once per device at the driver's start.
#pragma once

#include <nlohmann/json.hpp>

namespace bench {

// A device-to-device cudaMemcpyAsync of kCudaCopyMiB (far larger than L2), timed with CUDA events,
// best of 10 after 2 warm-ups; read + write bytes counted (the traffic a copy kernel makes).
// {"index", "name", "measured_copy_gbs", "theoretical_gbs" (from the device's memory clock and bus
// width), "method"}. Never throws: {"index", "why"} when the device cannot be measured.
nlohmann::ordered_json measure_cuda_copy_bandwidth(int device);

inline constexpr int kCudaCopyMiB = 1024;

}  // namespace bench
