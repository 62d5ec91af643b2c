// Writes the seed corpus for gguf_reader_fuzz (tools/fuzz/corpus) with the project's GGUF writer:
// small files covering every value type, every decodable tensor type, alignments from 1 to 64,
// version 2, shared tensors and 4-D shapes. Usage: gguf_fuzz_seeds OUT_DIR
#include <cstdint>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gguf/fp16.h"
#include "gguf/quants.h"
#include "gguf/writer.h"

using namespace embed;
using namespace embed::gguf;

namespace {

// Random block bytes with every f16 field set to a finite value so the decoders see real numbers.
std::vector<uint8_t> random_blocks(TensorType type, int64_t n_elems, std::mt19937& rng) {
  const auto tr = *type_traits(static_cast<uint32_t>(type));
  std::vector<uint8_t> b(row_bytes(type, n_elems));
  for (uint8_t& x : b) x = static_cast<uint8_t>(rng());
  std::vector<size_t> f16_fields;  // byte offsets within one block
  switch (type) {
    case TensorType::F16: f16_fields = {0}; break;
    case TensorType::Q4_0: case TensorType::Q5_0: case TensorType::Q8_0: f16_fields = {0}; break;
    case TensorType::Q4_1: case TensorType::Q5_1: case TensorType::Q4_K: case TensorType::Q5_K: f16_fields = {0, 2}; break;
    case TensorType::Q6_K: f16_fields = {offsetof(BlockQ6_K, d)}; break;
    default: break;
  }
  std::uniform_real_distribution<float> scale(-2.0f, 2.0f);
  for (size_t blk = 0; blk < b.size() / tr.block_bytes; blk++)
    for (size_t off : f16_fields) {
      const uint16_t h = f32_to_f16(scale(rng));
      std::memcpy(&b[blk * tr.block_bytes + off], &h, 2);
    }
  return b;
}

void save(const std::string& dir, const std::string& name, const std::vector<uint8_t>& bytes) {
  const std::string path = dir + "/" + name;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
  std::fclose(f);
}

std::vector<uint8_t> all_value_types() {
  Writer w;
  w.set_string("general.architecture", "bert");
  w.set<uint8_t>("v.u8", 7), w.set<int8_t>("v.i8", -7), w.set<uint16_t>("v.u16", 700), w.set<int16_t>("v.i16", -700);
  w.set<uint32_t>("v.u32", 70000), w.set<int32_t>("v.i32", -70000), w.set<uint64_t>("v.u64", 1ull << 40);
  w.set<int64_t>("v.i64", -(1ll << 40)), w.set<float>("v.f32", 0.5f), w.set<double>("v.f64", 1e300), w.set<bool>("v.bool", true);
  w.set_array<uint8_t>("a.u8", {1, 2}), w.set_array<int8_t>("a.i8", {-1}), w.set_array<uint16_t>("a.u16", {3});
  w.set_array<int16_t>("a.i16", {-3}), w.set_array<uint32_t>("a.u32", {5, 6}), w.set_array<int32_t>("a.i32", {-5});
  w.set_array<uint64_t>("a.u64", {9}), w.set_array<int64_t>("a.i64", {-9}), w.set_array<float>("a.f32", {1.5f, 2.5f});
  w.set_array<double>("a.f64", {3.5}), w.set_array<bool>("a.bool", {true, false});
  w.set_string_array("tokenizer.ggml.tokens", {"[PAD]", "hello", "", "world"});
  return w.to_bytes();
}

std::vector<uint8_t> tensors_of(const std::vector<TensorType>& types, int64_t rows, uint32_t alignment, std::mt19937& rng) {
  Writer w(alignment);
  w.set_string("general.architecture", "bert");
  for (TensorType t : types) {
    const int64_t ne0 = type_traits(static_cast<uint32_t>(t))->block_elems == 1 ? 8 : type_traits(static_cast<uint32_t>(t))->block_elems;
    std::vector<uint8_t> bytes;
    for (int64_t r = 0; r < rows; r++) {
      auto row = random_blocks(t, ne0, rng);
      bytes.insert(bytes.end(), row.begin(), row.end());
    }
    w.add_tensor(std::string("blk.0.") + type_name(t) + ".weight", t, {ne0, rows}, std::move(bytes));
  }
  return w.to_bytes();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::mt19937 rng(1234);
  save(dir, "values.gguf", all_value_types());
  save(dir, "empty.gguf", Writer().to_bytes());
  save(dir, "float_types.gguf", tensors_of({TensorType::F32, TensorType::F16, TensorType::BF16}, 2, 32, rng));
  save(dir, "legacy_quants.gguf",
       tensors_of({TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q8_0}, 2, 32, rng));
  save(dir, "k_quants.gguf", tensors_of({TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}, 1, 32, rng));
  save(dir, "align8.gguf", tensors_of({TensorType::F16, TensorType::Q8_0}, 3, 8, rng));
  save(dir, "align64.gguf", tensors_of({TensorType::F32, TensorType::Q4_0}, 1, 64, rng));

  std::vector<uint8_t> v2 = tensors_of({TensorType::F32}, 1, 32, rng);
  v2[4] = 2;  // the version field: v2 and v3 share the little-endian layout
  save(dir, "version2.gguf", v2);

  Writer shared;
  std::vector<float> same(16, 0.25f);
  shared.add_tensor("token_embd.weight", TensorType::F32, {4, 4}, same.data(), 64);
  shared.add_tensor("output.weight", TensorType::F32, {4, 4}, same.data(), 64);
  save(dir, "shared.gguf", shared.to_bytes());

  Writer four_d;
  std::vector<float> x(2 * 3 * 2 * 2, 1.0f);
  four_d.add_tensor("conv.weight", TensorType::F32, {2, 3, 2, 2}, x.data(), x.size() * 4);
  four_d.add_tensor("q8", TensorType::Q8_0, {32, 1, 1, 1}, random_blocks(TensorType::Q8_0, 32, rng));
  save(dir, "four_dims.gguf", four_d.to_bytes());

  // Small alignments put tensor data near the natural-alignment check.
  save(dir, "align2.gguf", tensors_of({TensorType::F16, TensorType::Q4_0, TensorType::BF16}, 1, 2, rng));
  save(dir, "align1.gguf", tensors_of({TensorType::Q8_0, TensorType::F32}, 1, 1, rng));
  return 0;
}
