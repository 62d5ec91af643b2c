// Tiny XLM-RoBERTa folders and torch.save files written without Python, for the converter's and
// the command's XLM-R / BGE-M3 tests (tests/convert/xlmr_test.cpp, tests/cli/outputs_test.cpp):
// seeded random weights under HF's names, the committed XLM-R-layout Unigram vocabulary
// (tests/fixtures/tokenizer/unigram), and torch.save's layout (a stored zip holding a protocol-2
// pickle of an OrderedDict of _rebuild_tensor_v2 calls, after PyTorch's serialization format).
#pragma once

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "convert_test_util.h"

namespace embed::convert::testing {

constexpr int64_t kD = 32, kFF = 64, kVocab = 6002, kPad = 1, kMaxPos = 40;

inline RawTensor f32(const std::string& name, std::vector<int64_t> shape, std::mt19937& rng, float scale, float center = 0) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  std::normal_distribution<float> nd(center, scale);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  RawTensor t{name, "F32", std::move(shape), std::vector<uint8_t>(n * 4)};
  std::memcpy(t.bytes.data(), v.data(), n * 4);
  return t;
}

// An XLM-R body's tensors under HF names (no prefix), one layer.
inline std::vector<RawTensor> body(uint32_t seed) {
  std::mt19937 rng(seed);
  const std::string e = "embeddings.", b = "encoder.layer.0.";
  std::vector<RawTensor> t = {
      f32(e + "word_embeddings.weight", {kVocab, kD}, rng, 0.5f), f32(e + "position_embeddings.weight", {kMaxPos, kD}, rng, 0.5f),
      f32(e + "token_type_embeddings.weight", {1, kD}, rng, 0.05f), f32(e + "LayerNorm.weight", {kD}, rng, 0.1f, 1.0f),
      f32(e + "LayerNorm.bias", {kD}, rng, 0.05f)};
  for (const char* p : {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"}) {
    t.push_back(f32(b + p + ".weight", {kD, kD}, rng, 0.18f));
    t.push_back(f32(b + p + ".bias", {kD}, rng, 0.05f));
  }
  t.push_back(f32(b + "attention.output.LayerNorm.weight", {kD}, rng, 0.1f, 1.0f));
  t.push_back(f32(b + "attention.output.LayerNorm.bias", {kD}, rng, 0.05f));
  t.push_back(f32(b + "intermediate.dense.weight", {kFF, kD}, rng, 0.18f));
  t.push_back(f32(b + "intermediate.dense.bias", {kFF}, rng, 0.05f));
  t.push_back(f32(b + "output.dense.weight", {kD, kFF}, rng, 0.12f));
  t.push_back(f32(b + "output.dense.bias", {kD}, rng, 0.05f));
  t.push_back(f32(b + "output.LayerNorm.weight", {kD}, rng, 0.1f, 1.0f));
  t.push_back(f32(b + "output.LayerNorm.bias", {kD}, rng, 0.05f));
  return t;
}

inline nlohmann::json config(const std::string& cls, int64_t max_pos) {
  return {{"architectures", {cls}}, {"hidden_size", kD}, {"num_hidden_layers", 1}, {"num_attention_heads", 4},
          {"intermediate_size", kFF}, {"max_position_embeddings", max_pos}, {"type_vocab_size", 1}, {"pad_token_id", kPad},
          {"vocab_size", kVocab}, {"layer_norm_eps", 1e-5}, {"position_embedding_type", "absolute"}};
}

inline fs::path write_folder(const ScratchDir& dir, const std::string& name, const nlohmann::json& cfg, const std::vector<RawTensor>& tensors) {
  const fs::path p = dir.path() / name;
  fs::create_directories(p);
  write_json(p / "config.json", cfg);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    fs::copy_file(fs::path(EMBED_SOURCE_DIR) / "tests" / "fixtures" / "tokenizer" / "unigram" / f, p / f);
  write_bytes(p / "model.safetensors", safetensors_bytes(tensors));
  return p;
}

// The same weights as a BertModel would hold them: position rows pad_token_id + 1 .. only.
inline std::vector<RawTensor> as_bert(std::vector<RawTensor> t, const std::string& prefix) {
  for (RawTensor& x : t) {
    if (x.name == "embeddings.position_embeddings.weight") {
      x.bytes.erase(x.bytes.begin(), x.bytes.begin() + (kPad + 1) * kD * 4);
      x.shape[0] -= kPad + 1;
    }
    x.name = prefix + x.name;
  }
  return t;
}

// ---- torch.save's layout, written by hand ----

// A pickle (protocol 2) of OrderedDict{name: _rebuild_tensor_v2(storage key i, 0, shape, stride, False, OrderedDict())}.
struct PickleWriter {
  std::string s = std::string("\x80\x02", 2);
  void global(const char* module, const char* name) { s += std::string("c") + module + "\n" + name + "\n"; }
  void str(const std::string& x) {
    s += 'X';
    const uint32_t n = static_cast<uint32_t>(x.size());
    s.append(reinterpret_cast<const char*>(&n), 4);
    s += x;
  }
  void integer(int32_t v) {
    s += 'J';
    s.append(reinterpret_cast<const char*>(&v), 4);
  }
};

struct PtTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

inline std::vector<uint8_t> zip_stored(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out, dir;
  auto u16 = [](std::string& s, uint16_t v) { s.append(reinterpret_cast<const char*>(&v), 2); };
  auto u32 = [](std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); };
  for (const auto& [name, data] : entries) {
    const uint32_t offset = static_cast<uint32_t>(out.size());
    u32(out, 0x04034b50), u16(out, 20), u16(out, 0), u16(out, 0), u16(out, 0), u16(out, 0), u32(out, 0);
    u32(out, static_cast<uint32_t>(data.size())), u32(out, static_cast<uint32_t>(data.size()));
    u16(out, static_cast<uint16_t>(name.size())), u16(out, 0);
    out += name + data;
    u32(dir, 0x02014b50), u16(dir, 20), u16(dir, 20), u16(dir, 0), u16(dir, 0), u16(dir, 0), u16(dir, 0), u32(dir, 0);
    u32(dir, static_cast<uint32_t>(data.size())), u32(dir, static_cast<uint32_t>(data.size()));
    u16(dir, static_cast<uint16_t>(name.size())), u16(dir, 0), u16(dir, 0), u16(dir, 0), u16(dir, 0), u32(dir, 0), u32(dir, offset);
    dir += name;
  }
  const uint32_t dir_offset = static_cast<uint32_t>(out.size());
  out += dir;
  u32(out, 0x06054b50), u16(out, 0), u16(out, 0), u16(out, static_cast<uint16_t>(entries.size()));
  u16(out, static_cast<uint16_t>(entries.size())), u32(out, static_cast<uint32_t>(dir.size())), u32(out, dir_offset), u16(out, 0);
  return std::vector<uint8_t>(out.begin(), out.end());
}

inline std::vector<uint8_t> torch_save(const std::vector<PtTensor>& tensors, const char* storage = "FloatStorage") {
  PickleWriter p;
  p.global("collections", "OrderedDict");
  p.s += ")R(";  // OrderedDict(), MARK
  std::vector<std::pair<std::string, std::string>> entries;
  for (size_t i = 0; i < tensors.size(); i++) {
    const PtTensor& t = tensors[i];
    p.str(t.name);
    p.global("torch._utils", "_rebuild_tensor_v2");
    p.s += "((";  // args tuple, persistent id tuple
    p.str("storage");
    p.global("torch", storage);
    p.str(std::to_string(i));
    p.str("cpu");
    p.integer(static_cast<int32_t>(t.values.size()));
    p.s += "tQ";  // persistent id -> storage
    p.integer(0);
    p.s += '(';
    for (int64_t d : t.shape) p.integer(static_cast<int32_t>(d));
    p.s += "t(";
    int64_t stride = 1;
    std::vector<int32_t> strides(t.shape.size());
    for (size_t k = t.shape.size(); k-- > 0;) strides[k] = static_cast<int32_t>(stride), stride *= t.shape[k];
    for (int32_t st : strides) p.integer(st);
    p.s += "t\x89";  // requires_grad False
    p.global("collections", "OrderedDict");
    p.s += ")RtR";  // backward hooks, close args, call
    entries.push_back({"archive/data/" + std::to_string(i),
                       std::string(reinterpret_cast<const char*>(t.values.data()), t.values.size() * 4)});
  }
  p.s += "u.";  // SETITEMS, STOP
  entries.insert(entries.begin(), {"archive/data.pkl", p.s});
  entries.push_back({"archive/byteorder", "little"});
  entries.push_back({"archive/version", "3\n"});
  return zip_stored(entries);
}

inline PtTensor random_pt(const std::string& name, std::vector<int64_t> shape, std::mt19937& rng, float center = 0) {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  std::normal_distribution<float> nd(center, 0.2f);
  PtTensor t{name, std::move(shape), std::vector<float>(n)};
  for (float& x : t.values) x = nd(rng);
  return t;
}

}  // namespace embed::convert::testing
