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
    EXPECT_NE(std::string(e.what()).find("--kernel-size 5"), std::string::npos) << e.what();
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
      "mb32ic3ih224oc64kh7sh2ph3n\"conv1\"   # stem\n"
      "mb32ic64ih56oc64kh3ph1n\"res2 # not a comment\"\n"
      "  mb2ic4ih64oc8kh5  mb2ic4ih32oc8kh5\n");
  Settings s;
  s.shape_files = {path};
  const auto problems = expand(s);
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_EQ(problems[0].name, "conv1");
  EXPECT_EQ(problems[0].str(), "mb32ic3ih224oc64kh7sh2ph3");
  EXPECT_EQ(problems[1].name, "res2 # not a comment");
  EXPECT_EQ(problems[2].name, "");
  EXPECT_EQ(problems[3].str(), "mb2ic4ih32oc8kh5");  // whitespace separates descriptors
  std::remove(path.c_str());
}

TEST(Settings, BenchdnnInputFileIsReadAsItIs) {
  // Lines written in benchdnn's grammar (its inputs/conv/shapes_* and batch files): options are
  // noted and not run, a repeated line runs once, 3D and asymmetric lines stay as unsupported
  // problems, and every problem line is accounted for.
  const std::string path = write_temp(
      "# resnet_50\n"
      "--dir=FWD_B --batch=shapes_other\n"
      "g1mb50ic3ih224iw224oc64oh112ow112kh7kw7sh2sw2ph3pw3n\"resnet_50:conv1\"\n"
      "mb50ic64ih56oc256oh56kh1ph0n\"resnet_50:res2a_branch1*4\"\n"
      "# mb50ic64ih56oc64oh56kh1ph0n\"resnet_50:res2a_branch2a\"  # commented out\n"
      "mb2_ic3oc48_ih227oh111kh5sh2ph1dh1_n\"dilated_conv:18\"\n"
      "mb20ic4ih8oc6oh5kh3ph1dh1n\"dilated_conv:2\"\n"
      "--strides=1x2 mb4_ic1ih161iw700_oc32_kh5kw20_sh2sw2_ph0pw0\n"
      "mb4_ic1ih161iw700_oc32_kh5kw20_sh2sw2_ph0pw0\n"
      "g1mb50ic3iw224oc64ow112kw7sw2pw3n\"conv1d:2\"\n"
      "mb1ic16id8ih8iw8oc16od8oh8ow8kd3kh3kw3pd1ph1pw1n\"3d\"\n");
  Settings s;
  s.shape_files = {path};
  std::vector<std::string> notes;
  const auto problems = expand(s, &notes);
  ASSERT_EQ(problems.size(), 7u);
  ASSERT_EQ(notes.size(), 4u);
  EXPECT_EQ(notes[0], path + ":2: benchdnn option '--dir=FWD_B' is not supported; ignored");
  EXPECT_EQ(notes[1],
            path + ":2: benchdnn option '--batch=shapes_other' is not supported; ignored");
  EXPECT_EQ(notes[2], path + ":8: benchdnn option '--strides=1x2' is not supported; ignored");
  EXPECT_EQ(notes[3], path + ":9: the same problem as " + path + ":8; run once");
  EXPECT_EQ(problems[0].name, "resnet_50:conv1");
  EXPECT_EQ(problems[1].name, "resnet_50:res2a_branch1*4");
  EXPECT_EQ(problems[2].oh(), 111);
  EXPECT_TRUE(problems[2].unsupported_reason().empty());
  EXPECT_FALSE(problems[3].unsupported_reason().empty());  // asymmetric padding
  EXPECT_EQ(problems[4].str(), "mb4ic1ih161iw700oc32kh5kw20sh2sw2");
  EXPECT_EQ(problems[5].ih, 1);  // 1D as 2D
  EXPECT_TRUE(problems[6].is_3d());
  EXPECT_FALSE(problems[6].unsupported_reason().empty());
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

TEST(Settings, CommandLineDilationIsPytorchs) {
  Settings s;
  s.input_size = {10};
  s.kernel_size = {3};
  s.dilation = {2};
  const auto problems = expand(s);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].dilation_h(), 2);
  EXPECT_EQ(problems[0].str(), "mb2ic4ih10oc8kh3dh1");
  s.dilation = {0};
  EXPECT_THROW(expand(s), bench::UsageError);
}

TEST(Settings, ShippedShapeFilesParse) {
  // Every file in experiments/shapes/: it parses, each line is written in canonical form (the
  // descriptor round-trips), every problem runs here (2D, symmetric padding), and no label is
  // used twice in a file.
  std::set<std::string> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(MYCONV_SOURCE_DIR) + "/experiments/shapes"))
    if (entry.path().extension() == ".txt") files.insert(entry.path().string());
  for (const char* f :
       {"seed.txt", "resnet50.txt", "vgg16.txt", "mobilenet_v2.txt", "tails.txt", "inception_v3.txt",
        "yolov2.txt", "ssd300.txt", "unet.txt", "deepbench_training.txt",
        "deepbench_inference_server.txt", "deepbench_inference_device.txt"})
    EXPECT_EQ(files.count(std::string(MYCONV_SOURCE_DIR) + "/experiments/shapes/" + f), 1u) << f;
  for (const auto& f : files) {
    Settings s;
    s.shape_files = {f};
    std::vector<Problem> problems;
    std::vector<std::string> notes;
    ASSERT_NO_THROW(problems = expand(s, &notes)) << f;
    EXPECT_TRUE(notes.empty()) << f << ": " << notes.front();
    EXPECT_FALSE(problems.empty()) << f;
    std::set<std::string> labels;
    for (const auto& entry : read_shape_file(f).entries) {
      const Problem p = parse_problem(entry.descriptor);
      EXPECT_EQ(p.str_with_name(), entry.descriptor) << entry.origin << ": not in canonical form";
      EXPECT_TRUE(labels.insert(p.name).second) << entry.origin << ": label used twice";
      EXPECT_EQ(p.unsupported_reason(), "") << entry.origin;
    }
    EXPECT_EQ(problems.size(), labels.size()) << f;
  }
}

}  // namespace
}  // namespace conv
