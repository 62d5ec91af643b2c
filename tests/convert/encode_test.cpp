// Converter encoders and type rule against hand-worked values and bytes from gguf-py
// (gguf.quants.quantize of the same inputs, printed by the refgen venv and written out here).
#include <catch2/catch.hpp>

#include "tools/convert/convert.h"
#include "tools/convert/encode.h"
#include "convert_test_util.h"

using namespace embed;
using namespace embed::convert;
using embed::gguf::TensorType;

TEST_CASE("q8_0 rounds halves away from zero with the scale max|x|/127", "[convert]") {
  // max |x| = 127 gives d = 1 exactly (f16 0x3C00) and q = round-half-away(x):
  // 0.5 -> 1, -0.5 -> -1, 1.5 -> 2, 2.5 -> 3 (not 2, as round-half-even would give), -2.5 -> -3, 0.49 -> 0.
  std::vector<float> x = {127, -127, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 0.49f};
  x.resize(32, 0.0f);
  const std::vector<uint8_t> got = encode_tensor(x, 32, TensorType::Q8_0);
  const std::vector<uint8_t> want = {0x00, 0x3c, 0x7f, 0x81, 0x01, 0xff, 0x02, 0x03, 0xfd, 0x00};
  REQUIRE(got.size() == 34);
  CHECK(std::vector<uint8_t>(got.begin(), got.begin() + 10) == want);
  for (size_t i = 10; i < 34; i++) CHECK(got[i] == 0);
}

TEST_CASE("q8_0 of an all-zero block has scale 0 and zero quants", "[convert]") {
  const std::vector<uint8_t> got = encode_tensor(std::vector<float>(64, 0.0f), 64, TensorType::Q8_0);
  CHECK(got == std::vector<uint8_t>(68, 0));
}

TEST_CASE("q8_0 bytes equal gguf-py's for a ramp", "[convert]") {
  // x_i = float32(0.1*i - 1.6); gguf-py: quants.quantize(x, Q8_0).tobytes().hex()
  std::vector<float> x;
  for (int i = 0; i < 32; i++) x.push_back(static_cast<float>(0.1 * i - 1.6));
  const std::vector<uint8_t> got = encode_tensor(x, 32, TensorType::Q8_0);
  CHECK(testing::hex(got.data(), got.size()) ==
        "732281899199a1a9b1b9c0c8d0d8e0e8f0f8000810182028303840474f575f676f77");
}

TEST_CASE("f16 and bf16 round to nearest even", "[convert]") {
  // f16: 1 -> 0x3C00, -2 -> 0xC000, 65504 -> 0x7BFF, 1 + 2^-11 (a tie) -> 0x3C00, 1 + 3*2^-11 -> 0x3C02.
  const std::vector<float> h = {1.0f, -2.0f, 65504.0f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f};
  CHECK(testing::hex(encode_tensor(h, 5, TensorType::F16).data(), 10) == "003c00c0ff7b003c023c");
  // bf16 (gguf-py BF16.quantize): 1 -> 3f80, 1.00390625 (tie) -> 3f80, 1.01171875 (tie) -> 3f82, -3e38 -> ff62.
  const std::vector<float> b = {1.0f, 1.00390625f, 1.01171875f, -3.0e38f};
  CHECK(testing::hex(encode_tensor(b, 4, TensorType::BF16).data(), 8) == "803f803f823f62ff");
}

TEST_CASE("tensor types follow llama.cpp's rules, token_embd stays 16-bit", "[convert]") {
  const std::vector<int64_t> mat = {384, 1536}, odd = {100, 7}, vec = {384};
  CHECK(tensor_type_for("blk.0.ffn_up.weight", mat, OutType::Q8_0) == TensorType::Q8_0);
  CHECK(tensor_type_for("blk.0.ffn_up.weight", mat, OutType::BF16) == TensorType::BF16);
  CHECK(tensor_type_for("blk.0.ffn_up.weight", mat, OutType::F32) == TensorType::F32);
  CHECK(tensor_type_for("blk.0.ffn_up.weight", odd, OutType::Q8_0) == TensorType::F16);  // 100 % 32 != 0
  CHECK(tensor_type_for("blk.0.ffn_up.bias", vec, OutType::F16) == TensorType::F32);
  CHECK(tensor_type_for("blk.0.attn_q_norm.weight", vec, OutType::Q8_0) == TensorType::F32);
  CHECK(tensor_type_for("position_embd.weight", mat, OutType::Q8_0) == TensorType::F32);
  CHECK(tensor_type_for("token_types.weight", mat, OutType::F16) == TensorType::F32);
  CHECK(tensor_type_for("token_embd.weight", mat, OutType::Q8_0) == TensorType::F16);
  CHECK(tensor_type_for("token_embd.weight", mat, OutType::BF16) == TensorType::BF16);
  CHECK(tensor_type_for("token_embd.weight", mat, OutType::F32) == TensorType::F32);
  CHECK(tensor_type_for("output.weight", mat, OutType::Q8_0) == TensorType::Q8_0);
  CHECK(file_type_id(OutType::F32) == 0);
  CHECK(file_type_id(OutType::F16) == 1);
  CHECK(file_type_id(OutType::Q8_0) == 7);
  CHECK(file_type_id(OutType::BF16) == 32);
}

TEST_CASE("size labels match gguf-py's size_label", "[convert]") {
  // gguf.size_label(n, 0, 0, 0) for each n.
  CHECK(size_label(22565376) == "23M");
  CHECK(size_label(144128) == "144K");
  CHECK(size_label(595776512) == "596M");
  CHECK(size_label(1543714304) == "1.5B");
  CHECK(size_label(500) == "0.50K");
  CHECK(size_label(999999) == "1000K");
  CHECK(size_label(1000001) == "1.0M");
  CHECK(size_label(7241732096) == "7.2B");
}
