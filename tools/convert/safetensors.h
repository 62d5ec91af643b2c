// safetensors reader for the HF -> GGUF converter: maps each file, validates the JSON header
// (dtypes, shapes, offsets) against the bytes present, and gathers the shards of a model folder.
// Trusts nothing in the file; knows nothing about models.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace embed::convert {

// Element types of the safetensors format. `Other` is a dtype this reader does not know
// (F8_E4M3, ...): such a tensor is listed but cannot be read.
enum class StDtype { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool, Other };

struct StTensor {
  std::string name;
  std::string dtype_name;      // as written in the header, for messages
  StDtype dtype = StDtype::Other;
  std::vector<int64_t> shape;  // torch order: outermost dimension first
  const uint8_t* data = nullptr;
  uint64_t nbytes = 0;
  std::string file;            // the file it lives in, for messages

  int64_t n_elements() const;
  std::string shape_string() const;  // "[384, 30522]"
};

// Largest header the reader accepts (the safetensors library refuses more than 100 MB too).
constexpr uint64_t kMaxSafetensorsHeader = 100ull << 20;

// One .safetensors file, mapped read-only. Tensors point into the mapping, which lives as long
// as any copy of this object.
class SafetensorsFile {
 public:
  // mmaps and validates `path`; throws embed::Error (Io | Format).
  static SafetensorsFile open(const std::string& path);
  // Parses bytes the object takes ownership of (tests, fuzzing).
  static SafetensorsFile from_bytes(std::vector<uint8_t> bytes, std::string label = "<memory>");

  const std::string& path() const { return path_; }
  const std::vector<StTensor>& tensors() const { return tensors_; }
  const StTensor* find(const std::string& name) const;

 private:
  void parse();

  std::string path_;
  std::shared_ptr<const void> owner_;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  std::vector<StTensor> tensors_;
  std::unordered_map<std::string, size_t> index_;
};

// Every tensor of a model folder: `model.safetensors`, or the shards listed by
// `model.safetensors.index.json`. Names are unique across shards.
class WeightSet {
 public:
  static WeightSet open_folder(const std::string& model_dir);

  const StTensor* find(const std::string& name) const;
  const std::vector<const StTensor*>& tensors() const { return order_; }

 private:
  void add_file(SafetensorsFile f);

  std::vector<std::unique_ptr<SafetensorsFile>> files_;  // stable addresses for the views
  std::vector<const StTensor*> order_;
  std::unordered_map<std::string, const StTensor*> index_;
};

// The tensor's values as f32 (F32, F16 and BF16 exactly; anything else is refused with the
// tensor's name and dtype).
std::vector<float> read_as_f32(const StTensor& t);

}  // namespace embed::convert
