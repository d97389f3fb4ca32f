// Settings are not problems: myops' options fill these lists, and expand() turns them into the op
// problems to run (benchdnn's settings_t -> prb_t).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/shape_file.hpp"
#include "ops/problem.hpp"

namespace ops {

// The size classes (Genesis's): small (64K-262K elements), medium (~4.2M), large (~16.8M), xlarge
// (~67M) and batched (3D tensors, batched matmul, Qwen2-0.5B's layers). Each is an op list file,
// experiments/ops/<class>.txt.
const std::vector<std::string>& size_classes();

struct Settings {
  std::vector<std::string> sizes = {"medium"};  // size classes, or "all" (every class but xlarge)
  std::vector<std::string> categories;          // keep only these categories (empty: all)
  std::vector<std::string> ops;                 // keep only these ops (empty: all)
  std::vector<DataType> dtypes = {DataType::fp32};
  // Descriptors (--problem) and op list files (--ops-file); when any is given they replace the
  // size classes. The category and op filters apply to every source.
  std::vector<std::string> descriptors;
  std::vector<std::string> ops_files;
  std::string ops_dir;  // where the size classes' files are ("" = ops_list_dir())
};

// The folder of the shipped op lists: $MYCONV_OPS_DIR, the install tree's
// share/myconv/experiments/ops beside the program, or the source tree's experiments/ops. Empty
// when none of them exists.
std::string ops_list_dir();

// Expands settings into problems, in order, without duplicates: each descriptor that names no
// dtype is crossed with the dtypes (tf32 only with matmul: the other ops have no tf32 mode, and
// the combination is left out with a note). Throws bench::UsageError for an unknown size class,
// category or op, an invalid descriptor (naming the file and line), an unreadable file, or
// settings that leave no problem. `notes`, when given, receives one line per left-out
// combination kind and per benchdnn option or repeated line in a file.
std::vector<Problem> expand(const Settings& s, std::vector<std::string>* notes = nullptr);

// Every op with its category and an example descriptor, the size classes and the op lists' folder.
void print_op_list(std::ostream& os);

}  // namespace ops
