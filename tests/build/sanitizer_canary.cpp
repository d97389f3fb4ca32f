// Built only in a sanitized build (MYCONV_SANITIZE): proves that the sanitizers are wired in and
// stop the program. ctest runs it once per mode and passes only when the sanitizer's report
// appears (tests/CMakeLists.txt); a build that lost its -fsanitize flags would run these bugs
// silently and fail the test.
//
//   sanitizer_canary heap      a heap buffer overflow (AddressSanitizer)
//   sanitizer_canary overflow  a signed integer overflow (UndefinedBehaviorSanitizer)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  // volatile: the compiler must not see through the values and fold the bugs away.
  volatile int index = 8, big = 2147483647;
  if (std::strcmp(argv[1], "heap") == 0) {
    std::vector<int> v(8);
    std::printf("%d\n", v.data()[index]);
  } else if (std::strcmp(argv[1], "overflow") == 0) {
    std::printf("%d\n", big + 1);
  } else {
    return 2;
  }
  return 0;
}
