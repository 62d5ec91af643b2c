// f16 / bf16 conversions against values worked out by hand from the IEEE formats.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "gguf/fp16.h"

using namespace embed;

TEST_CASE("f16 decodes normals, subnormals, zeros, infinities and NaN", "[fp16]") {
  CHECK(f16_to_f32(0x3C00) == 1.0f);
  CHECK(f16_to_f32(0xC000) == -2.0f);
  CHECK(f16_to_f32(0x7BFF) == 65504.0f);                     // largest half
  CHECK(f16_to_f32(0x0400) == std::ldexp(1.0f, -14));        // smallest normal
  CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));        // smallest subnormal
  CHECK(f16_to_f32(0x03FF) == std::ldexp(1023.0f, -24));     // largest subnormal
  CHECK(std::signbit(f16_to_f32(0x8000)));
  CHECK(f16_to_f32(0x7C00) == std::numeric_limits<float>::infinity());
  CHECK(std::isnan(f16_to_f32(0x7E00)));
}

TEST_CASE("f16 encode rounds to nearest even and round-trips every half", "[fp16]") {
  for (uint32_t h = 0; h < 0x10000; h++) {
    const uint16_t v = static_cast<uint16_t>(h);
    if ((v & 0x7C00) == 0x7C00 && (v & 0x3FF)) continue;  // NaN payloads
    REQUIRE(f32_to_f16(f16_to_f32(v)) == v);
  }
  CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);   // halfway: ties to even (down)
  CHECK(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);  // halfway: ties to even (up)
  CHECK(f32_to_f16(65520.0f) == 0x7C00);                        // rounds to infinity
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);           // halfway to the smallest subnormal: even
  CHECK(f32_to_f16(std::ldexp(1.5f, -25)) == 0x0001);
}

TEST_CASE("bf16 conversions", "[fp16]") {
  CHECK(bf16_to_f32(0x3F80) == 1.0f);
  CHECK(f32_to_bf16(1.0f) == 0x3F80);
  CHECK(f32_to_bf16(bits_to_f32(0x3F808000)) == 0x3F80);  // tie, even stays
  CHECK(f32_to_bf16(bits_to_f32(0x3F818000)) == 0x3F82);  // tie, odd rounds up
  CHECK(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}
