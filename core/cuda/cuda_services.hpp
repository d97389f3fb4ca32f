// bench::DeviceServices for a CUDA device: L2 eviction, clocks read through NVML, and CUDA-graph
// capture of a batch of calls.
#pragma once

#include <memory>

#include "core/device.hpp"

namespace bench {

// Services for the current CUDA device. Throws (through CUDA_CHECK) when no device is usable.
// NVML is loaded at run time (dlopen of libnvidia-ml.so.1, which comes with the driver), so the
// program also starts where no driver is installed; clocks() then says why it has none.
std::unique_ptr<DeviceServices> make_cuda_services();

}  // namespace bench
