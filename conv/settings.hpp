// Settings are not problems: command-line options fill these lists, and expand() turns them
// into the problems to run (benchdnn's settings_t -> prb_t).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "conv/problem.hpp"

namespace conv {

struct Settings {
  // Dimension lists; the cross product of all of them is run when no descriptor is given.
  std::vector<std::int64_t> batch_size = {2}, in_channels = {4}, out_channels = {8};
  std::vector<std::int64_t> input_size = {64}, kernel_size = {5};
  std::vector<std::int64_t> stride = {1}, padding = {0}, dilation = {1}, groups = {1};
  std::vector<DataType> dtypes = {DataType::fp32};
  std::vector<Layout> layouts = {Layout::nchw};
  // Descriptors (--problem) and shape files (--shapes); when any is given they replace the
  // dimension lists, and only dtypes/layouts are crossed with them.
  std::vector<std::string> descriptors;
  std::vector<std::string> shape_files;
};

// Expands settings into problems, in order, without duplicates. Throws bench::UsageError for an
// invalid problem (naming the options that produced it) or an unreadable/malformed shape file.
std::vector<Problem> expand(const Settings& s);

// Reads a shape file: one descriptor per line, optionally named (n"label" suffix, or a leading
// "label:"), '#' starts a comment, blank lines ignored. Errors name the file and line.
std::vector<std::string> read_shape_file(const std::string& path);

}  // namespace conv
