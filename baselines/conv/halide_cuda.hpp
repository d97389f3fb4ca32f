// The halide_cuda backend's schedules, reachable without a GPU: compiling a schedule for the CUDA
// target needs no device (the driver only sees the PTX at the first run), and the manual
// schedule's tiling also runs on the host with its GPU loops left serial, so tests check both on
// machines without a GPU.
#pragma once

#include <string>

#include "conv/backend.hpp"
#include "conv/data.hpp"
#include "conv/problem.hpp"

namespace conv {

// Applies the schedule options.halide_schedule selects ("manual" or "li2018") to p's algorithm
// and JIT-compiles it for the CUDA target of this machine's device (without a device: the
// highest CUDA capability Halide 14 knows), touching no device. Returns the schedule's
// description (what algorithm() reports). Throws bench::Unsupported where the schedule cannot be
// applied, std::runtime_error for a Halide compile error.
std::string halide_cuda_compile_only(const Problem& p, const BackendOptions& options);

// The manual schedule's tiling checked without a GPU: the same splits, tiles, unrolling and
// compute_at, with the block and thread loops left serial, JIT-compiled for the host CPU and run
// on data's inputs. Writes p.dst_elements() floats, in p's layout, to out. Throws
// std::runtime_error for a Halide error (e.g. a tile reaching outside a buffer).
void halide_cuda_run_tiling_on_host(const Problem& p, const HostData& data, float* out);

}  // namespace conv
