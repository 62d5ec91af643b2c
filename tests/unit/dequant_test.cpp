// gguf::dequantize_row against gguf-py, bit for bit: each fixture (tools/refgen/
// gguf_dequant_fixtures.py) holds a tensor written by gguf-py and gguf-py's dequantization of it.
// Also: decoding from an odd address gives the same bits (files may use a small alignment).
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/quants.h"

using namespace embed;
using namespace embed::gguf;

namespace {

struct Fixture {
  const char* file;
  TensorType type;
};

// Every type the engine decodes (types.cpp can_dequantize); a missing fixture fails the test.
const Fixture kFixtures[] = {
    {"f32.gguf", TensorType::F32},   {"f16.gguf", TensorType::F16},   {"bf16.gguf", TensorType::BF16},
    {"q4_0.gguf", TensorType::Q4_0}, {"q4_1.gguf", TensorType::Q4_1}, {"q5_0.gguf", TensorType::Q5_0},
    {"q5_1.gguf", TensorType::Q5_1}, {"q8_0.gguf", TensorType::Q8_0}, {"q4_k.gguf", TensorType::Q4_K},
    {"q5_k.gguf", TensorType::Q5_K}, {"q6_k.gguf", TensorType::Q6_K},
};

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Compares one decoded row with the expected one; on a difference names the first element.
void check_row_bits(const float* got, const float* want, int64_t n, const std::string& where) {
  if (std::memcmp(got, want, static_cast<size_t>(n) * 4) == 0) return;
  for (int64_t i = 0; i < n; i++)
    if (bits(got[i]) != bits(want[i])) {
      FAIL_CHECK(where << " element " << i << ": got " << got[i] << " (0x" << std::hex << bits(got[i]) << "), gguf-py "
                       << want[i] << " (0x" << bits(want[i]) << std::dec << ")");
      return;
    }
}

}  // namespace

TEST_CASE("dequantize_row matches gguf-py bit for bit on every decodable type", "[gguf][dequant]") {
  for (const Fixture& fx : kFixtures) {
    SECTION(fx.file) {
      const File f = File::open(std::string(EMBED_FIXTURES_DIR) + "/dequant/" + fx.file);
      const TensorInfo* q = f.find_tensor("quantized");
      const TensorInfo* want = f.find_tensor("expected");
      REQUIRE(q != nullptr);
      REQUIRE(want != nullptr);
      REQUIRE(q->type == fx.type);
      REQUIRE(want->type == TensorType::F32);
      REQUIRE(q->ne[0] == want->ne[0]);
      REQUIRE(q->n_rows() == want->n_rows());
      REQUIRE(q->n_rows() >= 3);
      const size_t rb = row_bytes(q->type, q->ne[0]);
      std::vector<float> row(static_cast<size_t>(q->ne[0]));
      for (int64_t r = 0; r < q->n_rows(); r++) {
        dequantize_row(q->type, q->data + r * rb, row.data(), q->ne[0]);
        check_row_bits(row.data(), reinterpret_cast<const float*>(want->data) + r * q->ne[0], q->ne[0],
                       std::string(fx.file) + " row " + std::to_string(r));
      }
    }
  }
}

TEST_CASE("dequantize_row reads blocks at any address", "[gguf][dequant]") {
  // Decoding a copy placed one byte past an aligned address must give the same bits and, under
  // -DEMBED_SANITIZE=ON, no misaligned-access report.
  for (const Fixture& fx : kFixtures) {
    SECTION(fx.file) {
      const File f = File::open(std::string(EMBED_FIXTURES_DIR) + "/dequant/" + fx.file);
      const TensorInfo* q = f.find_tensor("quantized");
      const TensorInfo* want = f.find_tensor("expected");
      REQUIRE(q != nullptr);
      REQUIRE(want != nullptr);
      const size_t rb = row_bytes(q->type, q->ne[0]);
      std::vector<uint8_t> shifted(rb + 1);
      std::memcpy(shifted.data() + 1, q->data, rb);
      std::vector<float> row(static_cast<size_t>(q->ne[0]));
      dequantize_row(q->type, shifted.data() + 1, row.data(), q->ne[0]);
      check_row_bits(row.data(), reinterpret_cast<const float*>(want->data), q->ne[0], std::string(fx.file) + " row 0 at +1");
    }
  }
}

TEST_CASE("dequantize_row hand-worked blocks", "[gguf][dequant]") {
  // Q8_0: d = 0.5 (f16 0x3800); q = -128, 127, 3 -> -64, 63.5, 1.5.
  uint8_t q8[34] = {0x00, 0x38};
  q8[2] = 0x80, q8[3] = 0x7F, q8[4] = 3;
  float y[32];
  dequantize_row(TensorType::Q8_0, q8, y, 32);
  CHECK(y[0] == -64.0f);
  CHECK(y[1] == 63.5f);
  CHECK(y[2] == 1.5f);
  CHECK(y[3] == 0.0f);
  // Q4_1: d = 2 (0x4000), m = -1 (0xBC00); byte 0x5A: element 0 = 0xA -> 2*10-1 = 19,
  // element 16 = 0x5 -> 2*5-1 = 9.
  uint8_t q41[20] = {0x00, 0x40, 0x00, 0xBC, 0x5A};
  dequantize_row(TensorType::Q4_1, q41, y, 32);
  CHECK(y[0] == 19.0f);
  CHECK(y[16] == 9.0f);
  CHECK(y[1] == -1.0f);
  // Q5_0: d = 1 (0x3C00); qh bit 16 set, qs[0] = 0x3F: element 0 = 0xF - 16 = -1,
  // element 16 = (0x3 | 16) - 16 = 3; element 1 = 0 - 16.
  uint8_t q50[22] = {0x00, 0x3C, 0x00, 0x00, 0x01, 0x00, 0x3F};
  dequantize_row(TensorType::Q5_0, q50, y, 32);
  CHECK(y[0] == -1.0f);
  CHECK(y[16] == 3.0f);
  CHECK(y[1] == -16.0f);
}

TEST_CASE("dequantize_row refuses types it cannot decode", "[gguf][dequant]") {
  uint8_t block[84] = {};
  float y[256];
  CHECK_THROWS_WITH(dequantize_row(TensorType::Q2_K, block, y, 256), Catch::Contains("no decoder for tensor type Q2_K"));
}
