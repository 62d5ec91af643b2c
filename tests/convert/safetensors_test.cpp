// safetensors reader: valid files, every malformed header field, sharded folders, and random
// corruption (which must end in embed::Error, never a crash).
#include <catch2/catch.hpp>

#include "base/error.h"
#include "tools/convert/safetensors.h"
#include "convert_test_util.h"

using namespace embed;
using namespace embed::convert;
using namespace embed::convert::testing;

namespace {

std::vector<uint8_t> f32_bytes(std::vector<float> v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// A header written by hand (the helper writes only valid ones), followed by `data_bytes` zeros.
std::vector<uint8_t> with_header(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0);
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

ErrorKind kind_of(const std::vector<uint8_t>& bytes) {
  try {
    SafetensorsFile::from_bytes(bytes);
  } catch (const Error& e) {
    return e.kind();
  }
  FAIL("parsed without error");
  return ErrorKind::InvalidArgument;
}

}  // namespace

TEST_CASE("safetensors: tensors, dtypes, shapes and values are read", "[convert]") {
  std::vector<uint8_t> bf16 = {0x80, 0x3f, 0x00, 0xc0};  // 1.0, -2.0
  const auto f = SafetensorsFile::from_bytes(safetensors_bytes({
      {"a", "F32", {2, 2}, f32_bytes({1, 2, 3, 4})},
      {"b", "BF16", {2}, bf16},
      {"ids", "I64", {1, 3}, std::vector<uint8_t>(24, 0)},
  }));
  REQUIRE(f.tensors().size() == 3);
  const StTensor* a = f.find("a");
  REQUIRE(a);
  CHECK(a->dtype == StDtype::F32);
  CHECK(a->shape == std::vector<int64_t>{2, 2});
  CHECK(read_as_f32(*a) == std::vector<float>{1, 2, 3, 4});
  CHECK(read_as_f32(*f.find("b")) == std::vector<float>{1.0f, -2.0f});
  CHECK(f.find("ids")->dtype == StDtype::I64);
  CHECK_THROWS_WITH(read_as_f32(*f.find("ids")), Catch::Contains("'ids'") && Catch::Contains("I64"));
  CHECK(f.find("missing") == nullptr);
}

TEST_CASE("safetensors: malformed headers are refused with Format errors", "[convert]") {
  CHECK(kind_of({1, 2, 3}) == ErrorKind::Format);                                    // shorter than the length field
  CHECK(kind_of({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '{', '}'}) == ErrorKind::Format);  // huge length
  CHECK(kind_of({3, 0, 0, 0, 0, 0, 0, 0, '{', '}'}) == ErrorKind::Format);  // length one past the file
  CHECK(kind_of(with_header("{not json", 0)) == ErrorKind::Format);
  CHECK(kind_of(with_header("[1,2]", 0)) == ErrorKind::Format);
  CHECK(kind_of(with_header(R"({"t":{"shape":[1],"data_offsets":[0,4]}})", 4)) == ErrorKind::Format);  // no dtype
  CHECK(kind_of(with_header(R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4)) == ErrorKind::Format);
  CHECK(kind_of(with_header(R"({"t":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4)) == ErrorKind::Format);
  CHECK(kind_of(with_header(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4)) == ErrorKind::Format);   // past the data
  CHECK(kind_of(with_header(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[4,0]}})", 8)) == ErrorKind::Format);   // begin > end
  CHECK(kind_of(with_header(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)) == ErrorKind::Format);   // size mismatch
  CHECK(kind_of(with_header(R"({"t":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,8]}})", 8)) ==
        ErrorKind::Format);  // element count overflows
  CHECK(kind_of(with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                            12)) == ErrorKind::Format);  // overlap
  CHECK(kind_of(with_header(R"({"__metadata__":[1]})", 0)) == ErrorKind::Format);
  CHECK(kind_of(with_header(R"({"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4)) == ErrorKind::Format);
}

TEST_CASE("safetensors: an unknown dtype is listed but cannot be read", "[convert]") {
  const auto f = SafetensorsFile::from_bytes(
      with_header(R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]}})", 4));
  REQUIRE(f.find("w"));
  CHECK(f.find("w")->dtype == StDtype::Other);
  CHECK_THROWS_WITH(read_as_f32(*f.find("w")), Catch::Contains("F8_E4M3") && Catch::Contains("F32, F16 and BF16"));
}

TEST_CASE("safetensors: random corruption never crashes the reader", "[convert]") {
  const std::vector<uint8_t> good = safetensors_bytes({
      {"model.embed_tokens.weight", "BF16", {4, 8}, std::vector<uint8_t>(64, 0x3f)},
      {"model.norm.weight", "F32", {8}, f32_bytes({1, 1, 1, 1, 1, 1, 1, 1})},
  });
  std::mt19937 rng(1234);  // fixed seed: the same 3000 mutants on every run
  int parsed = 0, refused = 0;
  for (int iter = 0; iter < 3000; iter++) {
    std::vector<uint8_t> b = good;
    const int n_flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < n_flips; k++) {
      const size_t at = rng() % std::min<size_t>(b.size(), 8 + 200);  // mostly the length and the header
      b[at] = static_cast<uint8_t>(rng());
    }
    if (rng() % 8 == 0) b.resize(rng() % b.size());
    try {
      const auto f = SafetensorsFile::from_bytes(b);
      for (const StTensor& t : f.tensors())
        if (t.dtype == StDtype::F32 || t.dtype == StDtype::BF16 || t.dtype == StDtype::F16) (void)read_as_f32(t);
      parsed++;
    } catch (const Error&) {
      refused++;
    }
  }
  CHECK(parsed + refused == 3000);
  CHECK(refused > 1000);  // most mutants break the JSON or the offsets
}

TEST_CASE("safetensors: sharded folders are read through the index", "[convert]") {
  ScratchDir dir;
  write_bytes(dir.path() / "model-00001-of-00002.safetensors", safetensors_bytes({{"a", "F32", {1}, f32_bytes({1})}}));
  write_bytes(dir.path() / "model-00002-of-00002.safetensors", safetensors_bytes({{"b", "F32", {1}, f32_bytes({2})}}));
  nlohmann::json index = {{"metadata", {{"total_size", 8}}},
                          {"weight_map", {{"a", "model-00001-of-00002.safetensors"}, {"b", "model-00002-of-00002.safetensors"}}}};
  write_json(dir.path() / "model.safetensors.index.json", index);
  {
    const WeightSet w = WeightSet::open_folder(dir.str());
    CHECK(w.tensors().size() == 2);
    REQUIRE(w.find("b"));
    CHECK(read_as_f32(*w.find("b")) == std::vector<float>{2});
  }
  SECTION("a tensor listed under the wrong shard") {
    index["weight_map"]["a"] = "model-00002-of-00002.safetensors";
    write_json(dir.path() / "model.safetensors.index.json", index);
    CHECK_THROWS_WITH(WeightSet::open_folder(dir.str()), Catch::Contains("'a'") && Catch::Contains("not in its shard"));
  }
  SECTION("a missing shard") {
    index["weight_map"]["c"] = "model-00003-of-00003.safetensors";
    write_json(dir.path() / "model.safetensors.index.json", index);
    CHECK_THROWS_WITH(WeightSet::open_folder(dir.str()), Catch::Contains("model-00003-of-00003.safetensors") && Catch::Contains("missing"));
  }
  SECTION("a shard path that leaves the folder") {
    index["weight_map"]["a"] = "../model-00001-of-00002.safetensors";
    write_json(dir.path() / "model.safetensors.index.json", index);
    CHECK_THROWS_WITH(WeightSet::open_folder(dir.str()), Catch::Contains("not a plain file name"));
  }
  SECTION("the same tensor in two shards") {
    write_bytes(dir.path() / "model-00002-of-00002.safetensors",
                safetensors_bytes({{"a", "F32", {1}, f32_bytes({3})}, {"b", "F32", {1}, f32_bytes({2})}}));
    CHECK_THROWS_WITH(WeightSet::open_folder(dir.str()), Catch::Contains("'a' appears in two shards"));
  }
}

TEST_CASE("safetensors: a folder without weights names what is missing", "[convert]") {
  ScratchDir dir;
  CHECK_THROWS_WITH(WeightSet::open_folder(dir.str()), Catch::Contains("model.safetensors"));
  write_text(dir.path() / "pytorch_model.bin", "x");
  CHECK_THROWS_WITH(WeightSet::open_folder(dir.str()), Catch::Contains("pytorch_model.bin"));
}
