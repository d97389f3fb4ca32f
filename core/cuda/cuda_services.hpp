// bench::DeviceServices for a CUDA device: L2 eviction, clocks read through NVML, and CUDA-graph
// capture of a batch of calls.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/device.hpp"

namespace bench {

// Services for the current CUDA device. Throws (through CUDA_CHECK) when no device is usable.
// NVML is loaded at run time (dlopen of libnvidia-ml.so.1, which comes with the driver), so the
// program also starts where no driver is installed; clocks() then says why it has none.
std::unique_ptr<DeviceServices> make_cuda_services();

// DeviceServices::capture without the services: `calls` calls of body, each enqueuing work on
// stream (a cudaStream_t), captured (thread-local mode) into one instantiated CUDA graph. Null,
// with the reason in *why, when the work cannot be captured; never throws for a capture failure.
// For backends whose own call is a replayed graph (mymlp's cublaslt_fused).
std::unique_ptr<Replay> capture_cuda_graph(void* stream, const std::function<void()>& body,
                                           int calls, std::string* why);

}  // namespace bench
