// Our own small reader and writer of the safetensors format (Hugging Face's weight files): an
// 8-byte little-endian header length, a JSON header {name: {dtype, shape, data_offsets}} (and an
// optional "__metadata__"), then the raw tensors, little-endian, row-major. The reader maps the
// file (mmap) and hands out views; a checkpoint is one model.safetensors or the shards a
// model.safetensors.index.json names. Every malformed file is one-line UsageError naming it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace transformer {

// One tensor in a mapped file. data points into the mapping (read-only), valid while the file
// object lives.
struct TensorView {
  std::string dtype;  // safetensors' name: F32, F16, BF16 (others are listed but not loaded)
  std::vector<std::int64_t> shape;
  const void* data = nullptr;
  std::size_t nbytes = 0;
  std::int64_t numel() const;
};

// Bytes per element of a safetensors dtype name, 0 when unknown.
int safetensors_dtype_bytes(const std::string& dtype);

class SafetensorsFile {
 public:
  // Maps and validates path: header inside the file, valid JSON, known dtypes, offsets inside
  // the data section and matching shape x element size.
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }

 private:
  std::string path_;
  void* map_ = nullptr;
  std::size_t size_ = 0;
  std::map<std::string, TensorView> tensors_;
};

// The weights of a checkpoint folder: model.safetensors, or model.safetensors.index.json and the
// shards its weight_map names (each shard mapped once).
class Checkpoint {
 public:
  explicit Checkpoint(const std::string& dir);
  // The view of name, or null.
  const TensorView* find(const std::string& name) const;
  // The view of name; UsageError naming the checkpoint when it is missing.
  const TensorView& get(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::string& dir() const { return dir_; }
  std::size_t file_count() const { return files_.size(); }
  bool sharded() const { return sharded_; }

 private:
  std::string dir_;
  bool sharded_ = false;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*> index_;
};

// One tensor to write: dtype name, shape, raw little-endian bytes.
struct TensorBytes {
  std::string name, dtype;
  std::vector<std::int64_t> shape;
  std::vector<unsigned char> bytes;
};

// Writes a safetensors file (header padded with spaces to a multiple of 8, as the reference
// implementation does). Throws std::runtime_error when the file cannot be written.
void write_safetensors(const std::string& path, const std::vector<TensorBytes>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace transformer
