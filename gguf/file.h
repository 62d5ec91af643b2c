// GGUF reader: maps a file (or borrows a buffer), validates every count, length, offset and
// size against the bytes actually present, and exposes typed metadata and the tensor directory.
// Nothing here trusts the file; nothing here knows about models.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <vector>

#include "base/error.h"
#include "gguf/types.h"

namespace embed::gguf {

// On-disk ids (gguf.h `enum gguf_type`).
enum class ValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STRING = 8, ARRAY = 9,
  U64 = 10, I64 = 11, F64 = 12,
};
const char* value_type_name(ValueType t);

// Limits beyond which a file is refused as hostile or broken (llama.cpp caps at 1 GiB too).
constexpr uint64_t kMaxStringBytes = uint64_t{1} << 30;
constexpr uint64_t kMaxArrayElems = uint64_t{1} << 30;
constexpr uint64_t kMaxKeyBytes = 1 << 16;
// Each parsed entry costs ~8x its minimal on-disk size in memory; real models have a few
// hundred keys and at most tens of thousands of tensors.
constexpr uint64_t kMaxMetadataCount = uint64_t{1} << 20;
constexpr uint64_t kMaxTensorCount = uint64_t{1} << 20;
constexpr uint32_t kMaxAlignment = 1 << 20;
constexpr uint32_t kDefaultAlignment = 32;
constexpr size_t kMaxTensorName = 64;  // GGML_MAX_NAME: names must be shorter
constexpr int kMaxDims = 4;

struct ArrayValue {
  ValueType elem_type;
  uint64_t count = 0;
  const uint8_t* data = nullptr;           // fixed-size elements, possibly unaligned
  std::vector<std::string_view> strings;   // STRING elements (views into the mapping)
};

struct MetaValue {
  ValueType type;
  uint64_t offset;  // file offset of the value, for messages
  std::variant<uint64_t, int64_t, double, bool, std::string_view, ArrayValue> v;
};

struct KeyValue {
  std::string key;
  MetaValue value;
};

struct TensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  int64_t ne[kMaxDims] = {1, 1, 1, 1};  // ggml order: ne[0] is contiguous
  TensorType type = TensorType::F32;
  uint64_t offset = 0;  // relative to the data section
  uint64_t nbytes = 0;
  const uint8_t* data = nullptr;
  uint64_t info_offset = 0;  // file offset of this directory entry, for messages

  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
  std::string shape_string() const;
};

class File {
 public:
  File(File&&) = default;
  File& operator=(File&&) = default;
  File(const File&) = delete;  // the indexes hold views into this object's vectors
  File& operator=(const File&) = delete;

  // mmaps and validates `path`; throws embed::Error(Io | Format).
  static File open(const std::string& path);
  // Parses bytes the caller keeps alive for the File's lifetime (tests, fuzzing).
  static File from_buffer(const uint8_t* data, size_t size, std::string label = "<buffer>");
  // Parses bytes the File takes ownership of.
  static File from_bytes(std::vector<uint8_t> bytes, std::string label = "<memory>");
  // Parses `size` bytes at `data`, kept alive by `owner` as long as the File (memory allocated
  // with the alignment its user needs, as gguf::Writer::to_file does).
  static File from_owned(std::shared_ptr<const void> owner, const uint8_t* data, size_t size, std::string label);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  size_t size() const { return size_; }
  const uint8_t* base() const { return base_; }
  // Lets the OS drop the mapped pages inside [p, p + n) from this process's memory (they are
  // read from the file again if touched): for tensors a backend has copied (packed panels,
  // device memory), so the copy and the original are not both resident. Whole pages inside the
  // range only; a no-op for files parsed from memory.
  void release_pages(const void* p, size_t n) const;

  const std::vector<KeyValue>& metadata() const { return kvs_; }
  const MetaValue* find_value(std::string_view key) const;
  bool has(std::string_view key) const { return find_value(key) != nullptr; }

  // Scalar access. Integer targets accept any integer value type whose value fits; float
  // targets accept F32 or F64; bool, string and string_view need exactly that type.
  // Errors name the key and the expected vs found type.
  template <class T> T get(std::string_view key) const;
  template <class T> std::optional<T> find(std::string_view key) const;
  template <class T> T get_or(std::string_view key, T fallback) const {
    auto v = find<T>(key);
    return v ? *v : fallback;
  }

  // Array access: the element type must be exactly T's (no reinterpretation, ever).
  template <class T> std::vector<T> get_array(std::string_view key) const;
  const std::vector<std::string_view>& get_string_array(std::string_view key) const;
  // Element count and type of an array value; nullopt if absent. Throws if not an array.
  std::optional<ArrayValue> find_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;

  // Pairs (a, b) of tensors whose data is the same bytes: same offset, or same type, shape
  // and contents (tied output/embedding written twice).
  std::vector<std::pair<std::string, std::string>> shared_tensors() const;

 private:
  friend class FileParser;  // file.cpp: fills the members below from validated bytes

  File() = default;
  bool mapped_ = false;
  void parse();
  const MetaValue& require(std::string_view key) const;

  std::string path_;
  std::shared_ptr<void> owner_;  // keeps the mapping or the owned bytes alive
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  // The index keys are views into the file bytes (base_), which never move, so the vectors may
  // grow freely.
  std::vector<KeyValue> kvs_;
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

// The on-disk value type that corresponds to a C++ type (for arrays and the writer).
template <class T> constexpr ValueType value_type_of() {
  if constexpr (std::is_same_v<T, uint8_t>) return ValueType::U8;
  else if constexpr (std::is_same_v<T, int8_t>) return ValueType::I8;
  else if constexpr (std::is_same_v<T, uint16_t>) return ValueType::U16;
  else if constexpr (std::is_same_v<T, int16_t>) return ValueType::I16;
  else if constexpr (std::is_same_v<T, uint32_t>) return ValueType::U32;
  else if constexpr (std::is_same_v<T, int32_t>) return ValueType::I32;
  else if constexpr (std::is_same_v<T, float>) return ValueType::F32;
  else if constexpr (std::is_same_v<T, bool>) return ValueType::BOOL;
  else if constexpr (std::is_same_v<T, uint64_t>) return ValueType::U64;
  else if constexpr (std::is_same_v<T, int64_t>) return ValueType::I64;
  else if constexpr (std::is_same_v<T, double>) return ValueType::F64;
  else static_assert(sizeof(T) == 0, "no GGUF value type for this C++ type");
}

}  // namespace embed::gguf
