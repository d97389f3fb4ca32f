// An fp32 value and its IEEE-754 bits, both ways (memcpy: no aliasing, exact for NaN payloads),
// for tests that build values bit by bit.
#pragma once

#include <cstdint>
#include <cstring>

namespace bench::testing {

inline float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace bench::testing
