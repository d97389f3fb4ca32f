// The halide_cuda backend's schedules (internal to baselines/conv/halide_cuda*.cpp): which
// --halide-schedule values exist on the GPU, how each is applied to the algorithm of
// halide_conv.hpp, and the HalideConvOptions each needs. Everything here is Halide only: nothing
// touches a device, so the schedules lower and compile to PTX on machines without one.
#pragma once

#include <string>
#include <vector>

#include <Halide.h>

#include "baselines/conv/halide_conv.hpp"

namespace conv {

// Where a schedule's block, thread and lane loops go: to the GPU, or (to check its tiling on a
// machine without one, see halide_cuda_run_tiling_on_host) left as serial loops on the host, with
// the accumulators in ordinary memory. Everything else is the same, but for the tiled schedule's
// unrolling, which the host check leaves out (LLVM's x86 back end takes minutes over it).
enum class HalideLoops { gpu, host };

// Halide 14's PTX code generation fails on BFloat(16): LLVM aborts the process ("Copy one register
// into another with a different width") on a bf16 load widened to fp32. bf16 tensors are
// therefore handled as their bits, converted with integer arithmetic (HalideConvOptions).
constexpr bool kHalideCudaBf16AsBits = true;

// The --halide-schedule values halide_cuda runs: "manual" (the shared-memory tiled schedule where
// it applies, else manual_basic), "manual_basic" (register tiles per thread, no shared memory),
// "li2018" (Halide 14's GPU autoscheduler).
const std::vector<std::string>& halide_cuda_schedules();

// The tile presets of the tiled schedule (--halide-tile): "" means the default, the first one.
const std::vector<std::string>& halide_cuda_tiles();

// Empty when halide_cuda runs this schedule with this tile preset, else why not.
std::string halide_cuda_schedule_unsupported(const std::string& schedule, const std::string& tile);

// The algorithm's options a schedule needs (clamped reads for the autoscheduler, bf16 as bits).
HalideConvOptions halide_cuda_conv_options(const std::string& schedule);

// Applies the schedule to a fresh algorithm h for target t; returns its description, which names
// the schedule that ran, its tile sizes and, where "manual" fell back to the basic schedule, why.
// Throws bench::Unsupported where the schedule cannot be applied (an unknown name, Li2018
// failing).
std::string apply_halide_cuda_schedule(HalideConv& h, const std::string& schedule,
                                       const std::string& tile, const std::string& plugin_dir,
                                       const Halide::Target& t,
                                       HalideLoops loops = HalideLoops::gpu);

// The shared-memory tiled schedule (halide_cuda_tiled.cpp) with tile preset `tile` ("" = the
// default) applied to h; returns its description. Where it cannot apply to h's problem it applies
// nothing, puts the reason in *why_not and returns "" (manual then runs manual_basic).
std::string apply_halide_cuda_tiled(HalideConv& h, const std::string& tile, HalideLoops loops,
                                    std::string* why_not);

// Li2018's plugin library in dir ("" = the one found at build time), and the machine parameters
// it is given (reported with the results).
std::string halide_cuda_li2018_plugin(const std::string& dir);
Halide::MachineParams halide_cuda_li2018_params();

}  // namespace conv
