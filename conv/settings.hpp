// Settings are not problems: command-line options fill these lists, and expand() turns them
// into the problems to run (benchdnn's settings_t -> prb_t).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "conv/backend.hpp"
#include "conv/problem.hpp"
#include "core/shape_file.hpp"

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

// The backend options' part of a case's reproducing command, those left at their defaults
// omitted (e.g. " --halide-schedule li2018 --variant 3").
std::string command_text(const BackendOptions& o);

// Shape files are read by the core's reader (core/shape_file.hpp), as op lists are.
using bench::read_shape_file;
using bench::ShapeEntry;
using bench::ShapeFile;

}  // namespace conv
