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

std::string results_to_csv(const std::vector<Result>& results);
void write_json(const std::string& path, const ResultSet& set);
void write_csv(const std::string& path, const std::vector<Result>& results);

}  // namespace bench

namespace bench {

// The per-case block of the console report: status, algorithm, CPU/GPU/total/compile times,
// correctness, and the command that reproduces the case.
void print_result_block(std::ostream& os, const Result& r);

// One table over all results: problem, backend, times, speed-up against the reference backend of
// the same problem and device (reference_for(device) names it; a missing reference, or one that
// did not pass, leaves the column "n/a"), and whether the output was correct.
void print_comparison(std::ostream& os, const std::vector<Result>& results,
                      const std::string& cpu_reference, const std::string& gpu_reference);

}  // namespace bench
