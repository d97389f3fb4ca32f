// Errors shared by every benchmark: bad user input (exit code 2), an operation a backend cannot
// run (status "unsupported"), and a checking macro that throws with the failed condition's text.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace bench {

// Bad command-line input or a bad problem description. Drivers print what() on one line and
// exit with code 2 before writing any output file.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown by a backend that discovers only at setup that it cannot run a case (for example a
// library that finds no implementation). Recorded as status "unsupported" with what() as reason.
class Unsupported : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// User input echoed in a message: in single quotes, and cut in the middle with "..." (its length
// named) when longer than max characters, so that one bad value cannot fill a screen.
std::string quote_input(const std::string& text, std::size_t max = 60);

// A message as one line of at most max characters: control characters (line breaks, tabs) become
// spaces, and a longer text is cut with "..." at its end. What every program prints after
// "PROGRAM: error: ".
std::string one_line(const std::string& text, std::size_t max = 300);

[[noreturn]] void throw_check_failure(const char* expr, const std::string& message,
                                      const char* file, int line);

}  // namespace bench

// Throws std::runtime_error naming the condition, the message, the file and the line.
#define BENCH_CHECK(cond, message)                                                   \
  do {                                                                               \
    if (!(cond)) ::bench::throw_check_failure(#cond, (message), __FILE__, __LINE__); \
  } while (0)
