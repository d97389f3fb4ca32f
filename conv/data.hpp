// Host data of one conv case: deterministic random inputs (never zeros) in the problem's layout,
// rounded to its dtype, and the float64 reference output.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conv/problem.hpp"
#include "core/compare.hpp"
#include "core/memory_fit.hpp"
#include "core/random.hpp"

namespace conv {

// The float64 reference kept in device memory, and the check of an output on that device against
// it (core/cuda/compare_cuda.hpp). Made by the device reference; freed with the last holder.
class DeviceCheck {
 public:
  virtual ~DeviceCheck() = default;
  // Compares out (on the device) with the kept reference: "" and *result filled as
  // bench::compare() fills it, or why it could not (the caller then checks on the host).
  virtual std::string compare(const bench::DeviceValues& out, const bench::Tolerance& tol,
                              bench::Correctness* result) const = 0;
};

struct HostData {
  std::vector<float> src;  // problem layout, values representable in problem dtype
  std::vector<float> wei;
  std::vector<double> ref;  // float64 reference output, problem layout
  double ref_rms = 0;
  std::string ref_device = "cpu";  // where ref was computed: "cpu" or "cuda"
  std::string ref_fallback;        // why the device reference was asked for and not used, else ""
  // The reference left on the device for the check there, or null (a host reference, or one the
  // device had no room to keep: device_check_none says why).
  std::shared_ptr<const DeviceCheck> device_check;
  std::string device_check_none;
};

// A float64 reference on a device with reference_conv's semantics (same inputs, each product and
// the sum in double, dst in p's layout): fills dst and returns "", or returns why it could not
// (dst then holds nothing usable) and leaves the device without a pending error. Never throws.
// conv_core is CPU-only: the CUDA one (conv/cuda/reference_conv_cuda.hpp) reaches the suite
// through the registry (device_reference()), not through a link of conv_core.
// With keep (not null) it also hands out the reference left on the device for the check there,
// or leaves *keep null and says why in *why_not_kept.
using DeviceReferenceConv = std::string (*)(const Problem& p, const float* src, const float* wei,
                                            double* dst, std::shared_ptr<const DeviceCheck>* keep,
                                            std::string* why_not_kept);

// The reference to use from MYCONV_REFERENCE's value (null or empty = "auto"): "cpu" gives
// nullptr; "gpu" gives device (std::invalid_argument when it is nullptr, not built); "auto" gives
// device where uses_gpu (the run has a GPU backend), else nullptr. Any other value:
// std::invalid_argument with a one-line message.
DeviceReferenceConv choose_reference(const char* value, bool uses_gpu, DeviceReferenceConv device);

// Where a GPU backend's output is checked, from MYCONV_CHECK's value (null or empty = "auto"):
// "auto" checks it on the device where its float64 reference is kept there (else on the host);
// "host" always on the host (to set the two checks side by side). true for "host";
// any other value: std::invalid_argument with a one-line message.
bool host_check_forced(const char* value);

using bench::fill_random;  // core/random.hpp

// Seed of a problem's inputs: the user's seed mixed with a hash of the descriptor, so that
// every problem gets its own inputs and the same problem always gets the same ones.
std::uint64_t problem_seed(const Problem& p, std::uint64_t user_seed);

// Makes src and wei for p and computes the reference: with device (not null) there, else, or when
// device fails (ref_fallback says why), with reference_conv on the host. A device reference stays
// on the device too (device_check) where it has room.
HostData make_host_data(const Problem& p, std::uint64_t user_seed,
                        DeviceReferenceConv device = nullptr);

// Direct convolution in float64 (each product and the sum in double) over p's layout
// (conv/ref_conv.cpp).
// Runs on all hardware threads.
void reference_conv(const Problem& p, const float* src, const float* wei, double* dst);

// Host bytes a case needs: inputs, reference, one output per backend, with headroom.
double host_bytes_needed(const Problem& p);
// The memory one case of p needs at least (core/memory_fit.hpp): host_bytes_needed, and on the
// device (on_gpu) its input, weights and output in the dtype (bytes()); a library's workspace is
// picked at run time and not counted.
bench::MemoryNeed memory_need(const Problem& p, bool on_gpu);

// DIR/PROBLEM/src.npy, wei.npy and ref.npy (the float64 reference).
void save_tensors(const std::string& dir, const Problem& p, const HostData& data);

// DIR/PROBLEM/BACKEND.npy: a backend's checked output.
void save_output(const std::string& dir, const Problem& p, const std::string& backend,
                 const std::vector<float>& output);

}  // namespace conv
