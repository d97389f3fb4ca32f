// Writes arrays as NumPy .npy files (format version 1.0, little-endian, C order) so that inputs
// and outputs can be inspected with numpy.load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bench {

void write_npy(const std::string& path, const float* data, const std::vector<std::int64_t>& shape);
void write_npy(const std::string& path, const double* data, const std::vector<std::int64_t>& shape);

// The 10+ byte header (magic, version, length, dict) padded so data starts at a multiple of 64.
std::string npy_header(const std::string& descr, const std::vector<std::int64_t>& shape);

}  // namespace bench
