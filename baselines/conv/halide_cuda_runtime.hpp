// The CUDA side of Halide's JIT for the halide_cuda backend (internal to
// baselines/conv/halide_cuda*.cpp): the CUDA target, the driver's functions reached through
// cudart, and the JIT hooks that put Halide's kernels on a stream of ours.
//
// CUDA context and stream. Halide 14's CUDA runtime, left alone, creates a context of its own
// (cuCtxCreate) and launches on that context's legacy default stream, so CUDA events recorded by
// cudart, which works on the device's primary context, would not bracket Halide's kernels. Halide
// 14's JIT has per-call hooks for exactly this (JITHandlers::custom_cuda_acquire_context,
// custom_cuda_release_context, custom_cuda_get_stream, consulted through the JITUserContext passed
// to realize()): every realize() here passes a context whose hooks hand Halide the primary
// context and a non-blocking stream this backend owns (both from cudart: the context is
// cuStreamGetCtx of that stream, reached through cudaGetDriverEntryPointByVersion, so libcuda is
// never linked). Halide's kernels then run on our stream in the context cudart uses, and an
// ordinary bench::CudaEventTimer on that stream measures them, as it does for cuDNN. Every run
// checks that Halide called the stream hook (else its kernels ran elsewhere and the GPU time
// would be wrong) and throws if it did not.
#pragma once

#include <cuda.h>  // driver API types only (CUcontext, CUstream, CUresult); libcuda is not linked
#include <cuda_runtime_api.h>

#include <string>

#include <Halide.h>

namespace conv {

// host-cuda with the highest CUDA capability Halide 14 knows (8.6) that the device has; without
// a device, 8.6. Halide emits PTX for it, which the driver compiles for the actual device (an
// H100/H200, 9.0, runs sm_86 PTX).
Halide::Target halide_cuda_target();

// The context a cudart stream belongs to: the device's primary context. The entry points are
// asked for at CUDA 12.0's ABI: from 12.5 on, "cuStreamGetCtx" names a three-argument function
// (with a green context), not the two-argument one of PFN_cuStreamGetCtx_v9020.
CUcontext cuda_stream_context(cudaStream_t stream);

// Halide's CUDA runtime finds the driver's functions by name in the process (or by loading
// "libcuda.so", a name only the driver's development package provides). cudart loaded
// libcuda.so.1 privately; loading it again with RTLD_GLOBAL makes its symbols visible to Halide.
void make_libcuda_visible();

// Registers per thread the driver may give Halide's kernels. Halide's CUDA runtime loads modules
// with CU_JIT_MAX_REGISTERS = 64 unless HL_CUDA_JIT_MAX_REGISTERS says otherwise (read at module
// load); at 64 the larger register tiles of the schedules spill (ptxas for sm_90: 88 bytes of stack
// for the 4 x 8 tile of a 7 x 7 kernel), at 96 none of them does. 128 leaves headroom and still
// fits four blocks of 128 threads per SM. A value already in the environment wins.
void use_halide_cuda_register_budget();
// The budget in force, as the results report it.
std::string halide_cuda_register_budget();

// How often Halide's runtime called the hooks; a run that launched a kernel calls get_stream.
struct HalideHookCounts {
  long acquires = 0, streams = 0;
};

// The JITUserContext of every Halide call: Halide passes it to the hooks, which hand its CUDA
// context and stream to Halide's runtime and count the calls.
struct HalideCudaJitContext : Halide::JITUserContext {
  CUcontext cu_context = nullptr;
  cudaStream_t stream = nullptr;
  HalideHookCounts* counts = nullptr;
  std::string* errors = nullptr;  // where custom_error writes, when set
};

// A context with the hooks installed; with errors, Halide's error messages are appended there
// (and not reported by realize() itself).
HalideCudaJitContext make_halide_cuda_jit_context(CUcontext context, cudaStream_t stream,
                                                  HalideHookCounts* counts, std::string* errors);

}  // namespace conv
