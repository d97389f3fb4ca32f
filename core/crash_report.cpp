// See crash_report.hpp. The handler makes async-signal-safe calls (write, backtrace after its
// first call has loaded libgcc_s, raise) and two that are not, taken for a process about to die:
// dladdr, and backtrace_symbols_fd, which calls it.
#include "core/crash_report.hpp"

#include <dlfcn.h>
#include <execinfo.h>
#include <ucontext.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
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

// Writes "label0x<hex>\n" with no allocation (the handler may not call printf).
void say_hex(const char* label, std::uintptr_t v) {
  char buf[2 + 2 * sizeof v + 2];
  char* p = buf + sizeof buf;
  *--p = '\0';
  *--p = '\n';
  do {
    *--p = "0123456789abcdef"[v & 0xf];
    v >>= 4;
  } while (v != 0);
  *--p = 'x';
  *--p = '0';
  say(label);
  say(p);
}

// The faulting instruction and, when the unwinder cannot get past it (code with no unwind
// tables, e.g. a JIT kernel), the stack words above the stack pointer that point into a loaded
// object: candidate return addresses, as a stack scan in a crash reporter lists them.
// Printed before the backtrace, which stays last (the runner keeps an output's last lines).
void report_context(const siginfo_t* info, const void* context) {
  // si_addr means the faulting address only when the kernel sent the signal (si_code > 0), not
  // for raise() or kill().
  if (info->si_code > 0)
    say_hex("fault address: ", reinterpret_cast<std::uintptr_t>(info->si_addr));
#if defined(__x86_64__) && defined(REG_RIP)
  const auto* uc = static_cast<const ucontext_t*>(context);
  void* pc = reinterpret_cast<void*>(uc->uc_mcontext.gregs[REG_RIP]);
  say("faulting instruction: ");
  ::backtrace_symbols_fd(&pc, 1, STDERR_FILENO);
  const auto* sp = reinterpret_cast<void* const*>(uc->uc_mcontext.gregs[REG_RSP]);
  say("stack words that point into a loaded object (nearest first):\n");
  int shown = 0;
  for (int i = 0; i < 512 && shown < 8; ++i) {
    Dl_info where{};
    if (::dladdr(sp[i], &where) != 0 && where.dli_fname != nullptr) {
      say("  ");
      ::backtrace_symbols_fd(&sp[i], 1, STDERR_FILENO);
      ++shown;
    }
  }
#else
  (void)context;
#endif
}

void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  void* frames[64];
  const int n = ::backtrace(frames, 64);
  say("\n");
  say(g_program);
  say(": fatal signal ");
  say(signal_name(sig));
  say("\n");
  if (info != nullptr && context != nullptr) report_context(info, context);
  say("backtrace, outermost frame first:\n");
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
  sa.sa_sigaction = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND | SA_ONSTACK | SA_SIGINFO;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(sig, &sa, nullptr);
}
#else
void install_crash_report(const char*) {}  // the sanitizer reports fatal signals itself
#endif

}  // namespace bench
