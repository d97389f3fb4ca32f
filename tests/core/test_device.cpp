// Generic device helpers: the throttling rule, the clock record and the host cache flush.
#include "core/device.hpp"

#include <gtest/gtest.h>

namespace bench {
namespace {

ClockSample at(double sm, double sm_max = 2000) {
  ClockSample c;
  c.sm_mhz = sm;
  c.sm_max_mhz = sm_max;
  c.mem_mhz = c.mem_max_mhz = 3200;
  return c;
}

TEST(Throttled, BelowThreeQuartersOfTheMaximumBeforeOrAfter) {
  EXPECT_FALSE(is_throttled(at(1980), at(1980)));
  EXPECT_FALSE(is_throttled(at(1500), at(1980)));  // exactly 75%: not below
  EXPECT_TRUE(is_throttled(at(1499), at(1980)));
  EXPECT_TRUE(is_throttled(at(1980), at(1000)));
  EXPECT_FALSE(is_throttled(at(0, 0), at(0, 0)));  // no maximum known: no verdict
}

TEST(ClocksJson, HoldsBothReadingsAndTheReasons) {
  ClockSample before = at(1980), after = at(1200);
  after.reasons = {"sw_thermal_slowdown"};
  const auto j = clocks_json(before, after);
  EXPECT_EQ(j["sm_mhz_before"], 1980.0);
  EXPECT_EQ(j["sm_mhz_after"], 1200.0);
  EXPECT_EQ(j["sm_max_mhz"], 2000.0);
  EXPECT_EQ(j["reasons_after"][0], "sw_thermal_slowdown");
  EXPECT_TRUE(j["reasons_before"].empty());
}

TEST(HostCacheFlusher, WritesAtLeastTwiceAMebibyteAndRuns) {
  HostCacheFlusher f;
  EXPECT_GE(f.bytes(), std::size_t{2} << 20);
  f.flush();
  f.flush();
}

}  // namespace
}  // namespace bench
