// Host data of one conv case: deterministic random inputs (never zeros) in the problem's layout,
// rounded to its dtype, and the float64 reference output.
#pragma once

#include <cstdint>
#include <vector>

#include "conv/problem.hpp"
#include "core/memory_fit.hpp"
#include "core/random.hpp"

namespace conv {

struct HostData {
  std::vector<float> src;  // problem layout, values representable in problem dtype
  std::vector<float> wei;
  std::vector<double> ref;  // float64 reference output, problem layout
  double ref_rms = 0;
};

using bench::fill_random;  // core/random.hpp

// Seed of a problem's inputs: the user's seed mixed with a hash of the descriptor, so that
// every problem gets its own inputs and the same problem always gets the same ones.
std::uint64_t problem_seed(const Problem& p, std::uint64_t user_seed);

// Makes src and wei for p and computes the reference.
HostData make_host_data(const Problem& p, std::uint64_t user_seed);

// Direct convolution in float64 (each product and the sum in double) over p's layout.
// Runs on all hardware threads.
void reference_conv(const Problem& p, const float* src, const float* wei, double* dst);

// Host bytes a case needs: inputs, reference, one output per backend, with headroom.
double host_bytes_needed(const Problem& p);
// The memory one case of p needs at least (core/memory_fit.hpp): host_bytes_needed, and on the
// device (on_gpu) its input, weights and output in the dtype (bytes()); a library's workspace is
// picked at run time and not counted.
bench::MemoryNeed memory_need(const Problem& p, bool on_gpu);

}  // namespace conv
