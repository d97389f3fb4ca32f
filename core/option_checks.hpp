// Checks of command-line values that CLI11's own validators let through or word badly: NaN and
// infinity (CLI11's PositiveNumber takes "nan"), a sign on an unsigned value (CLI11 turns
// "--seed -1" into 18446744073709551615), bounds printed as 309-digit numbers, and empty items of
// a list ("64,,32", which CLI11 drops without a word). Every driver's options use these.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include <CLI/CLI.hpp>

namespace bench {

// A finite number in [min, max] (above min, not at it, when min_exclusive). The message names
// the bounds readably ("above 0", "at most 1e+12"). An infinite max is no upper bound.
CLI::Validator finite_number(double min, double max = std::numeric_limits<double>::infinity(),
                             bool min_exclusive = false);
// finite_number(0, inf, exclusive) and finite_number(0).
CLI::Validator positive_number();
CLI::Validator non_negative_number();

// A decimal integer (an optional '-', digits only: no "0x", no exponent) in [min, max].
CLI::Validator integer_in(std::int64_t min, std::int64_t max);
// Digits only: an unsigned 64-bit value (the seed), no sign.
CLI::Validator unsigned_integer();

// The check every driver runs on its command line before CLI11 parses it: each value of an
// option that takes a list (a delimiter) has no empty item ("64,,32", "fp32,", ","). Throws
// CLI::ValidationError naming the option.
void check_list_items(const CLI::App& app, int argc, const char* const* argv);

}  // namespace bench
