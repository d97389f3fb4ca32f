// Deterministic random inputs shared by the suites: values depend only on the seed and the index,
// on every platform, and are never all zeros.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace bench {

// splitmix64: one step of a counter-based generator (Steele, Lea, Flood 2014).
std::uint64_t splitmix64(std::uint64_t x);

// Fills v with uniform values in [-1, 1), rounded to dt.
void fill_random(std::vector<float>& v, std::uint64_t seed, DataType dt);

// The seed of a problem's inputs: the user's seed mixed with a hash of the descriptor (FNV-1a,
// stable across runs and platforms, unlike std::hash), so that every problem gets its own inputs
// and the same problem always gets the same ones.
std::uint64_t descriptor_seed(const std::string& descriptor, std::uint64_t user_seed);

}  // namespace bench
