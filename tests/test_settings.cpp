#include "conv/settings.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.hpp"

namespace conv {
namespace {

std::string write_temp(const std::string& text) {
  const std::string path = testing::TempDir() + "/shapes_" +
                           std::to_string(reinterpret_cast<std::uintptr_t>(&text)) + ".txt";
  std::ofstream(path) << text;
  return path;
}

TEST(Settings, DefaultsGiveTheSeedProblem) {
  const auto problems = expand(Settings{});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].str(), "mb2ic4ih64oc8kh5");
}

TEST(Settings, ListsExpandToTheCrossProduct) {
  Settings s;
  s.input_size = {32, 64, 128};
  s.kernel_size = {3, 5, 7};
  s.dtypes = {DataType::fp32, DataType::bf16};
  const auto problems = expand(s);
  ASSERT_EQ(problems.size(), 18u);
  EXPECT_EQ(problems.front().str(), "mb2ic4ih32oc8kh3");
  EXPECT_EQ(problems.back().str(), "mb2ic4ih128oc8kh7dtbf16");
}

TEST(Settings, InvalidCombinationNamesTheOptions) {
  Settings s;
  s.input_size = {4};
  s.kernel_size = {5};
  try {
    expand(s);
    FAIL() << "accepted a kernel larger than the input";
  } catch (const bench::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--kernel_size 5"), std::string::npos) << e.what();
  }
}

TEST(Settings, DescriptorsReplaceDimensionsAndCrossDtypes) {
  Settings s;
  s.descriptors = {"mb1ic3ih8oc4kh3", "mb1ic3ih8oc4kh3dtbf16"};
  s.dtypes = {DataType::fp32, DataType::fp16};
  s.layouts = {Layout::nchw, Layout::nhwc};
  const auto problems = expand(s);
  std::vector<std::string> got;
  for (const auto& p : problems) got.push_back(p.str());
  // The second descriptor pins bf16, so crossing it with dtypes gives duplicates, removed.
  EXPECT_EQ(got, (std::vector<std::string>{"mb1ic3ih8oc4kh3", "mb1ic3ih8oc4kh3dtbf16",
                                           "mb1ic3ih8oc4kh3nhwc", "mb1ic3ih8oc4kh3dtbf16nhwc",
                                           "mb1ic3ih8oc4kh3dtfp16", "mb1ic3ih8oc4kh3dtfp16nhwc"}));
}

TEST(Settings, ShapeFileWithNamesAndComments) {
  const std::string path = write_temp(
      "# ResNet-like\n"
      "\n"
      "conv1: mb32ic3ih224oc64kh7sh2ph3   # stem\n"
      "mb32ic64ih56oc64kh3ph1n\"res2\"\n"
      "  mb2ic4ih64oc8kh5  \n");
  Settings s;
  s.shape_files = {path};
  const auto problems = expand(s);
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].name, "conv1");
  EXPECT_EQ(problems[0].str(), "mb32ic3ih224oc64kh7sh2ph3");
  EXPECT_EQ(problems[1].name, "res2");
  EXPECT_EQ(problems[2].name, "");
  std::remove(path.c_str());
}

TEST(Settings, ShapeFileErrorsNameFileAndLine) {
  const std::string path = write_temp("mb2ic4ih64oc8kh5\nmb2ic4ih64oc8kq5\n");
  Settings s;
  s.shape_files = {path};
  try {
    expand(s);
    FAIL();
  } catch (const bench::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
  s.shape_files = {"/nonexistent/shapes.txt"};
  EXPECT_THROW(expand(s), bench::UsageError);
}

TEST(Settings, ShippedShapeFilesParse) {
  // Every file in experiments/shapes/: it parses, each line is written in canonical form (the
  // descriptor round-trips), and no label is used twice in a file.
  std::set<std::string> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(MYCONV_SOURCE_DIR) + "/experiments/shapes"))
    if (entry.path().extension() == ".txt") files.insert(entry.path().string());
  for (const char* f : {"seed.txt", "resnet50.txt", "vgg16.txt", "mobilenet_v2.txt", "tails.txt"})
    EXPECT_EQ(files.count(std::string(MYCONV_SOURCE_DIR) + "/experiments/shapes/" + f), 1u) << f;
  for (const auto& f : files) {
    Settings s;
    s.shape_files = {f};
    std::vector<Problem> problems;
    ASSERT_NO_THROW(problems = expand(s)) << f;
    EXPECT_FALSE(problems.empty()) << f;
    std::set<std::string> labels;
    for (const auto& entry : read_shape_file(f)) {
      const std::string text = entry.substr(entry.find('\t') + 1);
      const Problem p = parse_problem(text);
      EXPECT_EQ(p.str_with_name(), text) << entry << ": not in canonical form";
      EXPECT_TRUE(labels.insert(p.name).second) << entry << ": label used twice";
    }
    EXPECT_EQ(problems.size(), labels.size()) << f;
  }
}

}  // namespace
}  // namespace conv
