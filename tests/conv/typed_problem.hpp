// A conv problem from its descriptor, with the data type and layout a test sets (the descriptor
// holds neither).
#pragma once

#include "conv/problem.hpp"
#include "core/dtype.hpp"

namespace conv::testing {

inline Problem typed_problem(const char* text, DataType dt = DataType::fp32,
                             Layout layout = Layout::nchw) {
  Problem p = parse_problem(text);
  p.dtype = dt;
  p.layout = layout;
  return p;
}

}  // namespace conv::testing
