#include "ops/report.hpp"

#include <map>
#include <sstream>

#include "core/paths.hpp"
#include "core/printers.hpp"
#include "core/system_info.hpp"
#include "ops/settings.hpp"

namespace ops {
namespace {

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

}  // namespace

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
  os << "size classes (--size): " << join(size_classes())
     << ", all (every class but xlarge)\nop lists: "
     << (dir.empty() ? "not found (set MYCONV_OPS_DIR)" : dir) << "\n";
}

void print_problem(std::ostream& os, const Problem& p) {
  os << "\n== " << p.str_with_name() << ": " << to_string(p.category()) << ", "
     << p.input_elements() << " input elements, " << p.bytes() / 1e6 << " MB moved at "
     << "least" << (p.flops() > 0 ? ", " + bench::format_fixed(p.flops() / 1e6, 1) + " MFLOP" : "")
     << " ==\n";
}

void print_scores(std::ostream& os, const std::vector<bench::Result>& results) {
  bench::Table t(
      {"problem", "backend", "timing", "status", "ms", "GB/s", "% peak", "vs_pytorch", "band"});
  for (const auto& r : results) {
    const auto& m = r.metrics;
    auto num = [&](const char* key, double scale, int digits) {
      return m.contains(key) ? bench::format_fixed(m[key].get<double>() * scale, digits)
                             : std::string("-");
    };
    t.add_row({r.problem, r.backend, r.timing_mode, bench::to_string(r.status),
               bench::format_ms(r.primary_time_ms()), num("bandwidth_gbs", 1, 1),
               num("bandwidth_efficiency", 100, 1),
               m.contains("speedup_vs_pytorch") ? num("speedup_vs_pytorch", 1, 2) + "x" : "-",
               m.value("score_band", std::string("-"))});
  }
  t.print(os);
}

void write_markdown(const std::string& path, const bench::ResultSet& set) {
  std::ostringstream md;
  md << "# myops results\n\n"
     << "Host " << set.system.value("host", std::string("?")) << ", source " << bench::git_commit()
     << ". Full report: `scripts/analyze_results.py` on the --json file.\n\n"
     << "| problem | dtype | backend | timing | status | ms | GB/s | % of measured peak | "
        "vs PyTorch | band | reason |\n"
     << "|---|---|---|---|---|---:|---:|---:|---:|---|---|\n";
  for (const auto& r : set.results) {
    const auto& m = r.metrics;
    auto num = [&](const char* key, double scale, int digits) {
      return m.contains(key) ? bench::format_fixed(m[key].get<double>() * scale, digits)
                             : std::string("");
    };
    md << "| `" << r.problem << "` | " << r.dtype << " | " << r.backend << " | " << r.timing_mode
       << " | " << bench::to_string(r.status) << " | " << bench::format_ms(r.primary_time_ms())
       << " | " << num("bandwidth_gbs", 1, 1) << " | " << num("bandwidth_efficiency", 100, 1)
       << " | " << num("speedup_vs_pytorch", 1, 2) << " | " << m.value("score_band", std::string())
       << " | " << (r.status == bench::Status::passed ? "" : r.reason) << " |\n";
  }
  bench::write_file_atomic(path, md.str());
}

}  // namespace ops
