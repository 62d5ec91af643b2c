// Helpers for the converter tests: scratch folders, a minimal safetensors writer, the checksum
// shared with tools/refgen/convert_reference.py, and the comparison against its expectations.
#pragma once

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "gguf/file.h"

namespace embed::convert::testing {

namespace fs = std::filesystem;

inline fs::path fixtures_dir() { return fs::path(EMBED_SOURCE_DIR) / "tests" / "convert" / "fixtures"; }

// A fresh directory under the system temp folder, removed with its contents at scope exit.
class ScratchDir {
 public:
  ScratchDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("embed-convert-test-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

// Copies tests/convert/fixtures/<name> into `dir`/<name> and returns the copy's path.
inline fs::path copy_fixture(const ScratchDir& dir, const std::string& name) {
  const fs::path dst = dir.path() / name;
  fs::copy(fixtures_dir() / name, dst, fs::copy_options::recursive);
  return dst;
}

inline nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

inline void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

inline void write_json(const fs::path& p, const nlohmann::json& j) { write_text(p, j.dump(2)); }

struct RawTensor {
  std::string name;
  std::string dtype;            // "F32", "BF16", "I32", ...
  std::vector<int64_t> shape;   // torch order
  std::vector<uint8_t> bytes;
};

// safetensors layout: u64 header length, JSON header, data (tensors packed in order).
inline std::vector<uint8_t> safetensors_bytes(const std::vector<RawTensor>& tensors) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  uint64_t offset = 0;
  for (const RawTensor& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  while (text.size() % 8) text += ' ';
  std::vector<uint8_t> out(8 + text.size() + offset);
  const uint64_t n = text.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, text.data(), text.size());
  size_t at = 8 + text.size();
  for (const RawTensor& t : tensors) {
    if (!t.bytes.empty()) std::memcpy(out.data() + at, t.bytes.data(), t.bytes.size());
    at += t.bytes.size();
  }
  return out;
}

inline void write_bytes(const fs::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// tools/refgen/convert_reference.py wsum64: sum of (w_i ^ i*0x9E3779B97F4A7C15) * (2i+1) over
// little-endian u64 words (zero-padded), plus the byte length, mod 2^64.
inline uint64_t wsum64(const uint8_t* data, size_t n) {
  uint64_t sum = 0;
  for (size_t i = 0; i * 8 < n; i++) {
    uint64_t w = 0;
    std::memcpy(&w, data + i * 8, std::min<size_t>(8, n - i * 8));
    sum += (w ^ (i * 0x9E3779B97F4A7C15ull)) * (2 * i + 1);
  }
  return sum + n;
}

inline std::string hex(const uint8_t* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; i++) {
    s += digits[data[i] >> 4];
    s += digits[data[i] & 15];
  }
  return s;
}

// A metadata value of the written file as JSON, for comparison with the expectation.
inline nlohmann::json meta_json(const gguf::MetaValue& v) {
  if (const auto* u = std::get_if<uint64_t>(&v.v)) return *u;
  if (const auto* i = std::get_if<int64_t>(&v.v)) return *i;
  if (const auto* d = std::get_if<double>(&v.v)) return *d;
  if (const auto* b = std::get_if<bool>(&v.v)) return *b;
  if (const auto* s = std::get_if<std::string_view>(&v.v)) return std::string(*s);
  const auto& a = std::get<gguf::ArrayValue>(v.v);
  nlohmann::json arr = nlohmann::json::array();
  for (std::string_view s : a.strings) arr.push_back(std::string(s));
  return arr;
}

inline bool is_model_key(const std::string& key, const std::string& arch) {
  static const char* general[] = {"general.architecture", "general.type", "general.file_type",
                                  "general.quantization_version", "general.size_label"};
  for (const char* g : general)
    if (key == g) return true;
  return key.rfind(arch + ".", 0) == 0;
}

// Every model key and tensor of `expected` (written by llama.cpp's converter, see
// convert_reference.py) must be in `f` with the same value / type / shape / bytes, and nothing else.
inline void check_against_expected(const gguf::File& f, const nlohmann::json& expected) {
  const std::string arch = expected["metadata"]["general.architecture"];
  for (const auto& [key, want] : expected["metadata"].items()) {
    INFO("key " << key);
    const gguf::MetaValue* v = f.find_value(key);
    REQUIRE(v != nullptr);
    const nlohmann::json got = meta_json(*v);
    if (want.is_number_float()) CHECK(static_cast<float>(got.get<double>()) == static_cast<float>(want.get<double>()));
    else CHECK(got == want);
  }
  for (const auto& kv : f.metadata()) {
    INFO("key written by embed, not by llama.cpp: " << kv.key);
    if (is_model_key(kv.key, arch)) CHECK(expected["metadata"].contains(kv.key));
  }
  // The vocabulary is tokenizer/hf_import.h's; here only its shape is held to llama.cpp's: the
  // tokenizer model and the lengths of the token, token type and merge lists.
  INFO("tokenizer");
  CHECK(f.get<std::string>("tokenizer.ggml.model") == expected["tokenizer"]["tokenizer.ggml.model"].get<std::string>());
  for (const auto& [key, n] : expected["tokenizer_array_lengths"].items()) {
    if (key == "tokenizer.chat_templates") continue;
    INFO("array " << key);
    const auto a = f.find_array(key);
    REQUIRE(a.has_value());
    CHECK(a->count == n.get<uint64_t>());
  }
  CHECK(f.tensors().size() == expected["tensors"].size());
  for (const auto& [name, want] : expected["tensors"].items()) {
    INFO("tensor " << name);
    const gguf::TensorInfo* t = f.find_tensor(name);
    REQUIRE(t != nullptr);
    CHECK(std::string(gguf::type_name(t->type)) == want["type"].get<std::string>());
    std::vector<int64_t> ne(t->ne, t->ne + t->n_dims);
    CHECK(ne == want["ne"].get<std::vector<int64_t>>());
    REQUIRE(t->nbytes == want["nbytes"].get<uint64_t>());
    CHECK(hex(t->data, std::min<size_t>(68, t->nbytes)) == want["head"].get<std::string>());
    char sum[17];
    std::snprintf(sum, sizeof sum, "%016llx", static_cast<unsigned long long>(wsum64(t->data, t->nbytes)));
    CHECK(std::string(sum) == want["wsum64"].get<std::string>());
  }
}

}  // namespace embed::convert::testing
