// The conv suite's console header of a problem and its tensors written as .npy (--save-tensors).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "conv/data.hpp"
#include "conv/problem.hpp"

namespace conv {

// "== PROBLEM: dtype layout, input, weights and output shapes, MFLOP, GEMM shape ==" after a
// blank line (the shapes only where this suite runs the problem).
void print_problem(std::ostream& os, const Problem& p);

// DIR/PROBLEM/src.npy, wei.npy and ref.npy (the float64 reference).
void save_tensors(const std::string& dir, const Problem& p, const HostData& data);

// DIR/PROBLEM/BACKEND.npy: a backend's checked output.
void save_output(const std::string& dir, const Problem& p, const std::string& backend,
                 const std::vector<float>& output);

}  // namespace conv
