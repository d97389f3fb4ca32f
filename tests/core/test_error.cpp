// core/error.hpp's message helpers and core/checked.hpp's arithmetic: echoed input is cut, every
// message is one short line, and a count that overflows 64 bits is an answer, not a wrapped value.
#include "core/error.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/checked.hpp"

namespace bench {
namespace {

TEST(Error, QuotedCutsLongInput) {
  EXPECT_EQ(quote_input("mb2ic4"), "'mb2ic4'");
  const std::string long_text = std::string(90000, 'a') + "END";
  const std::string q = quote_input(long_text, 40);
  EXPECT_LT(q.size(), 80u) << q;
  EXPECT_NE(q.find("..."), std::string::npos) << q;
  EXPECT_NE(q.find("END'"), std::string::npos) << q;  // the end shows where it went wrong
  EXPECT_NE(q.find("(90003 characters)"), std::string::npos) << q;
}

TEST(Error, OneLineIsOneShortLine) {
  EXPECT_EQ(one_line("a\nb\tc\r"), "a b c");
  const std::string cut = one_line(std::string(1000, 'x'), 300);
  EXPECT_EQ(cut.size(), 300u);
  EXPECT_EQ(cut.substr(297), "...");
  EXPECT_EQ(one_line("short", 300), "short");
}

TEST(Checked, OverflowIsAnAnswer) {
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(checked_mul(3, 4), 12);
  EXPECT_FALSE(checked_mul(max, 2));
  EXPECT_FALSE(checked_mul(std::int64_t(1) << 32, std::int64_t(1) << 31));
  EXPECT_EQ(checked_mul(std::int64_t(1) << 31, std::int64_t(1) << 31), std::int64_t(1) << 62);
  EXPECT_EQ(checked_add(max - 1, 1), max);
  EXPECT_FALSE(checked_add(max, 1));
  EXPECT_EQ(checked_product({2, 3, 7}), 42);
  EXPECT_EQ(checked_product(std::vector<std::int64_t>{}), 1);
  // 2^40 x 2^40: the product of two valid conv sizes wraps in plain arithmetic.
  EXPECT_FALSE(checked_product({std::int64_t(1) << 40, std::int64_t(1) << 40}));
  EXPECT_FALSE(checked_product(std::vector<std::int64_t>{max, 1, 2}));
  EXPECT_EQ(checked_product({-2, 3}), -6);
}

}  // namespace
}  // namespace bench
