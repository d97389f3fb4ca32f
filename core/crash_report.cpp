// See crash_report.hpp. Only async-signal-safe calls in the handler (write, backtrace after its
// first call has loaded libgcc_s, backtrace_symbols_fd, raise).
#include "core/crash_report.hpp"

#include <execinfo.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <initializer_list>

namespace bench {

#if !defined(MYCONV_SANITIZED)
namespace {

char g_program[64] = "program";

void say(const char* s) {
  std::size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "11 (SIGSEGV)";
    case SIGBUS:
      return "7 (SIGBUS)";
    case SIGFPE:
      return "8 (SIGFPE)";
    case SIGILL:
      return "4 (SIGILL)";
    case SIGABRT:
      return "6 (SIGABRT)";
    default:
      return "(other)";
  }
}

void on_fatal_signal(int sig) {
  void* frames[64];
  const int n = ::backtrace(frames, 64);
  say("\n");
  say(g_program);
  say(": fatal signal ");
  say(signal_name(sig));
  say("; backtrace, outermost frame first:\n");
  // Frame 0 is this handler; the next one is the kernel's signal trampoline, then the frame that
  // received the signal.
  for (int i = n - 1; i >= 1; --i) ::backtrace_symbols_fd(&frames[i], 1, STDERR_FILENO);
  say(g_program);
  say(": fatal signal ");
  say(signal_name(sig));
  say(" (the innermost frame is the line above)\n");
  // SA_RESETHAND restored the default action: the signal, raised again, ends the process with it
  // once this handler returns (a fault re-executes its instruction and faults again).
  std::raise(sig);
}

}  // namespace

void install_crash_report(const char* program) {
  static bool installed = false;
  if (installed) return;
  installed = true;
  std::strncpy(g_program, program, sizeof g_program - 1);
  void* warm[1];
  ::backtrace(warm, 1);  // loads the unwinder now, not inside the handler
  static char alt_stack[1 << 16];
  stack_t ss{};
  ss.ss_sp = alt_stack;
  ss.ss_size = sizeof alt_stack;
  ::sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(sig, &sa, nullptr);
}
#else
void install_crash_report(const char*) {}  // the sanitizer reports fatal signals itself
#endif

}  // namespace bench
