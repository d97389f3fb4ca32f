#include "core/random.hpp"

namespace bench {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void fill_random(std::vector<float>& v, std::uint64_t seed, DataType dt) {
  const std::uint64_t base = splitmix64(seed);
  for (std::size_t i = 0; i < v.size(); ++i) {
    // 24 random bits -> [0, 1) exactly representable in float, then to [-1, 1).
    const auto bits = splitmix64(base + i) >> 40;
    const float u = static_cast<float>(bits) * (1.0f / 16777216.0f);
    v[i] = round_to(dt, 2.0f * u - 1.0f);
  }
}

std::uint64_t descriptor_seed(const std::string& descriptor, std::uint64_t user_seed) {
  std::uint64_t h = 1469598103934665603ULL;
  for (char c : descriptor) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return splitmix64(h ^ user_seed);
}

}  // namespace bench
