// bench::ActivitySource over CUPTI's activity API: kernels (CONCURRENT_KERNEL), copies (MEMCPY),
// sets (MEMSET) and the runtime and driver API calls that launched them (RUNTIME, DRIVER), with
// their correlation ids. CUPTI sees every context of the process, so the kernels of cuDNN,
// LibTorch, Halide's CUDA runtime and ours alike.
//
// Clock: CUPTI is given the trace clock (steady_clock) as its timestamp source
// (cuptiActivityRegisterTimestampCallback), so host and device events share one timeline. Where
// that registration fails, CUPTI timestamps (cuptiGetTimestamp) are mapped to the trace clock
// by a linear fit through two calibration points, taken at start() and at stop().
//
// Linking: libcupti needs no libcuda at load time, so a binary linked with it still starts where
// no driver exists; start() then fails with CUPTI's reason. In a process that also loads pip's
// LibTorch (whose kineto links its own libcupti.so.13), the dynamic loader keeps one library per
// soname: description() names the file that was loaded. No CUPTI subscriber is taken
// (cuptiSubscribe), so nothing clashes with kineto's callbacks; running under Nsight Systems,
// which owns CUPTI, start() fails and the case is traced without device activity.
//
// stop() detaches CUPTI (cuptiFinalize) until the next start(): an attached CUPTI slows later
// CUDA API calls even with no activity kind enabled, which would reach the timings of the cases
// that follow a traced one. (So do not combine with torch.profiler in the same process.)
#pragma once

#include <memory>

#include "core/trace.hpp"

namespace bench {

// The process's CUPTI activity recorder (CUPTI's activity state is process-wide; one recording
// at a time). Never throws; a failure shows at start().
std::unique_ptr<ActivitySource> make_cupti_activity_source();

}  // namespace bench
