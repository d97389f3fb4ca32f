// The float64 reference of a conv problem on the current CUDA device: reference_conv's semantics
// (conv/data.hpp: every layout, groups, stride, padding, dilation, asymmetric kernels; each product
// and the sum in double; dst in the problem's layout) in one simple kernel, one thread per output
// element. make_host_data takes it as its DeviceReferenceConv (the registry hands it out:
// device_reference() in experiments/registry/conv.hpp).
#pragma once

#include <memory>
#include <string>

#include "conv/data.hpp"
#include "conv/problem.hpp"

namespace conv {

// Copies src and wei (host, p's layout) to the device, runs the kernel, copies the float64 output
// to dst (host, p.dst_elements()). The device holds src and wei for the call only. Returns "" on
// success, else why not (no device, out of memory, any CUDA error), with the device's last error
// cleared. Never throws. Synchronous.
// keep (may be null): the float64 output stays on the device, handed out as *keep for the check
// of the backends' outputs there (core/cuda/compare_cuda.hpp), where it takes at most a quarter of
// the device memory still free, so that the backends keep room for theirs; else *keep is null,
// the output is freed, and *why_not_kept (may be null) says why.
std::string reference_conv_cuda(const Problem& p, const float* src, const float* wei, double* dst,
                                std::shared_ptr<const DeviceCheck>* keep = nullptr,
                                std::string* why_not_kept = nullptr);

}  // namespace conv
