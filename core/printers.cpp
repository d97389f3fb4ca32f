#include "core/printers.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <stdexcept>

namespace bench {

Table::Table(std::vector<std::string> header) : header_(std::move(header)) {}

void Table::add_row(std::vector<std::string> row) {
  row.resize(header_.size());
  rows_.push_back(std::move(row));
}

static bool looks_numeric(const std::string& s) {
  if (s.empty()) return false;
  const char c = s[0];
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.';
}

void Table::print(std::ostream& os) const {
  std::vector<std::size_t> width(header_.size());
  for (std::size_t i = 0; i < header_.size(); ++i) width[i] = header_[i].size();
  for (const auto& row : rows_)
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  auto line = [&](const std::vector<std::string>& row, bool header) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      const bool right = !header && looks_numeric(row[i]);
      os << (i ? "  " : "") << (right ? std::right : std::left) << std::setw(int(width[i]))
         << row[i];
    }
    os << '\n';
  };
  line(header_, true);
  std::size_t total = 0;
  for (auto w : width) total += w + 2;
  os << std::string(total > 2 ? total - 2 : 0, '-') << '\n';
  for (const auto& row : rows_) line(row, false);
  os << std::left;
}

void Table::print_markdown(std::ostream& os) const {
  auto line = [&](const std::vector<std::string>& row) {
    os << "|";
    for (const auto& cell : row) {
      std::string c;
      for (char ch : cell) c += ch == '|' ? std::string("\\|") : std::string(1, ch);
      os << " " << c << " |";
    }
    os << '\n';
  };
  line(header_);
  os << "|";
  for (std::size_t i = 0; i < header_.size(); ++i) os << " --- |";
  os << '\n';
  for (const auto& row : rows_) line(row);
}

std::string format_ms(const std::optional<double>& ms, int digits) {
  if (!ms || !std::isfinite(*ms)) return "n/a";
  std::ostringstream os;
  // Large values in plain notation (12345.6 -> "12346"), small ones with `digits` significant.
  if (std::fabs(*ms) >= std::pow(10.0, digits))
    os << std::fixed << std::setprecision(0);
  else
    os << std::setprecision(digits);
  os << *ms;
  return os.str();
}

std::string format_fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot open '" + tmp + "' for writing");
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("cannot write '" + tmp + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot rename '" + tmp + "' to '" + path + "'");
  }
}

static std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

static std::string csv_number(double v) {
  if (!std::isfinite(v)) return "";
  std::ostringstream os;
  os << std::setprecision(9) << v;
  return os.str();
}

static std::string csv_opt(const std::optional<double>& v) {
  return v ? csv_number(*v) : "";
}

std::string clock_hms(double seconds) {
  if (!(seconds >= 0)) return "--:--:--";
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%02ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  return buf;
}

std::string progress_line(std::size_t done, std::size_t total, double elapsed_s,
                          const std::string& what) {
  const double eta = done ? elapsed_s / double(done) * double(total - done) : -1;
  return "[" + std::to_string(done + 1) + "/" + std::to_string(total) + "] elapsed " +
         clock_hms(elapsed_s) + " eta " + clock_hms(eta) + " " + what;
}

std::string results_to_csv(const std::vector<Result>& results) {
  std::ostringstream os;
  const char* figures[] = {"cpu_time_ms", "gpu_time_ms", "total_time_ms"};
  os << "suite,backend,device,problem,name,dtype,status,reason,algorithm,workspace_bytes,"
        "compile_time_ms,first_run_ms";
  for (const char* f : figures)
    os << ',' << f << "_median," << f << "_min," << f << "_mean," << f << "_p10," << f << "_p90,"
       << f << "_cv," << f << "_samples";
  os << ",correct,max_abs_err,rel_l2_err,atol,rtol,mismatches,flop,bytes,gflop_per_s,timing_mode,"
        "runs_per_sample,cold_cache,throttled,sm_mhz_before,sm_mhz_after,command\n";
  for (const auto& r : results) {
    os << csv_field(r.suite) << ',' << csv_field(r.backend) << ',' << r.device << ','
       << csv_field(r.problem) << ',' << csv_field(r.name) << ',' << r.dtype << ','
       << to_string(r.status) << ',' << csv_field(r.reason) << ',' << csv_field(r.algorithm) << ','
       << (r.workspace_bytes ? std::to_string(*r.workspace_bytes) : "") << ','
       << csv_opt(r.compile_time_ms) << ',' << csv_opt(r.first_run_ms);
    for (const auto* s : {&r.cpu_time_ms, &r.gpu_time_ms, &r.total_time_ms}) {
      if (*s) {
        const Summary& v = **s;
        os << ',' << csv_number(v.median) << ',' << csv_number(v.min) << ',' << csv_number(v.mean)
           << ',' << csv_number(v.p10) << ',' << csv_number(v.p90) << ',' << csv_number(v.cv) << ','
           << v.samples;
      } else {
        os << ",,,,,,,";
      }
    }
    if (r.correctness) {
      const Correctness& c = *r.correctness;
      os << ',' << (c.passed ? "true" : "false") << ',' << csv_number(c.max_abs_err) << ','
         << csv_number(c.rel_l2_err) << ',' << csv_number(c.tolerance.atol) << ','
         << csv_number(c.tolerance.rtol) << ',' << c.mismatches;
    } else {
      os << ",,,,,,";
    }
    const auto t = r.primary_time_ms();
    os << ',' << csv_number(r.flop) << ',' << csv_number(r.bytes) << ','
       << (t && *t > 0 ? csv_number(r.flop / (*t * 1e6)) : "") << ',' << r.timing_mode << ','
       << r.runs_per_sample << ',' << (r.cold_cache ? "true" : "false") << ','
       << (r.throttled ? (*r.throttled ? "true" : "false") : "") << ','
       << (r.clocks.is_object() ? csv_number(r.clocks.value("sm_mhz_before", 0.0)) : "") << ','
       << (r.clocks.is_object() ? csv_number(r.clocks.value("sm_mhz_after", 0.0)) : "") << ','
       << csv_field(r.command) << '\n';
  }
  return os.str();
}

void write_json(const std::string& path, const ResultSet& set) {
  write_file_atomic(path, to_json(set).dump(2) + "\n");
}

void write_csv(const std::string& path, const std::vector<Result>& results) {
  write_file_atomic(path, results_to_csv(results));
}

static std::string summary_text(const std::optional<Summary>& s) {
  if (!s) return "n/a";
  std::ostringstream os;
  os << format_ms(s->median) << " ms  (median of " << s->samples << ", min " << format_ms(s->min)
     << ", p90 " << format_ms(s->p90) << ", cv " << std::setprecision(2) << std::fixed
     << s->cv * 100 << "%, " << s->outliers << " outliers)";
  return os.str();
}

static std::string sci(double v) {
  std::ostringstream os;
  os << std::setprecision(2) << std::scientific << v;
  return os.str();
}

void print_result_block(std::ostream& os, const Result& r) {
  auto row = [&](const char* key, const std::string& value) {
    os << "    " << std::left << std::setw(14) << key << value << '\n';
  };
  os << "  -- " << r.backend << " [" << r.device << "] --\n";
  row("status", to_string(r.status) + (r.reason.empty() ? "" : ": " + r.reason));
  if (!r.algorithm.empty()) row("algorithm", r.algorithm);
  if (r.workspace_bytes) row("workspace", std::to_string(*r.workspace_bytes) + " bytes");
  if (r.compile_time_ms)
    row("compile time",
        format_ms(r.compile_time_ms) + " ms  (first run " + format_ms(r.first_run_ms) + " ms)");
  if (r.total_time_ms) {
    row("CPU time", summary_text(r.cpu_time_ms));
    row("CUDA time", summary_text(r.gpu_time_ms));
    row("total time", summary_text(r.total_time_ms));
    const auto t = r.primary_time_ms();
    if (t && *t > 0) {
      std::ostringstream rate;
      rate << std::setprecision(4) << r.flop / (*t * 1e6) << " GFLOP/s, " << r.bytes / (*t * 1e6)
           << " GB/s  (sampling stopped: " << r.stop_reason << ")";
      row("throughput", rate.str());
    }
    std::string timing = r.timing_mode;
    if (r.runs_per_sample > 1)
      timing += ", " + std::to_string(r.runs_per_sample) + " runs per sample";
    if (r.cold_cache) timing += ", caches flushed before each sample";
    row("timing", timing);
  }
  if (r.clocks.is_object()) {
    std::ostringstream c;
    c << "SM " << r.clocks.value("sm_mhz_before", 0.0) << " -> "
      << r.clocks.value("sm_mhz_after", 0.0) << " MHz (max " << r.clocks.value("sm_max_mhz", 0.0)
      << "), memory " << r.clocks.value("mem_mhz_before", 0.0) << " -> "
      << r.clocks.value("mem_mhz_after", 0.0) << " MHz"
      << (r.throttled.value_or(false) ? "  THROTTLED" : "");
    row("clocks", c.str());
  }
  if (r.shape_ok) row("shape check", *r.shape_ok ? "ok" : "WRONG");
  if (r.correctness) {
    const Correctness& c = *r.correctness;
    row("numeric check", std::string(c.passed ? "passed" : "FAILED") + ": max abs err " +
                             sci(c.max_abs_err) + ", rel L2 err " + sci(c.rel_l2_err) +
                             ", tolerance " + sci(c.tolerance.atol) + " + " +
                             sci(c.tolerance.rtol) + "*|ref|, " + std::to_string(c.mismatches) +
                             "/" + std::to_string(c.elements) + " mismatches");
    for (const auto& m : c.first_mismatches) {
      std::ostringstream mm;
      mm << "[" << m.index << "] got " << m.got << ", expected " << m.expected;
      row("  mismatch", mm.str());
    }
  }
  row("reproduce", r.command);
}

void print_comparison(std::ostream& os, const std::vector<Result>& results,
                      const std::string& cpu_reference, const std::string& gpu_reference,
                      bool markdown) {
  Table t({"problem", "backend", "device", "dtype", "status", "cpu_ms", "gpu_ms", "total_ms",
           "compile_ms", "vs_pytorch", "correct"});
  auto reference_time = [&](const Result& r) -> std::optional<double> {
    // GPU backends compare with the GPU reference when it ran, else with the CPU one.
    for (const std::string& name : r.device == "cpu"
                                       ? std::vector<std::string>{cpu_reference}
                                       : std::vector<std::string>{gpu_reference, cpu_reference})
      for (const auto& o : results)
        if (o.backend == name && o.problem == r.problem && o.status == Status::passed)
          return o.primary_time_ms();
    return std::nullopt;
  };
  for (const auto& r : results) {
    const auto mine = r.primary_time_ms();
    const auto ref = reference_time(r);
    std::string speedup = "n/a";
    if (mine && ref && *mine > 0 && r.status == Status::passed) {
      std::ostringstream s;
      s << std::setprecision(3) << *ref / *mine << "x";
      speedup = s.str();
    }
    auto median = [](const std::optional<Summary>& s) {
      return s ? format_ms(s->median) : std::string("n/a");
    };
    // correct: the output matched the reference, and its shape where the suite records one.
    t.add_row({r.problem, r.backend, r.device, r.dtype, to_string(r.status), median(r.cpu_time_ms),
               median(r.gpu_time_ms), median(r.total_time_ms), format_ms(r.compile_time_ms),
               speedup,
               r.correctness ? (r.correctness->passed && r.shape_ok.value_or(true) ? "yes" : "NO")
                             : "-"});
  }
  if (markdown)
    t.print_markdown(os);
  else
    t.print(os);
}

void print_summary(std::ostream& os, const std::vector<Result>& results, bool markdown) {
  print_comparison(os, results, "libtorch_cpu", "libtorch_cuda", markdown);
}

void print_summary_section(std::ostream& os, const std::vector<Result>& results) {
  os << "\n== Summary (medians in ms; vs_pytorch = LibTorch's time / the backend's, same problem "
        "and device) ==\n";
  print_summary(os, results);
}

}  // namespace bench
