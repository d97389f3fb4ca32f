// The halide_cuda backend's schedules, reachable without a GPU: lowering and compiling a schedule
// for the CUDA target needs no device (the driver only sees the PTX at the first run), and the
// manual schedules' tiling also runs on the host with its GPU loops left serial, so tests check
// both on machines without a GPU.
#pragma once

#include <string>

#include "conv/backend.hpp"
#include "conv/data.hpp"
#include "conv/problem.hpp"

namespace conv {

// Applies the schedule options select (halide_schedule "manual", "manual_basic" or "li2018";
// halide_tile for manual) to p's algorithm and JIT-compiles it for the CUDA target of this
// machine's device (without a device: the highest CUDA capability Halide 14 knows), touching no
// device. Returns the schedule's description (what algorithm() reports). Throws
// bench::Unsupported where the schedule cannot be applied, std::runtime_error for a Halide
// compile error.
std::string halide_cuda_compile_only(const Problem& p, const BackendOptions& options);

// What the CUDA target makes of a schedule, for inspection without a GPU.
struct HalideCudaLowering {
  std::string algorithm;  // the schedule's description
  // The lowered Stmt just before the GPU loops become kernels, as Halide prints it: loops
  // "gpu_block<CUDA>", "gpu_thread<CUDA>", "gpu_lane<CUDA>"; allocations "allocate NAME[TYPE *
  // SIZE] in GPUShared" (or Register, Stack, Heap); "gpu_thread_barrier" calls.
  std::string stmt;
  std::string ptx;  // the PTX of the kernels (empty when nothing ran on the GPU)
};

// Lowers and compiles p for the CUDA target with the schedule options select, as
// halide_cuda_compile_only does, and returns the Stmt and PTX. Throws as that does.
HalideCudaLowering halide_cuda_lower(const Problem& p, const BackendOptions& options);

// A manual schedule's tiling (options.halide_schedule "manual" or "manual_basic", with its
// halide_tile) checked without a GPU: the same splits, tiles, compute_at and staging, with the
// block, thread and lane loops left serial (and the tiled schedule's register tile not unrolled),
// JIT-compiled for the host CPU and run on data's inputs. Writes p.dst_elements() floats, in p's
// layout, to out. Throws std::runtime_error for a Halide error (e.g. a tile reaching outside a
// buffer).
void halide_cuda_run_tiling_on_host(const Problem& p, const HostData& data, float* out,
                                    const BackendOptions& options);

}  // namespace conv
