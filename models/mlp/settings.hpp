// Settings are not problems: mymlp's options fill these, and expand() turns them into the problems
// to run (the lecture's example, --problem descriptors, the scaling studies, square matmuls).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/mlp/problem.hpp"

namespace mlp {

struct Settings {
  std::int64_t dim = 128, num_layers = 16, batch_size = 128, num_steps = 5;
  bool dims_given = false;  // any of the four given: that configuration runs, unnamed
  bool example = false;     // the configuration above also with --problem, --scale or --matmul
  bool matmul = false;      // square matmuls over matmul_dims
  std::vector<std::string> problems, scale, dtypes = {"fp32"};
  std::string base = "dim=256,num_layers=4,batch_size=256,num_steps=2";
  std::vector<std::int64_t> matmul_dims = {1024, 2048, 4096, 8192, 16384};
};

// Settings -> problems, for each dtype in order, without duplicates. bench::UsageError for a
// dtype outside the suite's (fp32, tf32, bf16), a bad descriptor, base or size.
std::vector<Problem> expand(const Settings& s);

}  // namespace mlp
