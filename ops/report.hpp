// The op suite's console and Markdown reports: the op list (--list-ops), a problem's header line,
// the scores table (time, GB/s, % of the measured peak, speed-up against PyTorch, band) and the
// Markdown table of a run (--markdown).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "ops/problem.hpp"

namespace ops {

// Every op with its category and an example descriptor, the size classes and the op lists' folder.
void print_op_list(std::ostream& os);

// "== PROBLEM: category, input elements, MB moved at least[, MFLOP] ==", after a blank line.
void print_problem(std::ostream& os, const Problem& p);

// One line per case: time, GB/s, % of the measured peak, speed-up and band.
void print_scores(std::ostream& os, const std::vector<bench::Result>& results);

// The results as a Markdown table, written atomically to path.
void write_markdown(const std::string& path, const bench::ResultSet& set);

}  // namespace ops
