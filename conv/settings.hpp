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
  // Dilation here is PyTorch's (1 = dense); descriptors count the gaps (benchdnn's dh, 0 = dense).
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

// Expands settings into problems, in order, without duplicates. Problems this suite cannot run
// (3D, asymmetric padding) are included: their cases are recorded as unsupported. Throws
// bench::UsageError for an invalid problem (naming the options, or the file and line, that
// produced it) or an unreadable shape file. `notes`, when given, receives one line per shape-file
// token that is not run as written: a benchdnn option, or a repeat of an earlier problem.
std::vector<Problem> expand(const Settings& s, std::vector<std::string>* notes = nullptr);

// One descriptor of a shape file and where it stands ("path:line").
struct ShapeEntry {
  std::string origin;
  std::string descriptor;
};

struct ShapeFile {
  std::vector<ShapeEntry> entries;
  std::vector<std::string> notes;  // "path:line: ..." for each benchdnn option, ignored
};

// Reads a shape file as benchdnn reads its input files: whitespace separates descriptors (a
// quoted name may hold any character but '"'), '#' outside quotes starts a comment, blank lines
// are ignored, and a token starting with "--" is a benchdnn option, which this suite does not
// take: it is noted, not run. Throws bench::UsageError when the file cannot be read.
ShapeFile read_shape_file(const std::string& path);

}  // namespace conv
