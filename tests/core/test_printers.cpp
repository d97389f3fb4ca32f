#include "core/printers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/common/temp_dir.hpp"

namespace bench {
namespace {

namespace fs = std::filesystem;

using testing::read_file;
using testing::TempDir;

// Splits CSV text into records of fields: quoted fields may hold commas, doubled quotes and
// newlines.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      record.push_back(field);
      field.clear();
    } else if (c == '\n') {
      record.push_back(field);
      field.clear();
      records.push_back(record);
      record.clear();
    } else {
      field += c;
    }
  }
  EXPECT_FALSE(quoted) << "unterminated quote";
  EXPECT_TRUE(field.empty() && record.empty()) << "last record not ended by a newline";
  return records;
}

// Commas outside quotes on one physical line.
int count_unquoted_commas(const std::string& line) {
  int n = 0;
  bool quoted = false;
  for (char c : line) {
    if (c == '"')
      quoted = !quoted;
    else if (c == ',' && !quoted)
      ++n;
  }
  return n;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

Summary summary_with_median(double median, std::size_t samples = 10) {
  Summary s;
  s.median = median;
  s.min = median * 0.9;
  s.mean = median * 1.05;
  s.max = median * 1.5;
  s.p10 = median * 0.95;
  s.p90 = median * 1.2;
  s.stddev = median * 0.01;
  s.cv = 0.01;
  s.samples = samples;
  s.outliers = 1;
  return s;
}

// A CPU result that ran, passed and has every field a printer reads.
Result full_cpu_result() {
  Result r;
  r.suite = "conv";
  r.backend = "libtorch_cpu";
  r.device = "cpu";
  r.problem = "mb2ic4ih64oc8kh5";
  r.name = "seed";
  r.dtype = "fp32";
  r.status = Status::passed;
  r.algorithm = "mkldnn";
  r.workspace_bytes = 4096;
  r.compile_time_ms = 12.5;
  r.first_run_ms = 3.25;
  r.cpu_time_ms = summary_with_median(1.5);
  r.total_time_ms = summary_with_median(2.0);
  r.thread_cpu_time_ms = summary_with_median(1.75);
  r.stop_reason = "converged";
  r.timing_mode = "real";
  Correctness c;
  c.passed = true;
  c.max_abs_err = 1e-6;
  c.rel_l2_err = 2e-7;
  c.tolerance = {1e-5, 1e-6};
  c.elements = 100;
  c.message = "ok";
  r.correctness = c;
  r.shape_ok = true;
  r.flop = 4e6;
  r.bytes = 8e6;
  r.params = {{"mb", 2}, {"ic", 4}};
  r.command = "myconv --problem mb2ic4ih64oc8kh5 --backend libtorch_cpu";
  return r;
}

TEST(Table, AlignsColumns) {
  Table t({"backend", "ms", "ok"});
  t.add_row({"a", "1.5", "yes"});
  t.add_row({"longname", "12.25", "no"});
  std::ostringstream os;
  t.print(os);
  // Widths 8, 5, 3; text left-aligned, numbers right-aligned, two spaces between columns.
  EXPECT_EQ(os.str(),
            "backend   ms     ok \n"
            "--------------------\n"
            "a           1.5  yes\n"
            "longname  12.25  no \n");
}

TEST(Table, ShortRowsArePadded) {
  Table t({"x", "y"});
  t.add_row({"long"});
  std::ostringstream os;
  t.print(os);
  EXPECT_EQ(os.str(),
            "x     y\n"
            "-------\n"
            "long   \n");
}

TEST(FormatMs, SignificantDigitsAndMissing) {
  EXPECT_EQ(format_ms(1.23456), "1.235");
  EXPECT_EQ(format_ms(2.0), "2");
  EXPECT_EQ(format_ms(0.000123456), "0.0001235");
  EXPECT_EQ(format_ms(1.23456, 2), "1.2");
  EXPECT_EQ(format_ms(12345.6), "12346");  // plain notation, not 1.235e+04
  EXPECT_EQ(format_ms(std::nullopt), "n/a");
  EXPECT_EQ(format_ms(std::numeric_limits<double>::quiet_NaN()), "n/a");
  EXPECT_EQ(format_ms(std::numeric_limits<double>::infinity()), "n/a");
}

TEST(ResultsToCsv, HeaderAndOneLinePerResultWithTheSameColumnCount) {
  Result a = full_cpu_result();
  a.reason = "slow, but fine";           // a comma: must be quoted
  a.command = "myconv --name \"seed\"";  // quotes: must be doubled
  Result b;                              // nearly empty: every optional field missing
  b.suite = "conv";
  b.backend = "onednn_cpu";
  b.device = "cpu";
  b.problem = "mb1ic1ih8oc1kh1";
  b.dtype = "fp32";
  b.status = Status::skipped;
  b.reason = "not built";
  const std::string csv = results_to_csv({a, b});

  const auto lines = lines_of(csv);
  ASSERT_EQ(lines.size(), 3u);
  const int columns = count_unquoted_commas(lines[0]) + 1;
  EXPECT_EQ(columns, 49);
  for (const auto& line : lines) EXPECT_EQ(count_unquoted_commas(line) + 1, columns) << line;
  EXPECT_NE(lines[1].find("\"slow, but fine\""), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("\"myconv --name \"\"seed\"\"\""), std::string::npos) << lines[1];

  // Every value sits under its own header.
  const auto records = parse_csv(csv);
  ASSERT_EQ(records.size(), 3u);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < records[0].size(); ++i) col[records[0][i]] = i;
  ASSERT_EQ(col.size(), records[0].size()) << "duplicate header names";
  const auto& ra = records[1];
  const auto& rb = records[2];
  ASSERT_EQ(ra.size(), records[0].size());
  ASSERT_EQ(rb.size(), records[0].size());
  EXPECT_EQ(ra[col.at("suite")], "conv");
  EXPECT_EQ(ra[col.at("backend")], "libtorch_cpu");
  EXPECT_EQ(ra[col.at("problem")], "mb2ic4ih64oc8kh5");
  EXPECT_EQ(ra[col.at("status")], "passed");
  EXPECT_EQ(ra[col.at("reason")], "slow, but fine");
  EXPECT_EQ(ra[col.at("workspace_bytes")], "4096");
  EXPECT_EQ(ra[col.at("compile_time_ms")], "12.5");
  EXPECT_EQ(ra[col.at("first_run_ms")], "3.25");
  EXPECT_EQ(ra[col.at("cpu_time_ms_median")], "1.5");
  EXPECT_EQ(ra[col.at("gpu_time_ms_median")], "");
  EXPECT_EQ(ra[col.at("gpu_time_ms_samples")], "");
  EXPECT_EQ(ra[col.at("total_time_ms_median")], "2");
  EXPECT_EQ(ra[col.at("total_time_ms_min")], "1.8");
  EXPECT_EQ(ra[col.at("total_time_ms_samples")], "10");
  EXPECT_EQ(ra[col.at("correct")], "true");
  EXPECT_EQ(ra[col.at("mismatches")], "0");
  EXPECT_EQ(ra[col.at("flop")], "4000000");
  EXPECT_EQ(ra[col.at("gflop_per_s")], "2");  // 4e6 flop in 2 ms
  EXPECT_EQ(ra[col.at("command")], "myconv --name \"seed\"");
  EXPECT_EQ(ra[col.at("timing_mode")], "real");
  EXPECT_EQ(ra[col.at("runs_per_sample")], "1");
  EXPECT_EQ(ra[col.at("cold_cache")], "false");
  EXPECT_EQ(ra[col.at("throttled")], "");
  EXPECT_EQ(rb[col.at("status")], "skipped");
  EXPECT_EQ(rb[col.at("total_time_ms_median")], "");
  EXPECT_EQ(rb[col.at("correct")], "");
  EXPECT_EQ(rb[col.at("gflop_per_s")], "");
}

TEST(ResultsToCsv, NonFiniteNumbersAreEmpty) {
  Result r = full_cpu_result();
  r.status = Status::incorrect;
  r.correctness->passed = false;
  r.correctness->max_abs_err = std::numeric_limits<double>::infinity();
  r.correctness->rel_l2_err = std::numeric_limits<double>::quiet_NaN();
  const auto records = parse_csv(results_to_csv({r}));
  ASSERT_EQ(records.size(), 2u);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < records[0].size(); ++i) col[records[0][i]] = i;
  EXPECT_EQ(records[1][col.at("correct")], "false");
  EXPECT_EQ(records[1][col.at("max_abs_err")], "");
  EXPECT_EQ(records[1][col.at("rel_l2_err")], "");
}

TEST(ResultsToCsv, EmptyListIsHeaderOnly) {
  const auto lines = lines_of(results_to_csv({}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("suite,backend,device,problem", 0), 0u);
}

TEST(WriteFileAtomic, WritesFullContentAndLeavesNoTempFile) {
  TempDir dir;
  const fs::path path = dir.path() / "out.txt";
  std::string text = "line one\nline two, with \"quotes\"\n";
  text += std::string(1, '\0') + "binary\r\n";
  text += std::string(100000, 'x');
  write_file_atomic(path.string(), text);
  EXPECT_EQ(read_file(path), text);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.txt"});

  // Overwriting with shorter text replaces the file, no stale tail.
  write_file_atomic(path.string(), "short");
  EXPECT_EQ(read_file(path), "short");
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.txt"});
}

TEST(WriteFileAtomic, ThrowsWhenDirectoryIsMissing) {
  TempDir dir;
  const fs::path path = dir.path() / "missing" / "out.txt";
  EXPECT_THROW(write_file_atomic(path.string(), "x"), std::runtime_error);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(dir.entries().empty());
}

TEST(WriteFileAtomic, FailedRenameLeavesNoTempFile) {
  TempDir dir;
  const fs::path path = dir.path() / "occupied";
  fs::create_directory(path);
  std::ofstream(path / "keep") << "x";  // a non-empty directory cannot be replaced by a file
  EXPECT_THROW(write_file_atomic(path.string(), "text"), std::runtime_error);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"occupied"});
  EXPECT_TRUE(fs::is_directory(path));
}

TEST(WriteJson, ParsesAndHasTheSchema) {
  TempDir dir;
  ResultSet set;
  set.system = {{"host", "testhost"}, {"cpu_logical_cores", 2}};
  Result cpu = full_cpu_result();
  cpu.compile_time_ms = std::numeric_limits<double>::quiet_NaN();  // becomes null
  cpu.correctness->rel_l2_err = std::numeric_limits<double>::infinity();
  cpu.total_time_ms->p90 = -std::numeric_limits<double>::infinity();
  Result gpu = full_cpu_result();
  gpu.backend = "libtorch_cuda";
  gpu.device = "cuda";
  gpu.gpu_time_ms = summary_with_median(0.5, 20);
  set.results = {cpu, gpu};
  const fs::path path = dir.path() / "results.json";
  write_json(path.string(), set);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"results.json"});

  const std::string text = read_file(path);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(text)) << text;
  EXPECT_EQ(j.at("schema_version"), 2);
  EXPECT_EQ(j.at("system").at("host"), "testhost");
  ASSERT_EQ(j.at("results").size(), 2u);

  const auto& r = j.at("results")[0];
  for (const char* key :
       {"suite", "backend", "device", "problem", "dtype", "status", "reason", "compile_time_ms",
        "cpu_time_ms", "gpu_time_ms", "total_time_ms", "correctness"})
    EXPECT_TRUE(r.contains(key)) << key;
  EXPECT_EQ(r.at("suite"), "conv");
  EXPECT_EQ(r.at("backend"), "libtorch_cpu");
  EXPECT_EQ(r.at("device"), "cpu");
  EXPECT_EQ(r.at("problem"), "mb2ic4ih64oc8kh5");
  EXPECT_EQ(r.at("dtype"), "fp32");
  EXPECT_EQ(r.at("status"), "passed");
  EXPECT_EQ(r.at("reason"), "");
  EXPECT_TRUE(r.at("compile_time_ms").is_null());  // NaN
  for (const char* key : {"median", "min", "mean", "cv", "samples"})
    EXPECT_TRUE(r.at("cpu_time_ms").contains(key)) << key;
  EXPECT_EQ(r.at("cpu_time_ms").at("median"), 1.5);
  EXPECT_EQ(r.at("cpu_time_ms").at("samples"), 10);
  EXPECT_DOUBLE_EQ(r.at("cpu_time_ms").at("cv").get<double>(), 0.01);
  EXPECT_TRUE(r.at("gpu_time_ms").is_null());  // absent on a CPU backend
  EXPECT_EQ(r.at("total_time_ms").at("median"), 2.0);
  EXPECT_TRUE(r.at("total_time_ms").at("p90").is_null());  // -Inf
  const auto& c = r.at("correctness");
  EXPECT_EQ(c.at("passed"), true);
  EXPECT_EQ(c.at("max_abs_err"), 1e-6);
  EXPECT_TRUE(c.at("rel_l2_err").is_null());  // Inf
  EXPECT_EQ(c.at("tolerance").at("atol"), 1e-5);
  EXPECT_EQ(c.at("tolerance").at("rtol"), 1e-6);

  const auto& g = j.at("results")[1];
  EXPECT_EQ(g.at("compile_time_ms"), 12.5);
  ASSERT_TRUE(g.at("gpu_time_ms").is_object());
  EXPECT_EQ(g.at("gpu_time_ms").at("median"), 0.5);
  EXPECT_EQ(g.at("gpu_time_ms").at("samples"), 20);
}

TEST(PrintResultBlock, MentionsStatusAndReproduceLine) {
  Result r = full_cpu_result();
  std::ostringstream os;
  print_result_block(os, r);
  const std::string text = os.str();
  EXPECT_NE(text.find("libtorch_cpu"), std::string::npos) << text;
  EXPECT_NE(text.find("status        passed"), std::string::npos) << text;
  EXPECT_NE(text.find("reproduce     " + r.command + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find("mkldnn"), std::string::npos) << text;
  EXPECT_NE(text.find("2 GFLOP/s"), std::string::npos) << text;  // 4e6 flop in 2 ms

  Result failed = full_cpu_result();
  failed.status = Status::failed;
  failed.reason = "boom";
  failed.correctness->passed = false;
  failed.correctness->mismatches = 1;
  failed.correctness->first_mismatches = {{42, 1.5, 2.5}};
  std::ostringstream out;
  print_result_block(out, failed);
  EXPECT_NE(out.str().find("status        failed: boom"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("FAILED"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("[42] got 1.5, expected 2.5"), std::string::npos) << out.str();
}

// The row of `backend` in a comparison table, split on blanks (no cell holds a blank).
std::vector<std::string> comparison_row(const std::string& table, const std::string& backend) {
  for (const auto& line : lines_of(table)) {
    const auto w = words_of(line);
    if (w.size() > 2 && w[1] == backend) return w;
  }
  return {};
}

TEST(PrintComparison, SpeedupAgainstReferenceBackend) {
  Result ref = full_cpu_result();  // libtorch_cpu, total 4 ms
  ref.total_time_ms = summary_with_median(4.0);
  Result mine = full_cpu_result();
  mine.backend = "mine_cpu";
  mine.total_time_ms = summary_with_median(2.0);
  Result gpu = full_cpu_result();
  gpu.backend = "mine_cuda";
  gpu.device = "cuda";
  gpu.gpu_time_ms = summary_with_median(0.5);  // no GPU reference ran: compared with the CPU one
  Result wrong_shape = full_cpu_result();
  wrong_shape.backend = "bad_cpu";
  wrong_shape.shape_ok = false;
  std::ostringstream os;
  print_comparison(os, {mine, ref, gpu, wrong_shape}, "libtorch_cpu", "libtorch_cuda");
  const std::string text = os.str();

  const auto header = words_of(lines_of(text).at(0));
  ASSERT_EQ(header.size(), 11u);
  EXPECT_EQ(header[1], "backend");
  EXPECT_EQ(header[9], "vs_pytorch");
  const auto m = comparison_row(text, "mine_cpu");
  ASSERT_EQ(m.size(), 11u) << text;
  EXPECT_EQ(m[9], "2x") << text;
  EXPECT_EQ(m[10], "yes");
  EXPECT_EQ(comparison_row(text, "libtorch_cpu").at(9), "1x") << text;
  EXPECT_EQ(comparison_row(text, "mine_cuda").at(9), "8x") << text;
  EXPECT_EQ(comparison_row(text, "bad_cpu").at(10), "NO") << text;
}

TEST(PrintComparison, NoSpeedupWithoutPassingReference) {
  Result ref = full_cpu_result();
  ref.status = Status::incorrect;
  Result mine = full_cpu_result();
  mine.backend = "mine_cpu";
  Result other_problem = full_cpu_result();
  other_problem.backend = "mine_cpu2";
  other_problem.problem = "mb1ic1ih8oc1kh1";
  std::ostringstream os;
  print_comparison(os, {ref, mine, other_problem}, "libtorch_cpu", "libtorch_cuda");
  EXPECT_EQ(comparison_row(os.str(), "mine_cpu").at(9), "n/a") << os.str();
  EXPECT_EQ(comparison_row(os.str(), "mine_cpu2").at(9), "n/a") << os.str();
}

TEST(PrintComparison, GpuReferencePreferredForGpuBackends) {
  Result cpu_ref = full_cpu_result();
  cpu_ref.total_time_ms = summary_with_median(100.0);
  Result gpu_ref = full_cpu_result();
  gpu_ref.backend = "libtorch_cuda";
  gpu_ref.device = "cuda";
  gpu_ref.gpu_time_ms = summary_with_median(3.0);
  Result gpu = full_cpu_result();
  gpu.backend = "mine_cuda";
  gpu.device = "cuda";
  gpu.gpu_time_ms = summary_with_median(1.5);
  std::ostringstream os;
  print_comparison(os, {cpu_ref, gpu_ref, gpu}, "libtorch_cpu", "libtorch_cuda");
  EXPECT_EQ(comparison_row(os.str(), "mine_cuda").at(9), "2x") << os.str();
}

TEST(PrintComparison, MarkdownHasTheSameColumns) {
  Result mine = full_cpu_result();
  mine.backend = "a|b";
  std::ostringstream os;
  print_summary(os, {mine}, /*markdown=*/true);
  const auto lines = lines_of(os.str());
  ASSERT_EQ(lines.size(), 3u) << os.str();
  EXPECT_EQ(lines[0].rfind("| problem | backend | device | dtype | status |", 0), 0u) << lines[0];
  EXPECT_NE(lines[1].find("| --- |"), std::string::npos);
  EXPECT_NE(lines[2].find("a\\|b"), std::string::npos) << lines[2];
}

}  // namespace
}  // namespace bench
