// The check of an output against its float64 reference where both lie in device memory: compare()'s
// per-element arithmetic (core/compare.hpp) as one reduction on the GPU, and the decision taken
// from the gathered sums by the same finish_compare the host check uses. Only the sums (and, for an
// output that fails, its first mismatching values) leave the device.
#pragma once

#include <string>

#include "core/compare.hpp"

namespace bench {

// Compares out (out.count values of out.dtype's storage type, on the current device) with ref
// (out.count doubles on the same device) after the work already queued on out.stream. Returns ""
// and fills *result as compare() would (the same counts, maximum, first mismatches and decision;
// rel_l2_err within rounding: its sums run in another order), or why it could not (a CUDA error,
// then cleared). Synchronous; never throws.
std::string compare_on_device(const DeviceValues& out, const double* ref, const Tolerance& tol,
                              Correctness* result);

}  // namespace bench
