#include "core/npy.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/common/temp_dir.hpp"

namespace bench {
namespace {

namespace fs = std::filesystem;

using testing::read_file;
using testing::TempDir;

// Checks the header against the .npy 1.0 format and returns the shape text inside the dict,
// e.g. "(2,3)".
std::string check_header(const std::string& h, const std::string& descr) {
  EXPECT_EQ(h.size() % 64, 0u) << "data must start 64-byte aligned";
  EXPECT_GE(h.size(), 64u);
  EXPECT_EQ(h.substr(0, 6), std::string("\x93NUMPY"));
  EXPECT_EQ(h[6], '\x01');  // version 1.0
  EXPECT_EQ(h[7], '\x00');
  const std::size_t len = static_cast<unsigned char>(h[8]) |
                          static_cast<std::size_t>(static_cast<unsigned char>(h[9])) << 8;
  EXPECT_EQ(10 + len, h.size()) << "little-endian header length";
  EXPECT_EQ(h.back(), '\n');
  // The dict is a Python literal; its shape must be a tuple: "()", "(5,)", "(2,3)", "(2, 3)".
  const std::regex dict(R"(\{'descr': '([^']*)', 'fortran_order': False, )"
                        R"('shape': (\(\)|\(\d+,\)|\(\d+(?:, ?\d+)+,?\)), \} *\n)");
  std::smatch m;
  const std::string text = h.substr(10);
  if (!std::regex_match(text, m, dict)) {
    ADD_FAILURE() << "not a valid header dict: " << text;
    return "";
  }
  EXPECT_EQ(m[1], descr);
  return m[2];
}

TEST(NpyHeader, TwoDimensional) {
  const std::string h = npy_header("<f4", {2, 3});
  EXPECT_EQ(check_header(h, "<f4"), "(2,3)");
  EXPECT_NE(h.find("'shape': (2,3), "), std::string::npos);
}

TEST(NpyHeader, OneDimensionalHasTrailingComma) {
  EXPECT_EQ(check_header(npy_header("<f8", {5}), "<f8"), "(5,)");
}

TEST(NpyHeader, ZeroDimensionalIsEmptyTuple) {
  EXPECT_EQ(check_header(npy_header("<f4", {}), "<f4"), "()");
}

TEST(NpyHeader, FourDimensional) {
  EXPECT_EQ(check_header(npy_header("<f4", {32, 64, 56, 56}), "<f4"), "(32,64,56,56)");
}

TEST(NpyHeader, PaddedToSixtyFourForAnyLength) {
  // Grow the shape text one digit at a time across several multiples of 64.
  std::vector<std::int64_t> shape;
  for (int i = 0; i < 40; ++i) {  // past 256 bytes: the length's high byte is used
    shape.push_back(i % 2 ? 7 : 1234567);
    check_header(npy_header("<f4", shape), "<f4");
  }
  EXPECT_GT(npy_header("<f4", shape).size(), 256u);
  for (std::int64_t d = 1; d <= 10000000000LL; d *= 10)
    check_header(npy_header("<f4", {d, 3}), "<f4");
}

TEST(WriteNpy, FloatFileIsHeaderPlusData) {
  TempDir dir;
  const fs::path path = dir.path() / "a.npy";
  const std::vector<float> data = {1.0f, -2.5f, 3.25f, 0.1f, 1e30f, -0.0f};
  write_npy(path.string(), data.data(), {2, 3});
  const std::string file = read_file(path);
  const std::string header = npy_header("<f4", {2, 3});
  ASSERT_EQ(file.size(), header.size() + data.size() * sizeof(float));
  EXPECT_EQ(file.substr(0, header.size()), header);
  EXPECT_EQ(check_header(file.substr(0, header.size()), "<f4"), "(2,3)");
  std::vector<float> back(data.size());
  std::memcpy(back.data(), file.data() + header.size(), back.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(back.data(), data.data(), data.size() * sizeof(float)), 0);
}

TEST(WriteNpy, DoubleFileIsHeaderPlusData) {
  TempDir dir;
  const fs::path path = dir.path() / "b.npy";
  const std::vector<double> data = {1.0, -2.5, 3.141592653589793, 1e-300, 6.02e23};
  write_npy(path.string(), data.data(), {5});
  const std::string file = read_file(path);
  const std::string header = npy_header("<f8", {5});
  ASSERT_EQ(file.size(), header.size() + data.size() * sizeof(double));
  EXPECT_EQ(check_header(file.substr(0, header.size()), "<f8"), "(5,)");
  std::vector<double> back(data.size());
  std::memcpy(back.data(), file.data() + header.size(), back.size() * sizeof(double));
  EXPECT_EQ(back, data);
}

TEST(WriteNpy, OverwritesAndHandlesEmptyArray) {
  TempDir dir;
  const fs::path path = dir.path() / "c.npy";
  const std::vector<float> big(1000, 1.0f);
  write_npy(path.string(), big.data(), {10, 100});
  const float one = 1.0f;
  write_npy(path.string(), &one, {0, 3});
  const std::string file = read_file(path);
  EXPECT_EQ(file.size(), npy_header("<f4", {0, 3}).size());
  EXPECT_EQ(check_header(file, "<f4"), "(0,3)");
}

TEST(WriteNpy, ThrowsWhenPathIsUnwritable) {
  TempDir dir;
  const float v = 1;
  EXPECT_THROW(write_npy((dir.path() / "missing" / "x.npy").string(), &v, {1}), std::runtime_error);
}

}  // namespace
}  // namespace bench
