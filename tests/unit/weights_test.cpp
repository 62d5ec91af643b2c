// WeightLoader::bias_table: an attention position-bias table (GGUF {heads, buckets}) comes back
// as an F32 [buckets, heads] tensor whatever its stored type, row = bucket; a shape that differs
// from the hyperparameters is a Format error naming the tensor.
#include <catch2/catch.hpp>

#include "engine/backend.h"
#include "engine/weights.h"
#include "gguf/file.h"
#include "gguf/fp16.h"
#include "gguf/writer.h"

using namespace embed;

TEST_CASE("a position-bias table loads as f32 rows of buckets", "[weights]") {
  // 4 buckets x 3 heads; value(b, h) = b - h / 4, exact in f16.
  std::vector<float> f32(12);
  std::vector<uint16_t> f16(12);
  for (int b = 0; b < 4; b++)
    for (int h = 0; h < 3; h++) {
      f32[static_cast<size_t>(b * 3 + h)] = static_cast<float>(b) - static_cast<float>(h) / 4.0f;
      f16[static_cast<size_t>(b * 3 + h)] = f32_to_f16(f32[static_cast<size_t>(b * 3 + h)]);
    }
  gguf::Writer w(32);
  w.add_tensor("rel32.weight", gguf::TensorType::F32, {3, 4}, f32.data(), f32.size() * 4);
  w.add_tensor("rel16.weight", gguf::TensorType::F16, {3, 4}, f16.data(), f16.size() * 2);
  const gguf::File f = gguf::File::from_bytes(w.to_bytes());
  auto backend = create_backend(BackendOptions{});
  WeightLoader loader(f, *backend);
  for (const char* name : {"rel32.weight", "rel16.weight"}) {
    INFO(name);
    const Tensor t = loader.bias_table(name, 4, 3);
    REQUIRE(t.dtype == DType::F32);
    REQUIRE(t.rows == 4);
    REQUIRE(t.cols == 3);
    CHECK(t.ptr<const float>()[2 * 3 + 1] == 1.75f);  // bucket 2, head 1
    CHECK(t.ptr<const float>()[3 * 3 + 2] == 2.5f);   // bucket 3, head 2
  }
  try {
    loader.bias_table("rel32.weight", 3, 4);  // heads and buckets swapped
    FAIL("a table of the wrong shape loaded");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Format);
    CHECK_THAT(e.what(), Catch::Contains("'rel32.weight'") && Catch::Contains("[4, 3]"));
  }
}
