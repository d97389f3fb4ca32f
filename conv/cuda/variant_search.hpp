// The instance of im2col_gemm_cuda that runs one chosen variant's instance: the heuristic's
// choice (--variant auto) or a fixed one, with the choice stated in front of its algorithm text;
// or, for --variant search, the fastest of several candidates, timed once in compile() (so that
// the search counts as compile time, as cuDNN's does), the others then released.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "conv/backend.hpp"
#include "conv/cuda/variant_choice.hpp"

namespace conv {

struct SearchCandidate {
  Variant variant;
  std::unique_ptr<Instance> instance;  // null: could not be prepared (skipped)
  int sub = 0;                         // a sub-variant searched on its own (12.1, 12.2), else 0
};

// "v12", or "v12.2" for a sub-variant: the candidate's name in the search's timings.
inline std::string search_candidate_name(const SearchCandidate& c) {
  return "v" + std::to_string(int(c.variant)) + (c.sub > 0 ? "." + std::to_string(c.sub) : "");
}

// label: put before the chosen instance's algorithm text ("auto (why): ", "search: ", "");
// skipped: the candidates that could not be prepared, and why (said in extra()). With search, at
// least one candidate must have an instance; without, exactly one candidate with its instance.
std::unique_ptr<Instance> make_chosen_instance(std::vector<SearchCandidate> candidates,
                                               std::string label, bool search, std::string skipped);

// Calls per candidate in a search: one warm-up call, then the median of this many timed ones.
inline constexpr int kSearchTimedCalls = 5;

}  // namespace conv
