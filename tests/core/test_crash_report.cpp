// core/crash_report.hpp: a fatal signal prints the program's name, the signal and a backtrace
// (innermost frame last) on stderr, and the process still dies of that signal.
#include "core/crash_report.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>

namespace {

// Each test dies in a child process (threadsafe style: it re-runs the test binary up to the
// death). Sanitized builds leave fatal signals to the sanitizer, which reports them and exits.
class CrashReportDeathTest : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(MYCONV_SANITIZED)
    GTEST_SKIP() << "sanitized builds leave fatal signals to the sanitizer";
#endif
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

[[gnu::noinline]] void crash_here(int sig) {
  std::raise(sig);
}

TEST_F(CrashReportDeathTest, SegfaultReportsAndStillDiesOfTheSignal) {
  EXPECT_EXIT(
      {
        bench::install_crash_report("probe");
        crash_here(SIGSEGV);
      },
      ::testing::KilledBySignal(SIGSEGV),
      "probe: fatal signal 11 \\(SIGSEGV\\)\n.*backtrace, outermost frame "
      "first:\n.*\\[0x[0-9a-f]+\\]"
      ".*probe: fatal signal 11 \\(SIGSEGV\\) \\(the innermost frame is the line above\\)");
}

// A fault the kernel raises: the report names the faulting address and, on x86-64, the faulting
// instruction (in this test program) and the stack scan's heading.
[[gnu::noinline]] void store_to(std::uintptr_t address) {
  *reinterpret_cast<volatile int*>(address) = 1;
}

#if defined(__x86_64__)
constexpr const char* kFaultReport =
    "fault address: 0x18\nfaulting instruction: [^\n]*test_core[^\n]*\n"
    "stack words that point into a loaded object \\(nearest first\\):\n"
    ".*backtrace, outermost frame first:";
#else
constexpr const char* kFaultReport = "fault address: 0x18\n.*backtrace, outermost frame first:";
#endif

TEST_F(CrashReportDeathTest, FaultNamesTheAddressAndTheInstruction) {
  volatile std::uintptr_t address = 0x18;
  EXPECT_EXIT(
      {
        bench::install_crash_report("probe");
        store_to(address);
      },
      ::testing::KilledBySignal(SIGSEGV), kFaultReport);
}

TEST_F(CrashReportDeathTest, AbortReports) {
  EXPECT_EXIT(
      {
        bench::install_crash_report("probe");
        std::abort();
      },
      ::testing::KilledBySignal(SIGABRT), "probe: fatal signal 6 \\(SIGABRT\\)");
}

// Without the report installed, the same death prints none of it: the test above sees the
// handler's output, not something else's.
TEST_F(CrashReportDeathTest, NothingPrintedWithoutIt) {
  EXPECT_EXIT(crash_here(SIGSEGV), ::testing::KilledBySignal(SIGSEGV), "^$");
}

}  // namespace
