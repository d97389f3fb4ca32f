// The float64 reference of a conv problem on the current CUDA device: reference_conv's semantics
// (conv/data.hpp: every layout, groups, stride, padding, dilation, asymmetric kernels; each product
// and the sum in double; dst in the problem's layout) in one simple kernel, one thread per output
// element. make_host_data takes it as its DeviceReferenceConv (the registry hands it out:
// device_reference() in experiments/registry/conv.hpp).
#pragma once

#include <string>

#include "conv/problem.hpp"

namespace conv {

// Copies src and wei (host, p's layout) to the device, runs the kernel, copies the float64 output
// to dst (host, p.dst_elements()). The device holds src, wei and dst (double) for the call only.
// Returns "" on success, else why not (no device, out of memory, any CUDA error), with the
// device's last error cleared. Never throws. Synchronous: on return the device memory is freed.
std::string reference_conv_cuda(const Problem& p, const float* src, const float* wei, double* dst);

}  // namespace conv
