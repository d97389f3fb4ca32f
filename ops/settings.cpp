#include "ops/settings.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include <CLI/CLI.hpp>

#include "core/error.hpp"
#include "core/printers.hpp"
#include "core/suite_options.hpp"
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

void add_options(CLI::App& app, Options& o) {
  auto& s = o.settings;
  bench::add_list_option(app, "--size", s.sizes,
                         "Size classes: small medium large xlarge batched, or all (every class "
                         "but xlarge); each is an op list in experiments/ops/ (list)");
  app.add_option("--category", s.categories,
                 "Only these categories: element activation reduction normalization matmul "
                 "memory (list)")
      ->delimiter(',');
  app.add_option("--op", s.ops, "Only these ops, e.g. add, softmax, transpose (list)")
      ->delimiter(',');
  bench::add_list_option(app, "--dtype", o.dtypes,
                         "Data types: fp32 fp16 bf16, tf32 (matmul only) (list); a descriptor "
                         "naming one keeps it");
  bench::add_problem_sources(
      app, s.descriptors,
      "Op descriptor, e.g. add:4096x4096+1x4096:bf16 (repeatable); replaces --size", "--ops-file",
      s.ops_files, "Op list file: one descriptor per line (repeatable); replaces --size");
  bench::add_backend_option(app, o.backends);
  app.add_option("--variant", o.backend_options.variant,
                 "Kernel variant of own_cuda (default: the best for each op; ops/cuda/*.cu list "
                 "them)");
  app.add_flag("--fast", o.fast,
               "Short sampling (1 warm-up, 10 to 100 ms per case) for a quick look");
  app.add_flag("--no-peaks", o.no_peaks,
               "Do not measure the copy bandwidth and matmul ceiling at the start (no "
               "efficiencies)");
  app.add_option("--markdown", o.markdown_path, "Write a Markdown table of the results to FILE");
  app.add_flag("--list-ops", o.list_ops, "List the ops and size classes and exit");
}

std::string finish_options(const CLI::App& app, Options& o, bench::MeasureConfig& m) {
  auto& s = o.settings;
  bench::finish_backend_names(o.backends);
  if (app.count("--size") && !(s.descriptors.empty() && s.ops_files.empty()))
    throw bench::UsageError("--problem/--ops-file replace --size; give one or the other");
  s.dtypes = bench::parse_data_types(o.dtypes);
  if (o.fast) {  // only what the user did not set
    if (!app.count("--warmup")) m.warmup_iters = 1;
    if (!app.count("--max-time-ms")) m.max_time_ms = 100;
    if (!app.count("--min-time-ms")) m.min_time_ms = std::min(10.0, m.max_time_ms);
    if (!app.count("--min-iters")) m.min_iters = 3;
  }
  std::string head = "myops";
  if (!o.backend_options.variant.empty()) head += " --variant " + o.backend_options.variant;
  if (o.fast) head += " --fast";
  return head;
}

}  // namespace ops
