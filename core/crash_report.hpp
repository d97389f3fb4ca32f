// A fatal signal's report on stderr before the program dies of it, so that a case recorded as
// "crashed: signal 11 (SIGSEGV)" says where: the program's name and the signal; for a fault the
// kernel raised, the faulting address; on x86-64 the faulting instruction and up to 8 stack words
// that point into a loaded object (a stack scan: the candidate callers when the unwinder cannot
// get past code without unwind tables, such as a JIT kernel); then the backtrace (glibc's
// backtrace_symbols_fd: object, symbol where exported, offset, address), outermost frame first so
// that the innermost frames are the last lines, the ones a runner keeps as the case's output tail
// (scripts/runner/isolation.py), and a closing line that names the signal again. Then the
// signal's default action runs: the exit status stays "killed by signal N".
//
// Resolve an offset with `addr2line -f -C -e OBJECT OFFSET`. Sanitized builds (MYCONV_SANITIZED)
// install nothing: the sanitizer reports fatal signals itself.
#pragma once

namespace bench {

// Installs the handler for SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT (an uncaught exception
// ends in SIGABRT), on an alternate stack (a stack overflow still reports). program: the name the
// report starts with (copied, up to 63 characters). Idempotent.
void install_crash_report(const char* program);

}  // namespace bench
