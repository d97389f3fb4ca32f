// core/paths.hpp: input files must be regular and readable (a FIFO or a folder is refused without
// being opened, so that nothing blocks); output files and folders are checked, and nothing is
// made, before a case runs.
#include "core/paths.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "core/error.hpp"
#include "tests/common/temp_dir.hpp"

namespace bench {
namespace {

// The UsageError's message of f(), or "" when it does not throw.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

struct PathsTest : ::testing::Test {
  testing::TempDir tmp;
  std::string dir = tmp.path().string(), file = dir + "/file.txt", fifo = dir + "/fifo";
  void SetUp() override {
    std::ofstream(file) << "x\n";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  }
};

TEST_F(PathsTest, InputFilesAreRegularAndReadable) {
  EXPECT_EQ(error_of([&] { check_input_file("--shapes", file); }), "");
  // A FIFO is refused at once (opening it for reading would block until a writer comes).
  EXPECT_NE(error_of([&] { check_input_file("--shapes", fifo); }).find("is a FIFO"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_input_file("--ops-file", dir); }).find("--ops-file: "),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_input_file("--ops-file", dir); }).find("is a folder"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_input_file("--shapes", dir + "/none"); }).find("cannot read"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_input_file("--shapes", ""); }), "");
}

TEST_F(PathsTest, OutputFilesAreCheckedNotMade) {
  EXPECT_EQ(error_of([&] { check_output_file("--json", dir + "/new.json"); }), "");
  EXPECT_EQ(error_of([&] { check_output_file("--json", file); }), "");  // replaced when written
  EXPECT_EQ(error_of([&] { check_output_file("--json", ""); }), "");
  EXPECT_NE(error_of([&] { check_output_file("--csv", dir); }).find("is a folder"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_output_file("--csv", fifo); }).find("FIFO"), std::string::npos);
  EXPECT_NE(
      error_of([&] { check_output_file("--json", dir + "/no/x.json"); }).find("does not exist"),
      std::string::npos);
  EXPECT_NE(error_of([&] { check_output_file("--json", file + "/x.json"); }).find("not a folder"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_output_file("--json", dir + "/new/"); }), "");
  EXPECT_EQ(tmp.entries().size(), 2u);  // nothing was made
}

TEST_F(PathsTest, OutputFoldersAreCheckedThenMade) {
  EXPECT_EQ(error_of([&] { check_output_dir("--trace-dir", dir); }), "");
  EXPECT_EQ(error_of([&] { check_output_dir("--trace-dir", dir + "/a/b/c"); }), "");
  EXPECT_EQ(tmp.entries().size(), 2u);  // checking makes nothing
  EXPECT_NE(error_of([&] { check_output_dir("--profile", file); }).find("not a folder"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_output_dir("--profile", file + "/sub/x"); }).find("not a folder"),
            std::string::npos);
  make_output_dir("--trace-dir", dir + "/a/b");
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/a/b").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_NE(error_of([&] { make_output_dir("--save-tensors", file + "/t"); }), "");
}

}  // namespace
}  // namespace bench
