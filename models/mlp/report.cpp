#include "models/mlp/report.hpp"

#include <cctype>
#include <variant>

#include "core/printers.hpp"

namespace mlp {

void print_problem(std::ostream& os, const Problem& p) {
  os << "\n== " << str_with_name(p) << ": "
     << std::visit(
            [](const auto& x) {
              return bench::format_fixed(x.flops() / 1e9, 3) + " GFLOP per call, " +
                     bench::format_fixed(x.bytes() / 1e6, 2) + " MB moved at least";
            },
            p)
     << " ==\n";
}

void print_summary(std::ostream& os, const bench::Result& r) {
  if (r.status != bench::Status::passed) return;
  const auto& m = r.metrics;
  const auto& p = r.params;
  const bench::Summary& s = r.gpu_time_ms ? *r.gpu_time_ms : *r.total_time_ms;
  os << "    config: dim " << p["dim"] << ", num_layers " << p["num_layers"] << ", batch_size "
     << p["batch_size"] << ", num_steps " << p["num_steps"] << ", " << r.dtype << "\n"
     << "    run_mlp: median " << bench::format_ms(s.median) << " ms, mean "
     << bench::format_ms(s.mean) << ", min " << bench::format_ms(s.min) << ", spread (p90-p10) "
     << bench::format_ms(s.p90 - s.p10) << " over " << s.samples << " trials ("
     << (r.gpu_time_ms ? "GPU" : "total") << " time)\n";
  if (m.contains("forward_ms"))
    os << "    per step: " << bench::format_ms(m.value("step_ms", 0.0)) << " ms = forward "
       << bench::format_ms(m["forward_ms"].get<double>()) << " + backward "
       << bench::format_ms(m["backward_ms"].get<double>()) << " (split measured apart)\n";
  if (m.contains("tflops"))
    os << "    " << bench::format_fixed(m["tflops"].get<double>(), 3)
       << " TFLOP/s (6*B*D^2*L*S = " << r.flop / 1e9 << " GFLOP)"
       << (m.contains("ceiling_tflops")
               ? ", ceiling " + bench::format_fixed(m["ceiling_tflops"].get<double>(), 3) +
                     " TFLOP/s: " +
                     bench::format_fixed(100 * m["fraction_of_ceiling"].get<double>(), 1) + "%"
               : std::string(", no ceiling measured"))
       << "\n";
  os << "    peak memory: "
     << (m.contains("peak_memory_bytes")
             ? bench::format_fixed(m["peak_memory_bytes"].get<double>() / (1 << 20), 1) + " MiB"
             : r.extra.value("peak_memory_not_measured", std::string("n/a")))
     << "\n";
}

namespace {

// row with, where modes, a timing column (`timing`, else its header) inserted at `at`.
std::vector<std::string> with_timing(std::vector<std::string> row, std::size_t at, bool modes,
                                     const std::string& timing = "timing") {
  if (modes) row.insert(row.begin() + static_cast<std::ptrdiff_t>(at), timing);
  return row;
}

}  // namespace

void print_studies(std::ostream& os, const nlohmann::ordered_json& studies, bool modes) {
  if (studies.empty()) return;
  os << "\n== Scaling studies: time = a x factor^b, least squares in log-log ==\n";
  bench::Table t(with_timing(
      {"backend", "dtype", "parameter", "factors", "times ms", "b", "R^2", "expected"}, 2, modes));
  for (const auto& s : studies) {
    std::string f, ms;
    for (std::size_t i = 0; i < s["factors"].size(); ++i) {
      f += (i ? "," : "") + bench::format_fixed(s["factors"][i].get<double>(), 0);
      ms += (i ? "," : "") + bench::format_ms(s["time_ms"][i].get<double>(), 3);
    }
    t.add_row(with_timing({s["backend"], s["dtype"], s["parameter"], f, ms,
                           bench::format_fixed(s["fit_exponent"].get<double>(), 3),
                           bench::format_fixed(s["fit_r2"].get<double>(), 4),
                           bench::format_fixed(s["expected_exponent"].get<double>(), 0)},
                          2, modes, s["timing"]));
  }
  t.print(os);
}

void print_figures(std::ostream& os, const std::vector<bench::Result>& results, bool modes) {
  bench::Table t(with_timing({"problem", "name", "backend", "status", "ms/call", "fwd ms", "bwd ms",
                              "TFLOP/s", "% ceiling", "peak MiB"},
                             3, modes));
  for (const auto& r : results) {
    const auto& m = r.metrics;
    auto num = [&](const char* k, double scale, int digits) {
      return m.contains(k) ? bench::format_fixed(m[k].get<double>() * scale, digits)
                           : std::string("-");
    };
    t.add_row(with_timing(
        {r.problem, r.name, r.backend, bench::to_string(r.status),
         bench::format_ms(r.primary_time_ms()), num("forward_ms", 1, 4), num("backward_ms", 1, 4),
         num("tflops", 1, 3), num("fraction_of_ceiling", 100, 1),
         num("peak_memory_bytes", 1.0 / (1 << 20), 1)},
        3, modes, r.timing_mode));
  }
  t.print(os);
}

std::string file_stem(const bench::Result& r) {
  std::string s = r.backend + "." + r.problem + (r.name.empty() ? "" : "." + r.name);
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return s;
}

}  // namespace mlp
