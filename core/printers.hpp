// Printers: they read result records and write them as console tables, JSON and CSV.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace bench {

// A console table with left-aligned text columns and right-aligned numeric columns.
class Table {
 public:
  explicit Table(std::vector<std::string> header);
  void add_row(std::vector<std::string> row);
  void print(std::ostream& os) const;
  // As a Markdown table ('|' in a cell escaped).
  void print_markdown(std::ostream& os) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// "1.234" style with `digits` significant digits, or "n/a" for a missing value.
std::string format_ms(const std::optional<double>& ms, int digits = 4);

// "12.35" style: `digits` digits after the point (tables of figures that share a unit).
std::string format_fixed(double v, int digits);

// Writes text to path through a temporary file and a rename, so that readers never see a
// partial file. Throws std::runtime_error on I/O failure.
void write_file_atomic(const std::string& path, const std::string& text);

// The progress line every program and the runner print, one per case:
// "[k/N] elapsed HH:MM:SS eta HH:MM:SS <what>" (k = done + 1; eta "--:--:--" before a case ended).
std::string progress_line(std::size_t done, std::size_t total, double elapsed_s,
                          const std::string& what);
// "HH:MM:SS" of a duration in seconds, "--:--:--" for a negative one (unknown).
std::string clock_hms(double seconds);

std::string results_to_csv(const std::vector<Result>& results);
void write_json(const std::string& path, const ResultSet& set);
void write_csv(const std::string& path, const std::vector<Result>& results);

}  // namespace bench

namespace bench {

// The per-case block of the console report: status, algorithm, CPU/GPU/total/compile times,
// correctness, and the command that reproduces the case.
void print_result_block(std::ostream& os, const Result& r);

// The summary table every program prints (one layout, the same column names): problem, backend,
// device, dtype, status, cpu_ms, gpu_ms, total_ms, compile_ms (medians), vs_pytorch (the speed-up
// against the reference backend of the same problem: cpu_reference on the CPU, gpu_reference
// on a GPU, else the CPU one; a missing reference, or one that did not pass, leaves "n/a") and
// correct. markdown: as a Markdown table (--format md).
void print_comparison(std::ostream& os, const std::vector<Result>& results,
                      const std::string& cpu_reference, const std::string& gpu_reference,
                      bool markdown = false);

// print_comparison against LibTorch on the same device (libtorch_cpu, libtorch_cuda: the eager
// PyTorch call, by the one backend naming scheme every suite shares).
void print_summary(std::ostream& os, const std::vector<Result>& results, bool markdown = false);

// The summary section every program prints after its cases: one heading, print_summary's table.
void print_summary_section(std::ostream& os, const std::vector<Result>& results);

}  // namespace bench
