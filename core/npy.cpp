#include "core/npy.hpp"

#include <fstream>
#include <stdexcept>

namespace bench {

std::string npy_header(const std::string& descr, const std::vector<std::int64_t>& shape) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i)
    dict += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? "," : "");
  dict += "), }";
  const std::size_t preamble = 10;  // magic (6) + version (2) + header length (2)
  std::size_t total = preamble + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string h = "\x93NUMPY";
  h += '\x01';
  h += '\x00';
  const auto len = static_cast<std::uint16_t>(dict.size());
  h += static_cast<char>(len & 0xff);
  h += static_cast<char>(len >> 8);
  return h + dict;
}

template <class T>
static void write_typed(const std::string& path, const char* descr, const T* data,
                        const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot open '" + path + "' for writing");
  out << npy_header(descr, shape);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n * sizeof(T)));
  if (!out) throw std::runtime_error("cannot write '" + path + "'");
}

void write_npy(const std::string& path, const float* data, const std::vector<std::int64_t>& shape) {
  write_typed(path, "<f4", data, shape);
}

void write_npy(const std::string& path, const double* data,
               const std::vector<std::int64_t>& shape) {
  write_typed(path, "<f8", data, shape);
}

}  // namespace bench
