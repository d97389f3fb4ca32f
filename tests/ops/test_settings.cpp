// Tests of ops/settings.cpp: size classes to op lists, filters, dtype crossing, bad settings.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "core/error.hpp"
#include "ops/settings.hpp"
#include "tests/common/temp_dir.hpp"

namespace ops {
namespace {

Settings shipped() {
  Settings s;
  s.ops_dir = MYCONV_SOURCE_DIR "/experiments/ops";
  return s;
}

TEST(OpsSettings, EveryShippedOpListParsesAndCoversEveryOp) {
  Settings s = shipped();
  s.sizes = {"small", "medium", "large", "xlarge", "batched"};
  std::vector<std::string> notes;
  const std::vector<Problem> all = expand(s, &notes);
  EXPECT_TRUE(notes.empty()) << notes.front();
  for (Op op : all_ops())
    EXPECT_TRUE(std::any_of(all.begin(), all.end(), [&](const Problem& p) { return p.op == op; }))
        << to_string(op);
  // The default class holds every op.
  s.sizes = {"medium"};
  const std::vector<Problem> medium = expand(s);
  for (Op op : all_ops()) {
    EXPECT_TRUE(std::any_of(medium.begin(), medium.end(), [&](const Problem& p) {
      return p.op == op;
    })) << to_string(op);
  }
}

TEST(OpsSettings, SizeClassesHoldTheirElementCounts) {
  Settings s = shipped();
  const std::vector<std::pair<std::string, std::pair<double, double>>> bounds = {
      {"small", {65536, 262144}},
      {"medium", {4.1e6, 4.3e6}},
      {"large", {16.7e6, 16.8e6}},
      {"xlarge", {67e6, 67.2e6}}};
  for (const auto& [size, range] : bounds) {
    s.sizes = {size};
    for (const Problem& p : expand(s)) {
      if (p.op == Op::matmul) continue;
      EXPECT_GE(double(p.input_elements()), range.first) << size << " " << p.str();
      EXPECT_LE(double(p.input_elements()), range.second) << size << " " << p.str();
    }
  }
}

TEST(OpsSettings, AllIsEveryClassButXlarge) {
  Settings s = shipped();
  s.sizes = {"all"};
  const std::vector<Problem> all = expand(s);
  EXPECT_FALSE(std::any_of(all.begin(), all.end(), [](const Problem& p) {
    return p.str().find("8192x8192") != std::string::npos;
  }));
  EXPECT_TRUE(std::any_of(all.begin(), all.end(),
                          [](const Problem& p) { return p.str() == "sum:4x512x896:axis=2"; }));
}

TEST(OpsSettings, FiltersAndDtypes) {
  Settings s = shipped();
  s.categories = {"reduction"};
  s.ops = {"sum", "max"};
  s.dtypes = {DataType::fp32, DataType::bf16};
  const std::vector<Problem> got = expand(s);
  ASSERT_FALSE(got.empty());
  for (const Problem& p : got) {
    EXPECT_TRUE(p.op == Op::sum || p.op == Op::max) << p.str();
  }
  EXPECT_EQ(std::count_if(got.begin(), got.end(),
                          [](const Problem& p) { return p.dtype == DataType::bf16; }) *
                2,
            std::ptrdiff_t(got.size()));
  // tf32 is a matmul mode: the other ops are left out, with a note.
  s = shipped();
  s.dtypes = {DataType::tf32};
  std::vector<std::string> notes;
  const std::vector<Problem> tf32 = expand(s, &notes);
  ASSERT_FALSE(tf32.empty());
  for (const Problem& p : tf32) EXPECT_EQ(p.op, Op::matmul);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("tf32"), std::string::npos);
}

TEST(OpsSettings, DescriptorsKeepTheirDtypeAndFilesNameTheirLine) {
  Settings s;
  s.descriptors = {"add:8x8:bf16", "relu:16"};
  s.dtypes = {DataType::fp16};
  const std::vector<Problem> got = expand(s);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].dtype, DataType::bf16);
  EXPECT_EQ(got[1].dtype, DataType::fp16);

  bench::testing::TempDir dir;
  const std::string file = (dir.path() / "list.txt").string();
  std::ofstream(file) << "# two ops\nrelu:64  sum:8x8:axis=1\n\nsoftmax:0x4\n";
  s = Settings();
  s.ops_files = {file};
  try {
    expand(s);
    FAIL() << "a bad line must be refused";
  } catch (const bench::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(file + ":4"), std::string::npos) << e.what();
  }
}

TEST(OpsSettings, BadSettingsSayWhy) {
  Settings s = shipped();
  s.sizes = {"huge"};
  EXPECT_THROW(expand(s), bench::UsageError);
  s = shipped();
  s.categories = {"conv"};
  EXPECT_THROW(expand(s), bench::UsageError);
  s = shipped();
  s.ops = {"gemm"};
  EXPECT_THROW(expand(s), bench::UsageError);
  s = shipped();
  s.ops_files = {"/nonexistent/list.txt"};
  EXPECT_THROW(expand(s), bench::UsageError);
  // A filter that leaves nothing.
  s = shipped();
  s.categories = {"matmul"};
  s.ops = {"add"};
  EXPECT_THROW(expand(s), bench::UsageError);
}

}  // namespace
}  // namespace ops
