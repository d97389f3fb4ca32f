#include "ops/settings.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/printers.hpp"
#include "core/system_info.hpp"

namespace ops {

namespace {

template <typename T>
bool contains(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

std::string join_names(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

}  // namespace

const std::vector<std::string>& size_classes() {
  static const std::vector<std::string> k = {"small", "medium", "large", "xlarge", "batched"};
  return k;
}

std::string ops_list_dir() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("MYCONV_OPS_DIR")) candidates.emplace_back(env);
  candidates.push_back(bench::executable_dir() + "/../share/myconv/experiments/ops");
#ifdef MYCONV_SOURCE_DIR
  candidates.emplace_back(MYCONV_SOURCE_DIR "/experiments/ops");
#endif
  for (const auto& c : candidates)
    if (std::filesystem::is_regular_file(std::filesystem::path(c) / "medium.txt")) return c;
  return "";
}

std::vector<Problem> expand(const Settings& s, std::vector<std::string>* notes) {
  // Filters first, so that a misspelt name fails before any file is read.
  std::vector<Category> categories;
  for (const auto& c : s.categories) categories.push_back(parse_category(c));
  std::vector<Op> op_filter;
  for (const auto& o : s.ops) op_filter.push_back(parse_op(o));

  std::vector<bench::ShapeEntry> entries;
  for (const auto& d : s.descriptors) entries.push_back({"", d});
  std::vector<std::string> files = s.ops_files;
  if (s.descriptors.empty() && s.ops_files.empty()) {
    std::vector<std::string> sizes;
    for (const auto& size : s.sizes) {
      if (size == "all") {
        for (const auto& c : size_classes())
          if (c != "xlarge" && !contains(sizes, c)) sizes.push_back(c);
        continue;
      }
      if (!contains(size_classes(), size))
        throw bench::UsageError("--size: unknown size class '" + size +
                                "' (allowed: " + join(size_classes()) + ", all)");
      if (!contains(sizes, size)) sizes.push_back(size);
    }
    const std::string dir = s.ops_dir.empty() ? ops_list_dir() : s.ops_dir;
    if (dir.empty())
      throw bench::UsageError(
          "--size: the op lists (experiments/ops/) were not found beside the program or in the "
          "source tree; set MYCONV_OPS_DIR or give --ops-file/--problem");
    for (const auto& size : sizes) files.push_back(dir + "/" + size + ".txt");
  }
  for (const auto& f : files) {
    bench::ShapeFile file = bench::read_shape_file(f, "--ops-file");
    if (notes) notes->insert(notes->end(), file.notes.begin(), file.notes.end());
    for (auto& e : file.entries) entries.push_back(std::move(e));
  }

  std::vector<Problem> out;
  std::set<std::string> seen;
  bool left_out_tf32 = false;
  for (DataType dt : s.dtypes) {
    for (const auto& entry : entries) {
      Problem p;
      try {
        // A descriptor naming no dtype takes dt (parsed under two defaults to tell).
        Problem as_fp16, as_bf16;
        as_fp16.dtype = DataType::fp16;
        as_bf16.dtype = DataType::bf16;
        p = parse_problem(entry.descriptor, as_fp16);
        if (p.dtype != parse_problem(entry.descriptor, as_bf16).dtype) {
          if (dt == DataType::tf32 && p.op != Op::matmul) {
            left_out_tf32 = true;
            continue;
          }
          p.dtype = dt;
        }
      } catch (const bench::UsageError& e) {
        throw bench::UsageError((entry.origin.empty() ? std::string("--problem") : entry.origin) +
                                ": " + e.what());
      }
      if (!categories.empty() && !contains(categories, p.category())) continue;
      if (!op_filter.empty() && !contains(op_filter, p.op)) continue;
      if (seen.insert(p.str_with_name()).second) {
        out.push_back(p);
      } else if (notes && !entry.origin.empty() && dt == s.dtypes.front()) {
        notes->push_back(entry.origin + ": the same problem as an earlier line; run once");
      }
    }
  }
  if (notes && left_out_tf32)
    notes->push_back("tf32 is a matmul math mode: the other ops are left out in tf32");
  if (out.empty())
    throw bench::UsageError(
        "no op problem is left by these settings (--size/--ops-file/--problem "
        "with --category/--op/--dtype)");
  return out;
}

void print_op_list(std::ostream& os) {
  bench::Table t({"category", "op", "example"});
  const std::map<Category, std::string> example = {
      {Category::element, "add:4096x4096+1x4096"},
      {Category::activation, "gelu_tanh:4096x4096:bf16"},
      {Category::reduction, "sum:4x512x896:axis=2"},
      {Category::normalization, "layernorm:4x512x896"},
      {Category::matmul, "matmul:m4096n4096k4096:bf16"},
      {Category::memory, "permute:16x512x512:perm=0,2,1"}};
  for (Op op : all_ops()) {
    const Category c = category_of(op);
    std::string e = example.at(c);
    e = to_string(op) + e.substr(e.find(':'));
    t.add_row({to_string(c), to_string(op), e});
  }
  t.print(os);
  const std::string dir = ops_list_dir();
  os << "size classes (--size): " << join_names(size_classes())
     << ", all (every class but xlarge)\nop lists: "
     << (dir.empty() ? "not found (set MYCONV_OPS_DIR)" : dir) << "\n";
}

}  // namespace ops
