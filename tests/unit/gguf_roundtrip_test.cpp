// Writer -> reader round trip: every metadata value type, string arrays, tensors and alignment.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "gguf/file.h"
#include "gguf/writer.h"

using namespace embed;
using namespace embed::gguf;

TEST_CASE("gguf round trip keeps every value type and tensor", "[gguf]") {
  Writer w(64);
  w.set<uint8_t>("t.u8", 200);
  w.set<int8_t>("t.i8", -100);
  w.set<uint16_t>("t.u16", 60000);
  w.set<int16_t>("t.i16", -30000);
  w.set<uint32_t>("t.u32", 4000000000u);
  w.set<int32_t>("t.i32", -2000000000);
  w.set<uint64_t>("t.u64", 18000000000000000000ull);
  w.set<int64_t>("t.i64", -9000000000000000000ll);
  w.set<float>("t.f32", 1.5f);
  w.set<double>("t.f64", -2.25);
  w.set<bool>("t.bool", true);
  w.set_string("t.str", "héllo");
  w.set_array<float>("t.arr_f32", {1.0f, -2.0f, 3.5f});
  w.set_array<int32_t>("t.arr_i32", {7, -8});
  w.set_array<bool>("t.arr_bool", {true, false, true});
  w.set_string_array("t.arr_str", {"a", "", "ccc"});
  std::vector<float> data(3 * 4);
  for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<float>(i) * 0.5f;
  w.add_tensor("weight", TensorType::F32, {4, 3}, data.data(), data.size() * 4);
  std::vector<uint16_t> half(64, 0x3C00);  // 1.0 in f16
  w.add_tensor("half", TensorType::F16, {64}, half.data(), half.size() * 2);

  const File f = File::from_bytes(w.to_bytes());
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 64);
  CHECK(f.data_offset() % 64 == 0);
  CHECK(f.get<uint8_t>("t.u8") == 200);
  CHECK(f.get<int8_t>("t.i8") == -100);
  CHECK(f.get<uint16_t>("t.u16") == 60000);
  CHECK(f.get<int16_t>("t.i16") == -30000);
  CHECK(f.get<uint32_t>("t.u32") == 4000000000u);
  CHECK(f.get<int32_t>("t.i32") == -2000000000);
  CHECK(f.get<uint64_t>("t.u64") == 18000000000000000000ull);
  CHECK(f.get<int64_t>("t.i64") == -9000000000000000000ll);
  CHECK(f.get<float>("t.f32") == 1.5f);
  CHECK(f.get<double>("t.f64") == -2.25);
  CHECK(f.get<bool>("t.bool"));
  CHECK(f.get<std::string>("t.str") == "héllo");
  CHECK(f.get_array<float>("t.arr_f32") == std::vector<float>{1.0f, -2.0f, 3.5f});
  CHECK(f.get_array<int32_t>("t.arr_i32") == std::vector<int32_t>{7, -8});
  CHECK(f.get_array<bool>("t.arr_bool") == std::vector<bool>{true, false, true});
  const auto& strs = f.get_string_array("t.arr_str");
  REQUIRE(strs.size() == 3);
  CHECK(strs[0] == "a");
  CHECK(strs[1].empty());
  CHECK(strs[2] == "ccc");

  const TensorInfo* t = f.find_tensor("weight");
  REQUIRE(t != nullptr);
  CHECK(t->n_dims == 2);
  CHECK(t->ne[0] == 4);
  CHECK(t->ne[1] == 3);
  CHECK(t->type == TensorType::F32);
  CHECK(t->nbytes == 48);
  CHECK(std::memcmp(t->data, data.data(), 48) == 0);
  const TensorInfo* h = f.find_tensor("half");
  REQUIRE(h != nullptr);
  CHECK(h->offset % 64 == 0);
  CHECK(h->nbytes == 128);
}

TEST_CASE("gguf typed getters name the key and both types on mismatch", "[gguf]") {
  Writer w;
  w.set_string("a.name", "x");
  w.set<uint32_t>("a.count", 5);
  w.set<int32_t>("a.neg", -1);
  w.set_array<uint8_t>("a.bytes", {1, 2});
  const File f = File::from_bytes(w.to_bytes(), "mem.gguf");
  CHECK_THROWS_WITH(f.get<uint32_t>("a.name"), Catch::Contains("'a.name'") && Catch::Contains("expected u32") &&
                                                    Catch::Contains("found string"));
  CHECK_THROWS_WITH(f.get<uint32_t>("a.neg"), Catch::Contains("out of range"));
  CHECK(f.get<int64_t>("a.count") == 5);  // integer widening is allowed when the value fits
  CHECK_THROWS_WITH(f.get<uint32_t>("a.missing"), Catch::Contains("missing metadata key 'a.missing'"));
  // Array element types are never reinterpreted (the tokenizer.scores type-confusion CVE).
  CHECK_THROWS_WITH(f.get_array<float>("a.bytes"), Catch::Contains("expected array of f32, found array of u8"));
  CHECK_THROWS_WITH(f.get_string_array("a.bytes"), Catch::Contains("expected array of string"));
  CHECK(f.get_or<uint32_t>("a.missing", 7) == 7);
}

TEST_CASE("gguf shared tensors are detected by offset or bytes", "[gguf]") {
  Writer w;
  std::vector<float> a(32, 1.0f), b(32, 2.0f);
  w.add_tensor("token_embd.weight", TensorType::F32, {8, 4}, a.data(), 128);
  w.add_tensor("output.weight", TensorType::F32, {8, 4}, a.data(), 128);
  w.add_tensor("other.weight", TensorType::F32, {8, 4}, b.data(), 128);
  const File f = File::from_bytes(w.to_bytes());
  const auto shared = f.shared_tensors();
  REQUIRE(shared.size() == 1);
  CHECK(((shared[0].first == "token_embd.weight" && shared[0].second == "output.weight") ||
         (shared[0].first == "output.weight" && shared[0].second == "token_embd.weight")));
}

TEST_CASE("gguf write_with_metadata copies a file with key-values set", "[gguf]") {
  // The source: every value kind, two tensors, a non-default alignment.
  auto fill = [](Writer& w, bool with_str) {
    w.set<uint32_t>("t.u32", 7);
    if (with_str) w.set_string("t.str", "before");
    w.set_array<float>("t.arr_f32", {1.0f, -2.0f});
    w.set_string_array("t.arr_str", {"a", "", "ccc"});
    w.set<bool>("t.bool", true);
  };
  auto tensors = [](Writer& w) {
    std::vector<float> data(3 * 4);
    for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<float>(i) * 0.5f;
    w.add_tensor("weight", TensorType::F32, {4, 3}, data.data(), data.size() * 4);
    std::vector<uint16_t> half(40, 0x3C00);
    w.add_tensor("half", TensorType::F16, {40}, half.data(), half.size() * 2);
  };
  Writer source(64);
  fill(source, true);
  tensors(source);
  const std::string dir = std::filesystem::temp_directory_path() / ("embed-gguf-copy-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  source.write_file(dir + "/source.gguf");
  const File f = File::open(dir + "/source.gguf");

  Writer edits;
  edits.set_string("t.str", "after");                  // replaced: moves after the source's keys
  edits.set_array<int32_t>("embed.kv_embedding.layers", {1, 2});  // new
  write_with_metadata(f, edits, dir + "/copy.gguf");

  // What the copy must be, byte for byte: the source's other keys in their order, then the edits,
  // the same tensors at the same offsets.
  Writer expected(64);
  fill(expected, false);
  expected.set_string("t.str", "after");
  expected.set_array<int32_t>("embed.kv_embedding.layers", {1, 2});
  tensors(expected);
  std::ifstream in(dir + "/copy.gguf", std::ios::binary);
  const std::vector<uint8_t> copy((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(copy == expected.to_bytes());
  const File c = File::open(dir + "/copy.gguf");
  CHECK(c.get<std::string>("t.str") == "after");
  CHECK(c.get_array<int32_t>("embed.kv_embedding.layers") == std::vector<int32_t>{1, 2});
  CHECK(c.alignment() == 64);
  CHECK(std::filesystem::exists(dir + "/copy.gguf.tmp") == false);
  std::filesystem::remove_all(dir);
}

TEST_CASE("gguf Writer::to_file holds the bytes to_bytes writes, tensor data aligned as in a mapped file", "[gguf]") {
  Writer w(64);
  w.set_string("general.architecture", "test");
  const std::vector<float> a = {1, 2, 3}, b(100, 0.5f);
  w.add_tensor("a", TensorType::F32, {3}, a.data(), a.size() * sizeof(float));
  w.add_tensor("b", TensorType::F32, {10, 10}, b.data(), b.size() * sizeof(float));
  const File f = w.to_file("converted-in-memory");
  const std::vector<uint8_t> bytes = w.to_bytes();
  REQUIRE(f.size() == bytes.size());
  CHECK(std::memcmp(f.base(), bytes.data(), bytes.size()) == 0);
  CHECK(f.path() == "converted-in-memory");
  CHECK(reinterpret_cast<uintptr_t>(f.base()) % 4096 == 0);
  for (const char* name : {"a", "b"}) CHECK(reinterpret_cast<uintptr_t>(f.find_tensor(name)->data) % 64 == 0);
  CHECK(std::memcmp(f.find_tensor("b")->data, b.data(), b.size() * sizeof(float)) == 0);
}
