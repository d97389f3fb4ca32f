#include "models/transformer/safetensors.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/paths.hpp"

namespace transformer {

using bench::UsageError;
using nlohmann::json;

std::int64_t TensorView::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;  // checked when the file is read: the product fits
  return n;
}

namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// One tensor's bytes in the data section: [begin, end).
struct Span {
  std::uint64_t begin = 0, end = 0;
  std::string name;
};

std::string span_text(const Span& s) {
  return "'" + s.name + "' [" + std::to_string(s.begin) + ", " + std::to_string(s.end) + ")";
}

// The tensors must tile the data section, as the format's reference reader requires: in offset
// order each starts where the one before ended, the first at 0 and the last at its end. Tensors
// that share bytes would alias each other's weights; a gap is bytes no tensor owns.
void check_layout(const std::string& path, std::vector<Span> spans, std::uint64_t data_size) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t at = 0;
  const Span* previous = nullptr;
  for (const Span& s : spans) {
    if (s.begin < at)
      throw UsageError(path + ": tensors " + span_text(*previous) + " and " + span_text(s) +
                       " overlap in the data section");
    if (s.begin > at)
      throw UsageError(path + ": a gap of " + std::to_string(s.begin - at) +
                       " bytes in the data "
                       "section " +
                       (previous ? "after " + span_text(*previous) : std::string("at its start")) +
                       ", before " + span_text(s));
    at = s.end;
    previous = &s;
  }
  if (at != data_size)
    throw UsageError(path + ": " + std::to_string(data_size - at) + " bytes of the data section (" +
                     std::to_string(data_size) + " bytes) " +
                     (previous ? "after the last tensor " + span_text(*previous)
                               : std::string("and no tensor")) +
                     " belong to no tensor");
}

}  // namespace

int safetensors_dtype_bytes(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2")
    return 1;
  return 0;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  bench::check_input_file("--model", path);  // a FIFO or a folder is refused, never opened
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw UsageError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw UsageError(path + ": cannot stat");
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ < 8) {
    ::close(fd);
    throw UsageError(path + ": not a safetensors file (" + std::to_string(size_) +
                     " bytes, shorter than the 8-byte header length)");
  }
  map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw UsageError(path + ": mmap failed: " + std::strerror(errno));
  }
  try {
    const auto* bytes = static_cast<const unsigned char*>(map_);
    std::uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
    if (header_len > size_ - 8)
      throw UsageError(path + ": header length " + std::to_string(header_len) +
                       " runs past the end of the file (" + std::to_string(size_) + " bytes)");
    json header;
    try {
      header = json::parse(bytes + 8, bytes + 8 + header_len);
    } catch (const json::exception& e) {
      std::string what = e.what();
      throw UsageError(path + ": header is not valid JSON: " + what.substr(0, what.find('\n')));
    }
    if (!header.is_object()) throw UsageError(path + ": header is not a JSON object");
    const unsigned char* data = bytes + 8 + header_len;
    const std::size_t data_size = size_ - 8 - header_len;
    std::vector<Span> spans;
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") continue;
      const std::string where = path + ": tensor '" + name + "'";
      if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
          !entry.contains("data_offsets"))
        throw UsageError(where + " lacks dtype, shape or data_offsets");
      TensorView v;
      try {
        v.dtype = entry.at("dtype").get<std::string>();
        v.shape = entry.at("shape").get<std::vector<std::int64_t>>();
        const auto offsets = entry.at("data_offsets").get<std::vector<std::uint64_t>>();
        if (offsets.size() != 2) throw UsageError(where + ": data_offsets must have 2 numbers");
        const int elem = safetensors_dtype_bytes(v.dtype);
        if (elem == 0) throw UsageError(where + ": unknown dtype '" + v.dtype + "'");
        for (auto d : v.shape)
          if (d < 0) throw UsageError(where + ": negative dimension");
        const auto elements = bench::checked_product(v.shape);
        const auto bytes = elements ? bench::checked_mul(*elements, elem) : std::nullopt;
        if (!bytes)
          throw UsageError(where + ": shape " + shape_text(v.shape) +
                           " has more elements than 64-bit counts hold");
        if (offsets[0] > offsets[1] || offsets[1] > data_size)
          throw UsageError(where + ": data_offsets [" + std::to_string(offsets[0]) + ", " +
                           std::to_string(offsets[1]) + "] outside the data section (" +
                           std::to_string(data_size) + " bytes)");
        v.nbytes = offsets[1] - offsets[0];
        if (static_cast<std::uint64_t>(*bytes) != v.nbytes)
          throw UsageError(where + ": " + std::to_string(v.nbytes) + " bytes for " +
                           std::to_string(*elements) + " " + v.dtype + " elements");
        v.data = data + offsets[0];
        spans.push_back({offsets[0], offsets[1], name});
      } catch (const json::exception&) {
        throw UsageError(where + ": dtype, shape or data_offsets of the wrong type");
      }
      tensors_.emplace(name, std::move(v));
    }
    check_layout(path, spans, data_size);
  } catch (...) {
    ::munmap(map_, size_);
    map_ = nullptr;
    throw;
  }
}

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, size_);
}

Checkpoint::Checkpoint(const std::string& dir) : dir_(dir) {
  namespace fs = std::filesystem;
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(single)) {
    files_.push_back(std::make_unique<SafetensorsFile>(single.string()));
  } else if (fs::exists(index)) {
    sharded_ = true;
    bench::check_input_file("--model", index.string());
    std::ifstream in(index);
    json j;
    try {
      j = json::parse(in);
    } catch (const json::exception& e) {
      std::string what = e.what();
      throw UsageError(index.string() + ": not valid JSON: " + what.substr(0, what.find('\n')));
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      throw UsageError(index.string() + ": no weight_map object");
    std::map<std::string, SafetensorsFile*> shards;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string()) throw UsageError(index.string() + ": weight_map values are files");
      const std::string f = file.get<std::string>();
      if (f.find('/') != std::string::npos || f.empty() || f[0] == '.')
        throw UsageError(index.string() + ": shard name '" + f + "' is not a plain file name");
      auto it = shards.find(f);
      if (it == shards.end()) {
        files_.push_back(std::make_unique<SafetensorsFile>((fs::path(dir) / f).string()));
        it = shards.emplace(f, files_.back().get()).first;
      }
      const auto& t = it->second->tensors();
      const auto found = t.find(name);
      if (found == t.end())
        throw UsageError(index.string() + ": tensor '" + name + "' is not in its shard " + f);
      index_[name] = &found->second;
    }
    return;
  } else {
    throw UsageError(dir + ": no model.safetensors or model.safetensors.index.json");
  }
  for (const auto& [name, view] : files_.front()->tensors()) index_[name] = &view;
}

const TensorView* Checkpoint::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

const TensorView& Checkpoint::get(const std::string& name) const {
  if (const TensorView* v = find(name)) return *v;
  throw UsageError(dir_ + ": checkpoint has no tensor '" + name + "'");
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> n;
  for (const auto& [name, v] : index_) n.push_back(name);
  return n;
}

void write_safetensors(const std::string& path, const std::vector<TensorBytes>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  while (text.size() % 8) text += ' ';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path + ": cannot write");
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>((text.size() >> (8 * i)) & 0xff);
  out.write(reinterpret_cast<const char*>(len), 8);
  out << text;
  for (const auto& t : tensors)
    out.write(reinterpret_cast<const char*>(t.bytes.data()),
              static_cast<std::streamsize>(t.bytes.size()));
  if (!out) throw std::runtime_error(path + ": write failed");
}

}  // namespace transformer
