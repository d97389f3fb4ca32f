// The MLP suite's console report: a problem's header line, the lecture's numbers of one case,
// the figures table (per call; forward and backward per step) and the scaling studies' fits; the
// file stem of a case's profile files.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"
#include "models/mlp/problem.hpp"

namespace mlp {

// "== PROBLEM: GFLOP per call, MB moved at least ==" after a blank line.
void print_problem(std::ostream& os, const Problem& p);

// The lecture's numbers of one passed MLP case (after its result block): its config, run_mlp's
// statistics, the forward/backward split, TFLOP/s against the ceiling and the peak memory.
void print_summary(std::ostream& os, const bench::Result& r);

// One row per case. modes (--timing both): with a timing column, as in print_studies.
void print_figures(std::ostream& os, const std::vector<bench::Result>& results, bool modes);

// The studies block's fits (studies_json), one row each; nothing where there are none.
void print_studies(std::ostream& os, const nlohmann::ordered_json& studies, bool modes);

// BACKEND.PROBLEM[.NAME] with every character outside [A-Za-z0-9._-] as '_'.
std::string file_stem(const bench::Result& r);

}  // namespace mlp
