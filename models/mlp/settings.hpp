// Settings are not problems: mymlp's options fill these, and expand() turns them into the problems
// to run (the lecture's example, --problem descriptors, the scaling studies, square matmuls);
// RunSettings say how the cases run (the lecture's fixed counts, the split, the ceiling, the
// profile).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/measure.hpp"
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

struct RunSettings {
  int num_warmups = -1, num_trials = -1;  // the lecture's fixed counts; -1: the core's
  int phase_steps = 10;                   // steps timed for the forward/backward split
  bool no_ceiling = false;                // measure no matmul ceiling
  std::int64_t ceiling_n_cpu = 1024, ceiling_n_cuda = 8192;  // the ceiling matmuls' sizes
  std::string profile_dir;                // --profile: "" = none
};

// The lecture's fixed counts over m: num_warmups warm-up runs; num_trials exactly that many
// samples, no adaptive stop. Returns their part of each case's command (" --num-warmups N
// --num-trials M", those given).
std::string apply_fixed_counts(const RunSettings& s, bench::MeasureConfig& m);

}  // namespace mlp
