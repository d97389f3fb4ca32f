// Checked 64-bit arithmetic for sizes, element counts and byte counts: an overflow is an answer
// (std::nullopt) that the caller turns into a one-line error, never a wrapped or negative count.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

namespace bench {

inline std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The product of factors, or nullopt when it overflows int64 (the empty product is 1).
template <typename Range>
std::optional<std::int64_t> checked_product(const Range& factors) {
  std::int64_t r = 1;
  for (const auto f : factors)
    if (__builtin_mul_overflow(r, static_cast<std::int64_t>(f), &r)) return std::nullopt;
  return r;
}

inline std::optional<std::int64_t> checked_product(std::initializer_list<std::int64_t> factors) {
  return checked_product<std::initializer_list<std::int64_t>>(factors);
}

}  // namespace bench
