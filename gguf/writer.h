// GGUF writer (version 3, little-endian) for tests, fixtures and the HF converter.
// Produces files that gguf-py and llama.cpp read; validates nothing about models.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "gguf/file.h"

namespace embed::gguf {

class Writer {
 public:
  explicit Writer(uint32_t alignment = kDefaultAlignment);

  // Scalars: the C++ type picks the GGUF type (uint32_t -> u32, float -> f32, ...).
  template <class T> void set(const std::string& key, T value);
  void set_string(const std::string& key, const std::string& value);
  template <class T> void set_array(const std::string& key, const std::vector<T>& values);
  void set_string_array(const std::string& key, const std::vector<std::string>& values);

  // ne in ggml order (ne[0] contiguous). `data` is copied; its size must match type and shape.
  void add_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne, const void* data, size_t nbytes);
  void add_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne, std::vector<uint8_t> data);

  // Element count of the array at `key`; nullopt when the key is absent or not an array.
  std::optional<uint64_t> array_count(const std::string& key) const;

  std::vector<uint8_t> to_bytes() const;
  // The file in page-aligned anonymous memory, parsed: tensor data aligned as in a mapped file,
  // for a model used straight from memory (an HF folder converted at load).
  File to_file(std::string label) const;
  void write_file(const std::string& path) const;  // writes to path.tmp then renames

 private:
  friend void write_with_metadata(const File& source, const Writer& edits, const std::string& path);
  struct Entry {
    std::string key;
    ValueType type;
    std::vector<uint8_t> payload;  // encoded value bytes (after the type field)
  };
  struct Tensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> data;
  };
  void put(const std::string& key, ValueType type, std::vector<uint8_t> payload);
  template <class Sink> void emit(Sink& sink) const;

  uint32_t alignment_;
  std::vector<Entry> kvs_;
  std::vector<Tensor> tensors_;
};

// A copy of `source` at `path` (via path.tmp) with the key-values of `edits` set: a key in both
// takes edits' value, new keys come after the source's; every other key-value is copied byte for
// byte, and the tensors keep their directory entries, offsets and data. edits' tensors and
// general.alignment are not allowed. For storing a setting in a model (`embed kv-layers -o`).
void write_with_metadata(const File& source, const Writer& edits, const std::string& path);

}  // namespace embed::gguf
