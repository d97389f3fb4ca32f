#include "ops/score.hpp"

#include <sstream>

#include "core/printers.hpp"
#include "core/system_info.hpp"

namespace ops {

std::string reference_backend(const std::string& device) {
  return device == "cuda" ? "libtorch_cuda" : "libtorch_cpu";
}

std::string score_band(double ratio) {
  if (ratio >= 0.9) return "excellent";
  if (ratio >= 0.7) return "good";
  if (ratio >= 0.5) return "fair";
  if (ratio >= 0.2) return "poor";
  return "critical";
}

const bench::Result* reference_of(const std::vector<bench::Result>& results,
                                  const bench::Result& r) {
  // The same mode (real or pure), however it sampled: a graph for one, back to back for another.
  auto mode = [](const std::string& m) { return m.substr(0, m.find(':')); };
  const std::string ref = reference_backend(r.device);
  for (const auto& o : results)
    if (o.backend == ref && o.problem == r.problem && mode(o.timing_mode) == mode(r.timing_mode))
      return &o;
  return nullptr;
}

namespace {

// The measured copy bandwidth of r's device, or 0 when it was not measured.
double peak_gbs(const bench::Result& r, const nlohmann::ordered_json& system) {
  if (!system.contains("bandwidth")) return 0;
  const auto& bw = system["bandwidth"];
  if (r.device == "cpu") {
    if (bw.contains("cpu") && bw["cpu"].contains("measured_copy_gbs"))
      return bw["cpu"]["measured_copy_gbs"].get<double>();
    return 0;
  }
  if (bw.contains("cuda") && bw["cuda"].is_array())
    for (const auto& d : bw["cuda"])  // the runner's device is the first measured one
      if (d.contains("measured_copy_gbs")) return d["measured_copy_gbs"].get<double>();
  return 0;
}

}  // namespace

void fill_metrics(bench::Result& r, const bench::Result* reference,
                  const nlohmann::ordered_json& system) {
  const auto t = r.primary_time_ms();
  if (r.status != bench::Status::passed || !t || *t <= 0) return;
  auto& m = r.metrics;
  const double gbs = r.bytes / (*t * 1e6);
  m["bandwidth_gbs"] = gbs;
  if (const double peak = peak_gbs(r, system); peak > 0) {
    m["peak_bandwidth_gbs"] = peak;
    m["bandwidth_efficiency"] = gbs / peak;
  }
  if (r.flop > 0) m["gflops"] = r.flop / (*t * 1e6);
  if (r.params.value("op", "") == "matmul" && r.device == "cuda" &&
      system.contains("matmul_ceiling") && system["matmul_ceiling"].contains("tflops") &&
      system["matmul_ceiling"]["tflops"].contains(r.dtype)) {
    const double ceiling = system["matmul_ceiling"]["tflops"][r.dtype].get<double>();
    if (ceiling > 0) {
      m["matmul_ceiling_tflops"] = ceiling;
      m["compute_efficiency"] = r.flop / (*t * 1e9) / ceiling;
    }
  }
  if (reference) {
    m["reference_backend"] = reference->backend;
    const auto rt = reference->primary_time_ms();
    if (reference->status == bench::Status::passed && rt && *rt > 0) {
      const double ratio = *rt / *t;
      m["speedup_vs_pytorch"] = ratio;
      m["score_band"] = score_band(ratio);
    }
  }
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
