#include "core/system_info.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <regex>
#include <string>

namespace bench {
namespace {

const std::regex kIso8601Utc(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)");

TEST(SystemInfo, CollectsTheRequiredFacts) {
  const nlohmann::ordered_json j = collect_system_info();
  ASSERT_TRUE(j.is_object());
  ASSERT_TRUE(j.at("host").is_string());
  EXPECT_FALSE(j.at("host").get<std::string>().empty());
  const std::string utc = j.at("utc_time").get<std::string>();
  EXPECT_TRUE(std::regex_match(utc, kIso8601Utc)) << utc;
  ASSERT_TRUE(j.at("cpu_logical_cores").is_number_integer());
  EXPECT_GT(j.at("cpu_logical_cores").get<long long>(), 0);
  EXPECT_FALSE(j.at("git_commit").get<std::string>().empty());
  EXPECT_EQ(j.at("git_commit"), git_commit());
  EXPECT_EQ(j.at("project_version"), project_version());
  EXPECT_GT(j.at("host_memory_bytes").get<unsigned long long>(), 0u);
  EXPECT_FALSE(j.at("cpu_model").get<std::string>().empty());
  EXPECT_FALSE(j.at("os").get<std::string>().empty());
  EXPECT_FALSE(j.at("compiler").get<std::string>().empty());
  EXPECT_TRUE(j.at("libraries").is_object());
  EXPECT_TRUE(j.at("gpus").is_array());
#ifdef __linux__
  EXPECT_EQ(j.at("kernel").get<std::string>().rfind("Linux ", 0), 0u) << j.at("kernel");
#endif
}

TEST(SystemInfo, OsNameIsUnquoted) {
  const std::string os = collect_system_info().at("os").get<std::string>();
  EXPECT_EQ(os.find('"'), std::string::npos) << os;
}

TEST(SystemInfo, VersionAndCommit) {
  EXPECT_TRUE(std::regex_match(project_version(), std::regex(R"(\d+\.\d+\.\d+)")))
      << project_version();
  // A short hash, "-dirty" when the tree had changes, or "unknown" outside a checkout.
  EXPECT_TRUE(std::regex_match(git_commit(), std::regex(R"([0-9a-f]{7,40}(-dirty)?|unknown)")))
      << git_commit();
}

TEST(SystemInfo, UtcNowIsCurrentUtcTime) {
  // A local zone 5 hours off UTC (POSIX TZ syntax, no tz database needed): local time must not
  // leak into the UTC stamp.
  const char* old_tz = std::getenv("TZ");
  const std::string saved = old_tz ? old_tz : "";
  setenv("TZ", "XST-5", 1);
  tzset();
  const std::time_t before = std::time(nullptr);
  const std::string s = utc_now_iso8601();
  const std::time_t after = std::time(nullptr);
  if (old_tz) {
    setenv("TZ", saved.c_str(), 1);
  } else {
    unsetenv("TZ");
  }
  tzset();
  ASSERT_TRUE(std::regex_match(s, kIso8601Utc)) << s;
  std::tm tm{};
  ASSERT_NE(strptime(s.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm), nullptr) << s;
  const std::time_t parsed = timegm(&tm);  // read back as UTC: must be now
  EXPECT_GE(parsed, before);
  EXPECT_LE(parsed, after);
}

TEST(SystemInfo, AvailableHostMemory) {
#ifdef __linux__
  const unsigned long long available = available_host_memory_bytes();
  EXPECT_GT(available, 0u);
  const auto total = collect_system_info().at("host_memory_bytes").get<unsigned long long>();
  EXPECT_LE(available, total);
#else
  GTEST_SKIP() << "MemAvailable is read from Linux's /proc/meminfo";
#endif
}

}  // namespace
}  // namespace bench
