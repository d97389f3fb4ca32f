// Data types of the benchmarks and host-side rounding to them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bench {

// fp32: IEEE single, strict. tf32: fp32 storage, products on tensor cores with 10-bit mantissa
// operands. fp16: IEEE half. bf16: bfloat16. Accumulation is fp32 in every case.
enum class DataType { fp32, tf32, fp16, bf16 };

const std::vector<DataType>& all_data_types();
std::string to_string(DataType dt);
// Parses "fp32", "tf32", "fp16", "bf16" (also "f32", "f16"). Throws UsageError otherwise.
DataType parse_data_type(const std::string& text);
// Bytes per element in memory (tf32 is stored as fp32).
int storage_bytes(DataType dt);
// Unit roundoff (half the machine epsilon) of the narrowest format values pass through.
double unit_roundoff(DataType dt);

// Round-to-nearest-even conversions between float and the 16-bit formats, bit-exact with CUDA's
// __float2half_rn / __float2bfloat16_rn for finite values.
std::uint16_t float_to_half_bits(float f);
float half_bits_to_float(std::uint16_t h);
std::uint16_t float_to_bf16_bits(float f);
float bf16_bits_to_float(std::uint16_t b);

// Values (already representable in dt) as dt's bytes in memory: 4 per value for fp32 and tf32,
// the 16-bit patterns (round to nearest even) for fp16 and bf16.
std::vector<unsigned char> to_storage_bytes(const std::vector<float>& values, DataType dt);
// The inverse: count values stored as dt's bytes, written to out as float.
void from_storage_bytes(const unsigned char* bytes, std::size_t count, DataType dt, float* out);

// Rounds v to the nearest value representable in dt (identity for fp32 and tf32: tf32 rounding
// happens inside the backend and is covered by the tolerance).
float round_to(DataType dt, float v);

}  // namespace bench
