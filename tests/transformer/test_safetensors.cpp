// models/transformer/safetensors.hpp's layout checks (test_model.cpp has the round trip,
// the sharded checkpoints and the malformed headers): a file is read only when its tensors tile
// the data section, as the format's reference reader requires, and a FIFO is never opened.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "models/transformer/safetensors.hpp"
#include "tests/common/temp_dir.hpp"

namespace transformer {
namespace {

// The UsageError's message of reading a file of header `json` and `data_bytes` data bytes.
std::string error_of(const bench::testing::TempDir& dir, const std::string& name,
                     const std::string& json, std::size_t data_bytes) {
  const std::string path = (dir.path() / name).string();
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  std::ofstream(path, std::ios::binary) << bytes + json + std::string(data_bytes, '\0');
  try {
    SafetensorsFile f(path);
  } catch (const bench::UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, TensorsMustTileTheDataSection) {
  bench::testing::TempDir dir;
  const std::string wa = R"("wa": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]})";
  // End to end, in any order in the header: read.
  EXPECT_EQ(error_of(dir, "tiled",
                     "{" + std::string(R"("wb": {"dtype": "F32", "shape": [2], )") +
                         R"("data_offsets": [16, 24]}, )" + wa + "}",
                     24),
            "");
  // Sharing bytes, a gap, bytes after the last tensor: refused, the tensors named.
  const std::string overlap = error_of(
      dir, "overlap",
      "{" + wa + R"(, "wb": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})", 24);
  EXPECT_NE(overlap.find("tensors 'wa' [0, 16) and 'wb' [8, 24) overlap"), std::string::npos)
      << overlap;
  const std::string gap = error_of(
      dir, "gap", "{" + wa + R"(, "wb": {"dtype": "F32", "shape": [2], "data_offsets": [24, 32]}})",
      32);
  EXPECT_NE(gap.find("a gap of 8 bytes"), std::string::npos) << gap;
  EXPECT_NE(gap.find("'wa'"), std::string::npos) << gap;
  EXPECT_NE(gap.find("'wb'"), std::string::npos) << gap;
  const std::string trailing = error_of(dir, "trailing", "{" + wa + "}", 20);
  EXPECT_NE(trailing.find("4 bytes of the data section"), std::string::npos) << trailing;
  EXPECT_NE(trailing.find("'wa'"), std::string::npos) << trailing;
  // A shape whose element count overflows 64 bits: refused (it read as 0 elements).
  const std::string overflow = error_of(
      dir, "overflow",
      R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 16]}})", 16);
  EXPECT_NE(overflow.find("more elements than 64-bit counts hold"), std::string::npos) << overflow;
}

TEST(Safetensors, FifoIsRefusedUnopened) {
  bench::testing::TempDir dir;
  const std::string fifo = (dir.path() / "model.safetensors").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {  // opening it for reading would block until a writer comes
    SafetensorsFile f(fifo);
    ADD_FAILURE() << "a FIFO was read";
  } catch (const bench::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("is a FIFO"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace transformer
