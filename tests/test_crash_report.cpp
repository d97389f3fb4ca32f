// core/crash_report.hpp: a fatal signal prints the program's name, the signal and a backtrace
// (innermost frame last) on stderr, and the process still dies of that signal.
#include "core/crash_report.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

namespace {

[[gnu::noinline]] void crash_here(int sig) {
  std::raise(sig);
}

TEST(CrashReportDeathTest, SegfaultReportsAndStillDiesOfTheSignal) {
#if defined(MYCONV_SANITIZED)
  GTEST_SKIP() << "sanitized builds leave fatal signals to the sanitizer";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        bench::install_crash_report("probe");
        crash_here(SIGSEGV);
      },
      testing::KilledBySignal(SIGSEGV),
      "probe: fatal signal 11 \\(SIGSEGV\\); backtrace, outermost frame first:\n.*\\[0x[0-9a-f]+\\]"
      ".*probe: fatal signal 11 \\(SIGSEGV\\) \\(the innermost frame is the line above\\)");
}

TEST(CrashReportDeathTest, AbortReports) {
#if defined(MYCONV_SANITIZED)
  GTEST_SKIP() << "sanitized builds leave fatal signals to the sanitizer";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        bench::install_crash_report("probe");
        std::abort();
      },
      testing::KilledBySignal(SIGABRT), "probe: fatal signal 6 \\(SIGABRT\\)");
}

// Without the report installed, the same death prints none of it: the test above sees the
// handler's output, not something else's.
TEST(CrashReportDeathTest, NothingPrintedWithoutIt) {
#if defined(MYCONV_SANITIZED)
  GTEST_SKIP() << "a sanitizer reports the signal itself and exits";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(crash_here(SIGSEGV), testing::KilledBySignal(SIGSEGV), "^$");
}

}  // namespace
