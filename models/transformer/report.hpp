// The transformer suite's console tables: the presets (--show-presets) and the generation figures
// of a run's results (its times, the decode step's bandwidth, the measured and predicted memory).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "models/transformer/settings.hpp"

namespace transformer {

// The presets of `path`, one row each.
void print_presets(std::ostream& os, const std::vector<Grid>& presets, const std::string& path);

// Per case its times (a generation's: with the decode step's bandwidth, GB/s of its bytes and its
// weight bytes' fraction of the measured copy bandwidth; train: the step's), then memory: the
// allocator's peak (CUDA) beside the prediction from the config (memory.hpp).
void print_generation_figures(std::ostream& os, const std::vector<bench::Result>& results,
                              bool train);

}  // namespace transformer
