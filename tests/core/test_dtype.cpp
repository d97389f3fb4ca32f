#include "core/dtype.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>

#include "core/error.hpp"
#include "tests/common/float_bits.hpp"

namespace bench {
namespace {

using testing::bits_of;
using testing::float_of;

bool half_is_nan(std::uint16_t h) {
  return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
}
bool bf16_is_nan(std::uint16_t b) {
  return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0;
}

// Value of half bits computed independently of the code under test: (-1)^s * m * 2^e.
double half_value(std::uint16_t h) {
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  const double v = exp == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, exp - 25);
  return (h & 0x8000) ? -v : v;
}

TEST(DataType, ParseAndToStringRoundTrip) {
  std::set<std::string> names;
  for (DataType dt : all_data_types()) {
    EXPECT_EQ(parse_data_type(to_string(dt)), dt);
    names.insert(to_string(dt));
  }
  EXPECT_EQ(all_data_types().size(), 4u);
  EXPECT_EQ(names, (std::set<std::string>{"fp32", "tf32", "fp16", "bf16"}));
}

TEST(DataType, ParseAliases) {
  EXPECT_EQ(parse_data_type("f32"), DataType::fp32);
  EXPECT_EQ(parse_data_type("f16"), DataType::fp16);
}

TEST(DataType, UnknownNameThrowsUsageError) {
  for (const char* bad : {"", "fp64", "float", "bfloat16", "fp32 ", "int8"})
    EXPECT_THROW(parse_data_type(bad), UsageError) << "'" << bad << "'";
  try {
    parse_data_type("fp8");
    FAIL() << "no throw";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("fp8"), std::string::npos) << e.what();
  }
}

TEST(DataType, StorageBytesAndUnitRoundoff) {
  EXPECT_EQ(storage_bytes(DataType::fp32), 4);
  EXPECT_EQ(storage_bytes(DataType::tf32), 4);
  EXPECT_EQ(storage_bytes(DataType::fp16), 2);
  EXPECT_EQ(storage_bytes(DataType::bf16), 2);
  EXPECT_EQ(unit_roundoff(DataType::fp32), std::ldexp(1.0, -24));
  EXPECT_EQ(unit_roundoff(DataType::tf32), std::ldexp(1.0, -11));
  EXPECT_EQ(unit_roundoff(DataType::fp16), std::ldexp(1.0, -11));
  EXPECT_EQ(unit_roundoff(DataType::bf16), std::ldexp(1.0, -8));
}

TEST(FloatToHalf, KnownBitPatterns) {
  EXPECT_EQ(float_to_half_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half_bits(-1.0f), 0xBC00);
  EXPECT_EQ(float_to_half_bits(2.0f), 0x4000);
  EXPECT_EQ(float_to_half_bits(-2.5f), 0xC100);
  EXPECT_EQ(float_to_half_bits(0.1f), 0x2E66);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7BFF);  // largest finite half
  EXPECT_EQ(float_to_half_bits(-65504.0f), 0xFBFF);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half_bits(-std::ldexp(1.0f, -24)), 0x8001);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1023.0f, -24)), 0x03FF);  // largest subnormal
}

TEST(FloatToHalf, OverflowToInfinity) {
  EXPECT_EQ(float_to_half_bits(65519.0f), 0x7BFF);  // below the halfway point: rounds down
  EXPECT_EQ(float_to_half_bits(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7C00);  // halfway, 65504 is odd: rounds to Inf
  EXPECT_EQ(float_to_half_bits(-65520.0f), 0xFC00);
  EXPECT_EQ(float_to_half_bits(1e6f), 0x7C00);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::max()), 0x7C00);
  EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(float_to_half_bits(-std::numeric_limits<float>::infinity()), 0xFC00);
}

TEST(FloatToHalf, HalfwayCasesRoundToEven) {
  // Between 1 (mantissa 0, even) and 1 + 2^-10 (odd): down to 1.
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  // Between 1 + 2^-10 (odd) and 1 + 2^-9 (even): up.
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  // Just above and below a halfway point: nearest, no tie rule.
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11) - std::ldexp(1.0f, -20)), 0x3C01);
  // Integers where the half spacing is 2: 2049 -> 2048, 2051 -> 2052.
  EXPECT_EQ(float_to_half_bits(2049.0f), 0x6800);
  EXPECT_EQ(float_to_half_bits(2051.0f), 0x6802);
  EXPECT_EQ(float_to_half_bits(-2051.0f), 0xE802);
  // Subnormal range, spacing 2^-24: 0.5 ulp -> 0, 1.5 ulp -> 2, 2.5 ulp -> 2, 0.75 ulp -> 1.
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(float_to_half_bits(std::ldexp(3.0f, -25)), 0x0002);
  EXPECT_EQ(float_to_half_bits(std::ldexp(5.0f, -25)), 0x0002);
  EXPECT_EQ(float_to_half_bits(std::ldexp(3.0f, -26)), 0x0001);
  EXPECT_EQ(float_to_half_bits(-std::ldexp(3.0f, -25)), 0x8002);
  // Largest subnormal + 0.5 ulp: to the even neighbour, the smallest normal.
  EXPECT_EQ(float_to_half_bits(std::ldexp(2047.0f, -25)), 0x0400);
  // Far below the smallest subnormal: signed zero.
  EXPECT_EQ(float_to_half_bits(1e-10f), 0x0000);
  EXPECT_EQ(float_to_half_bits(-1e-10f), 0x8000);
  EXPECT_EQ(float_to_half_bits(float_of(0x00000001)), 0x0000);  // float subnormal
}

TEST(FloatToHalf, NanStaysNan) {
  for (std::uint32_t u : {0x7fc00000u, 0x7f800001u, 0xffc00000u, 0xff800001u, 0x7fffffffu}) {
    const std::uint16_t h = float_to_half_bits(float_of(u));
    EXPECT_TRUE(half_is_nan(h)) << std::hex << u << " -> " << h;
    EXPECT_EQ(h & 0x8000u, (u >> 16) & 0x8000u) << std::hex << u;
    EXPECT_TRUE(std::isnan(half_bits_to_float(h)));
  }
}

TEST(FloatToHalf, NearestOnSampledFloats) {
  // Over a spread of float bit patterns, the result must be a nearest half, ties to even,
  // judged against neighbours computed independently (half_value).
  for (std::uint64_t x = 0; x <= 0xffffffffu; x += 9973) {
    const float f = float_of(static_cast<std::uint32_t>(x));
    if (!std::isfinite(f)) continue;
    const std::uint16_t h = float_to_half_bits(f);
    const double a = std::fabs(static_cast<double>(f));
    if (a >= 65520.0) {
      EXPECT_EQ(h & 0x7fff, 0x7c00) << f;
      continue;
    }
    const std::uint16_t mag = h & 0x7fff;
    ASSERT_LT(mag, 0x7c00) << f;
    if (a != 0) {
      EXPECT_EQ(h & 0x8000, std::signbit(f) ? 0x8000 : 0) << f;
    }
    const double err = std::fabs(a - half_value(mag));
    if (mag > 0) {
      const double below = std::fabs(a - half_value(static_cast<std::uint16_t>(mag - 1)));
      ASSERT_TRUE(err < below || (err == below && mag % 2 == 0)) << f;
    }
    if (mag < 0x7bff) {
      const double above = std::fabs(a - half_value(static_cast<std::uint16_t>(mag + 1)));
      ASSERT_TRUE(err < above || (err == above && mag % 2 == 0)) << f;
    }
  }
}

TEST(HalfToFloat, ExactInverseOverAllBitPatterns) {
  int finite = 0;
  for (std::uint32_t h = 0; h <= 0xffff; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = half_bits_to_float(bits);
    const int exp = (h >> 10) & 0x1f;
    if (exp == 0x1f) {
      if (h & 0x3ff) {
        EXPECT_TRUE(std::isnan(f)) << std::hex << h;
      } else {
        EXPECT_TRUE(std::isinf(f)) << std::hex << h;
        EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;
      }
      continue;
    }
    ++finite;
    ASSERT_EQ(static_cast<double>(f), half_value(bits)) << std::hex << h;
    ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << std::hex << h;  // -0 included
    ASSERT_EQ(float_to_half_bits(f), bits) << std::hex << h;
  }
  EXPECT_EQ(finite, 65536 - 2 * 1024);
}

TEST(HalfToFloat, MonotonicOverPositiveFinite) {
  for (std::uint16_t h = 1; h <= 0x7bff; ++h)
    ASSERT_LT(half_bits_to_float(static_cast<std::uint16_t>(h - 1)), half_bits_to_float(h))
        << std::hex << h;
}

TEST(FloatToBf16, KnownBitPatterns) {
  EXPECT_EQ(float_to_bf16_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits(-1.0f), 0xBF80);
  EXPECT_EQ(float_to_bf16_bits(-2.5f), 0xC020);
  EXPECT_EQ(float_to_bf16_bits(0.1f), 0x3DCD);      // 0x3DCCCCCD: lower half above 0x8000
  EXPECT_EQ(float_to_bf16_bits(65504.0f), 0x4780);  // 65504 rounds up to 65536 in bf16
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(float_to_bf16_bits(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(float_to_bf16_bits(float_of(0x7F7F7FFF)), 0x7F7F);  // below halfway: largest finite
  EXPECT_EQ(float_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);  // overflow to Inf
  EXPECT_EQ(float_to_bf16_bits(-std::numeric_limits<float>::max()), 0xFF80);
}

TEST(FloatToBf16, HalfwayCasesRoundToEven) {
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3F80);      // tie, to even (down)
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);  // tie, to even (up)
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3F81);
  EXPECT_EQ(float_to_bf16_bits(-(1.0f + 3 * std::ldexp(1.0f, -8))), 0xBF82);
  EXPECT_EQ(float_to_bf16_bits(float_of(0x00008000)), 0x0000);  // subnormal tie, to even
  EXPECT_EQ(float_to_bf16_bits(float_of(0x00018000)), 0x0002);
  EXPECT_EQ(float_to_bf16_bits(float_of(0x00008001)), 0x0001);
}

TEST(FloatToBf16, NanStaysNan) {
  // 0x7f800001 would truncate to the Inf pattern if the low bits were simply dropped.
  for (std::uint32_t u : {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0xffffffffu}) {
    const std::uint16_t b = float_to_bf16_bits(float_of(u));
    EXPECT_TRUE(bf16_is_nan(b)) << std::hex << u << " -> " << b;
    EXPECT_EQ(b & 0x8000u, (u >> 16) & 0x8000u) << std::hex << u;
    EXPECT_TRUE(std::isnan(bf16_bits_to_float(b)));
  }
}

TEST(FloatToBf16, NearestOnSampledFloats) {
  for (std::uint64_t x = 0; x <= 0xffffffffu; x += 9973) {
    const auto u = static_cast<std::uint32_t>(x);
    const float f = float_of(u);
    if (std::isnan(f)) continue;
    // Nearest by the dropped low half, ties to even; a carry into the exponent is right
    // (it may reach the Inf pattern, which is the correct overflow).
    const std::uint32_t lo = u & 0xffff, hi = u >> 16;
    const std::uint32_t want = lo > 0x8000 || (lo == 0x8000 && (hi & 1)) ? hi + 1 : hi;
    ASSERT_EQ(float_to_bf16_bits(f), want) << std::hex << u;
  }
}

TEST(Bf16ToFloat, ExactInverseOverAllBitPatterns) {
  int finite = 0;
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float f = bf16_bits_to_float(bits);
    ASSERT_EQ(bits_of(f), b << 16) << std::hex << b;
    if (!std::isfinite(f)) continue;
    ++finite;
    ASSERT_EQ(float_to_bf16_bits(f), bits) << std::hex << b;
  }
  EXPECT_EQ(finite, 65536 - 2 * 128);
}

TEST(RoundTo, IdentityForFp32AndTf32) {
  for (float v : {0.1f, -3.14159f, 1.0f + std::ldexp(1.0f, -20), 65521.0f, 1e-30f, 3e38f,
                  std::numeric_limits<float>::denorm_min()}) {
    EXPECT_EQ(bits_of(round_to(DataType::fp32, v)), bits_of(v)) << v;
    EXPECT_EQ(bits_of(round_to(DataType::tf32, v)), bits_of(v)) << v;
  }
}

TEST(RoundTo, RoundsToSixteenBitTypes) {
  EXPECT_EQ(round_to(DataType::fp16, 1.0f + std::ldexp(1.0f, -12)), 1.0f);
  EXPECT_EQ(round_to(DataType::fp16, 0.1f), half_bits_to_float(0x2E66));
  EXPECT_TRUE(std::isinf(round_to(DataType::fp16, 70000.0f)));
  EXPECT_EQ(round_to(DataType::bf16, 1.0f + std::ldexp(1.0f, -9)), 1.0f);
  EXPECT_EQ(round_to(DataType::bf16, 0.1f), bf16_bits_to_float(0x3DCD));
  EXPECT_EQ(round_to(DataType::bf16, 70000.0f), 70144.0f);  // bf16 spacing there is 512
  // Values already representable are unchanged.
  for (float v : {0.5f, -2.0f, 1.5f, 1024.0f})
    for (DataType dt : all_data_types()) EXPECT_EQ(round_to(dt, v), v) << to_string(dt);
}

TEST(StorageBytes, RoundTripPerDtype) {
  const std::vector<float> v = {1.0f, -2.5f, 0.0f, 65504.0f, 3.140625f};
  for (DataType dt : all_data_types()) {
    const std::vector<unsigned char> bytes = to_storage_bytes(v, dt);
    ASSERT_EQ(bytes.size(), v.size() * std::size_t(storage_bytes(dt))) << to_string(dt);
    std::vector<float> back(v.size());
    from_storage_bytes(bytes.data(), v.size(), dt, back.data());
    for (std::size_t i = 0; i < v.size(); ++i)
      EXPECT_EQ(back[i], round_to(dt, v[i])) << to_string(dt) << " value " << v[i];
  }
  // The 16-bit patterns are the formats' own: 1.0 is 0x3C00 in half, 0x3F80 in bfloat16.
  const std::vector<unsigned char> h = to_storage_bytes({1.0f}, DataType::fp16);
  const std::vector<unsigned char> b = to_storage_bytes({1.0f}, DataType::bf16);
  EXPECT_EQ(h[0] | (h[1] << 8), 0x3C00);
  EXPECT_EQ(b[0] | (b[1] << 8), 0x3F80);
}

}  // namespace
}  // namespace bench
