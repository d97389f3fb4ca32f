#include "core/dtype.hpp"

#include <cmath>
#include <cstring>

#include "core/error.hpp"

namespace bench {

const std::vector<DataType>& all_data_types() {
  static const std::vector<DataType> all = {DataType::fp32, DataType::tf32, DataType::fp16,
                                            DataType::bf16};
  return all;
}

std::string to_string(DataType dt) {
  switch (dt) {
    case DataType::fp32:
      return "fp32";
    case DataType::tf32:
      return "tf32";
    case DataType::fp16:
      return "fp16";
    case DataType::bf16:
      return "bf16";
  }
  return "?";
}

DataType parse_data_type(const std::string& text) {
  if (text == "fp32" || text == "f32") return DataType::fp32;
  if (text == "tf32") return DataType::tf32;
  if (text == "fp16" || text == "f16") return DataType::fp16;
  if (text == "bf16") return DataType::bf16;
  throw UsageError("unknown dtype '" + text + "' (allowed: fp32, tf32, fp16, bf16)");
}

int storage_bytes(DataType dt) {
  return dt == DataType::fp16 || dt == DataType::bf16 ? 2 : 4;
}

double unit_roundoff(DataType dt) {
  switch (dt) {
    case DataType::fp32:
      return std::ldexp(1.0, -24);
    case DataType::tf32:
      return std::ldexp(1.0, -11);
    case DataType::fp16:
      return std::ldexp(1.0, -11);
    case DataType::bf16:
      return std::ldexp(1.0, -8);
  }
  return 0;
}

static std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

static float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

std::uint16_t float_to_bf16_bits(float f) {
  const std::uint32_t u = bits_of(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>((u >> 16) | 0x40);  // keep it a NaN
  const std::uint32_t rounding_bias = 0x7fff + ((u >> 16) & 1);
  return static_cast<std::uint16_t>((u + rounding_bias) >> 16);
}

float bf16_bits_to_float(std::uint16_t b) {
  return float_of(static_cast<std::uint32_t>(b) << 16);
}

std::uint16_t float_to_half_bits(float f) {
  const std::uint32_t u = bits_of(f);
  const std::uint32_t sign = (u >> 16) & 0x8000;
  const std::uint32_t abs = u & 0x7fffffff;
  if (abs >= 0x7f800000)  // Inf or NaN
    return static_cast<std::uint16_t>(sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0));
  if (abs >= 0x477ff000)  // rounds to a magnitude of at least 65520: overflow to Inf
    return static_cast<std::uint16_t>(sign | 0x7c00);
  if (abs < 0x38800000) {  // below the smallest normal half: subnormal or zero
    // Scale into the subnormal range with round-to-nearest-even done by float addition.
    const float magic = float_of(0x3f000000);  // 0.5: aligns the half subnormal ulp (2^-24)
    const float scaled = float_of(abs) + magic;
    return static_cast<std::uint16_t>(sign | (bits_of(scaled) - bits_of(magic)));
  }
  const std::uint32_t mant_odd = (abs >> 13) & 1;
  const std::uint32_t rounded = abs + 0xfff + mant_odd;  // round to nearest even on bit 13
  return static_cast<std::uint16_t>(sign | ((rounded - 0x38000000) >> 13));
}

float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1f;
  const std::uint32_t mant = h & 0x3ff;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 0x1f) return float_of(sign | 0x7f800000 | (mant << 13));
  return float_of(sign | ((exp + 112) << 23) | (mant << 13));
}

float round_to(DataType dt, float v) {
  switch (dt) {
    case DataType::fp16:
      return half_bits_to_float(float_to_half_bits(v));
    case DataType::bf16:
      return bf16_bits_to_float(float_to_bf16_bits(v));
    default:
      return v;
  }
}

std::vector<unsigned char> to_storage_bytes(const std::vector<float>& values, DataType dt) {
  std::vector<unsigned char> out(values.size() * std::size_t(storage_bytes(dt)));
  if (dt == DataType::fp16 || dt == DataType::bf16) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      const std::uint16_t h =
          dt == DataType::fp16 ? float_to_half_bits(values[i]) : float_to_bf16_bits(values[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    }
  } else if (!out.empty()) {
    std::memcpy(out.data(), values.data(), out.size());
  }
  return out;
}

void from_storage_bytes(const unsigned char* bytes, std::size_t count, DataType dt, float* out) {
  if (dt != DataType::fp16 && dt != DataType::bf16) {
    if (count) std::memcpy(out, bytes, count * sizeof(float));
    return;
  }
  for (std::size_t i = 0; i < count; ++i) {
    std::uint16_t h;
    std::memcpy(&h, bytes + 2 * i, 2);
    out[i] = dt == DataType::fp16 ? half_bits_to_float(h) : bf16_bits_to_float(h);
  }
}

}  // namespace bench
