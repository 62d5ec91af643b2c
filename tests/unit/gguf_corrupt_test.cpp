// Handcrafted corrupt GGUF files: each must be rejected with a Format error that names the
// field and the file offset. Files are built byte by byte (GgufBytes) so that every field can
// be wrong; offsets in the expectations are worked out by hand in the comments.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"

using namespace embed;
using namespace embed::gguf;
using Catch::Contains;

namespace {

// Byte-level GGUF builder: writes exactly the fields it is told to, little-endian.
class GgufBytes {
 public:
  std::vector<uint8_t> bytes;

  template <class T> GgufBytes& put(T v) {
    const size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &v, sizeof(T));
    return *this;
  }
  GgufBytes& u8(uint8_t v) { return put(v); }
  GgufBytes& u32(uint32_t v) { return put(v); }
  GgufBytes& u64(uint64_t v) { return put(v); }
  GgufBytes& i64(int64_t v) { return put(v); }
  GgufBytes& raw(std::string_view s) {
    const size_t at = bytes.size();
    bytes.resize(at + s.size());
    if (!s.empty()) std::memcpy(bytes.data() + at, s.data(), s.size());
    return *this;
  }
  GgufBytes& str(std::string_view s) { return u64(s.size()).raw(s); }
  // magic, version, n_tensors, n_kv: 24 bytes.
  GgufBytes& header(int64_t n_tensors, int64_t n_kv, uint32_t version = 3) {
    return raw("GGUF").u32(version).i64(n_tensors).i64(n_kv);
  }
  GgufBytes& key(std::string_view k, ValueType t) { return str(k).u32(static_cast<uint32_t>(t)); }
  GgufBytes& tensor(std::string_view name, const std::vector<int64_t>& ne, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (int64_t d : ne) i64(d);
    return u32(type).u64(offset);
  }
  GgufBytes& pad(size_t align) {
    bytes.resize((bytes.size() + align - 1) / align * align, 0);
    return *this;
  }
  GgufBytes& zeros(size_t n) {
    bytes.resize(bytes.size() + n, 0);
    return *this;
  }
};

constexpr uint32_t kF32 = 0, kQ4_0 = 2, kQ8_0 = 8;

// The message of the Format error the file is rejected with; fails the test if it is accepted
// or rejected with another kind of error.
std::string rejection(const std::vector<uint8_t>& bytes) {
  try {
    (void)File::from_bytes(bytes, "bad.gguf");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Format);
    return e.what();
  }
  FAIL("the corrupt file was accepted");
  return {};
}

// One valid F32 tensor "w" of 8 elements (32 bytes): directory entry at 24..56, data at 64.
GgufBytes one_tensor_file(const std::vector<int64_t>& ne, uint32_t type, uint64_t offset, size_t data_bytes = 32) {
  GgufBytes b;
  b.header(1, 0).tensor("w", ne, type, offset).pad(32).zeros(data_bytes);
  return b;
}

}  // namespace

// ---- header ----

TEST_CASE("gguf corrupt: empty input is not a GGUF file", "[gguf][corrupt]") {
  CHECK_THAT(rejection({}), Contains("bad.gguf: invalid GGUF at offset 0: bad magic"));
}

TEST_CASE("gguf corrupt: a file shorter than the magic", "[gguf][corrupt]") {
  CHECK_THAT(rejection({'G', 'G', 'U'}), Contains("at offset 0: bad magic: not a GGUF file"));
}

TEST_CASE("gguf corrupt: wrong magic", "[gguf][corrupt]") {
  GgufBytes b;
  b.raw("GGML").u32(3).i64(0).i64(0);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 0: bad magic: not a GGUF file"));
}

TEST_CASE("gguf corrupt: big-endian magic is named as such", "[gguf][corrupt]") {
  GgufBytes b;
  b.raw("FUGG").u32(3).i64(0).i64(0);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 0: bad magic: big-endian GGUF is not supported"));
}

TEST_CASE("gguf corrupt: versions 0, 1 and 4 are refused", "[gguf][corrupt]") {
  for (uint32_t v : {0u, 1u, 4u}) {
    GgufBytes b;
    b.header(0, 0, v);
    CHECK_THAT(rejection(b.bytes),
               Contains("at offset 4: unsupported GGUF version " + std::to_string(v) + " (supported: 2 and 3)"));
  }
}

TEST_CASE("gguf corrupt: a byte-swapped version means a big-endian file", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(0, 0, 0x03000000u);  // version 3 written big-endian
  CHECK_THAT(rejection(b.bytes), Contains("at offset 4: version 50331648 looks byte-swapped"));
}

TEST_CASE("gguf corrupt: the file ends inside the header counts", "[gguf][corrupt]") {
  GgufBytes b;
  b.raw("GGUF").u32(3).u32(0);  // half of n_tensors: 4 of 8 bytes at offset 8
  CHECK_THAT(rejection(b.bytes), Contains("at offset 8: file ends inside tensor count (needs 8 bytes, 4 left)"));
}

TEST_CASE("gguf corrupt: negative tensor count", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(-1, 0);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 8: tensor count -1 is impossible for the 0 bytes left"));
}

TEST_CASE("gguf corrupt: tensor count larger than the file could hold", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(3, 0).zeros(98);  // 3 entries need at least 3 * 33 = 99 bytes
  CHECK_THAT(rejection(b.bytes), Contains("at offset 8: tensor count 3 is impossible for the 98 bytes left"));
  GgufBytes huge;
  huge.header(INT64_MAX, 0);
  CHECK_THAT(rejection(huge.bytes), Contains("tensor count 9223372036854775807 is impossible"));
}

TEST_CASE("gguf corrupt: metadata count larger than the file could hold", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(0, 1LL << 40).zeros(100);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 16: metadata count 1099511627776 is impossible for the 100 bytes left"));
  GgufBytes neg;
  neg.header(0, -5);
  CHECK_THAT(rejection(neg.bytes), Contains("at offset 16: metadata count -5 is impossible"));
}

TEST_CASE("gguf corrupt: counts above the sane caps even when the file could hold them", "[gguf][corrupt]") {
  // 2^20 + 1 entries of the minimal sizes (33 and 14 bytes) would fit in these files.
  GgufBytes t;
  t.header((1 << 20) + 1, 0).zeros(33 * ((1 << 20) + 1));
  CHECK_THAT(rejection(t.bytes), Contains("at offset 8: tensor count 1048577 exceeds the limit of 1048576"));
  GgufBytes kv;
  kv.header(0, (1 << 20) + 1).zeros(14 * ((1 << 20) + 1));
  CHECK_THAT(rejection(kv.bytes), Contains("at offset 16: metadata count 1048577 exceeds the limit of 1048576"));
}

// ---- metadata ----

TEST_CASE("gguf corrupt: key length above the cap", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(0, 1).u64(1u << 20).zeros(64);  // the key length field is at 24
  CHECK_THAT(rejection(b.bytes), Contains("at offset 24: metadata key length 1048576 exceeds the limit of 65536"));
}

TEST_CASE("gguf corrupt: key longer than the bytes left", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(0, 1).u64(100).raw("general.name");  // 12 bytes left after the length at 24..31
  CHECK_THAT(rejection(b.bytes), Contains("at offset 24: metadata key length 100 exceeds the 12 bytes left in the file"));
}

TEST_CASE("gguf corrupt: empty key", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(0, 1).key("", ValueType::U32).u32(1);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 24: metadata key 0 is empty"));
}

TEST_CASE("gguf corrupt: duplicate key", "[gguf][corrupt]") {
  GgufBytes b;
  // First pair: 24 + 8 (len) + 1 ("a") + 4 (type) + 4 (u32) = 41, where the second key starts.
  b.header(0, 2).key("a", ValueType::U32).u32(1).key("a", ValueType::U32).u32(2);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 41: duplicate metadata key 'a'"));
}

TEST_CASE("gguf corrupt: unknown value type", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(0, 1).str("k").u32(13).u32(0);  // type field at 24 + 8 + 1 = 33
  CHECK_THAT(rejection(b.bytes), Contains("at offset 33: key 'k': unknown value type 13"));
  GgufBytes neg;
  neg.header(0, 1).str("k").u32(0xFFFFFFFFu).u32(0);  // -1 as i32
  CHECK_THAT(rejection(neg.bytes), Contains("key 'k': unknown value type 4294967295"));
}

TEST_CASE("gguf corrupt: nested array", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(0, 1).key("k", ValueType::ARRAY).u32(static_cast<uint32_t>(ValueType::ARRAY)).u64(0);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 37: key 'k': nested arrays are not allowed"));
}

TEST_CASE("gguf corrupt: unknown array element type", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(0, 1).key("k", ValueType::ARRAY).u32(99).u64(0);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 37: key 'k': unknown array element type 99"));
}

TEST_CASE("gguf corrupt: array longer than the bytes left", "[gguf][corrupt]") {
  GgufBytes b;
  // Element type at 37, count at 41, then 8 bytes of data for a claimed 1000 u32.
  b.header(0, 1).key("k", ValueType::ARRAY).u32(static_cast<uint32_t>(ValueType::U32)).u64(1000).u64(0);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 41: key 'k': array of 1000 u32 does not fit in the 8 bytes left"));
}

TEST_CASE("gguf corrupt: array length above the cap", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(0, 1).key("k", ValueType::ARRAY).u32(static_cast<uint32_t>(ValueType::U8)).u64(1ull << 31);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 41: key 'k': array length 2147483648 exceeds the limit of 1073741824"));
}

TEST_CASE("gguf corrupt: string array count beyond the bytes left", "[gguf][corrupt]") {
  GgufBytes b;
  // 3 strings need at least 24 bytes; only one 8-byte length follows.
  b.header(0, 1).key("tokenizer.ggml.tokens", ValueType::ARRAY).u32(static_cast<uint32_t>(ValueType::STRING)).u64(3).u64(0);
  CHECK_THAT(rejection(b.bytes), Contains("key 'tokenizer.ggml.tokens': array of 3 string does not fit in the 8 bytes left"));
}

TEST_CASE("gguf corrupt: a string inside an array runs past the end", "[gguf][corrupt]") {
  GgufBytes b;
  // key "k" ends at 33, type 33..36, elem type 37..40, count 41..48, first string "ab" 49..58,
  // second string's length at 59 claims 50 bytes but 2 remain.
  b.header(0, 1).key("k", ValueType::ARRAY).u32(static_cast<uint32_t>(ValueType::STRING)).u64(2).str("ab").u64(50).raw("xy");
  CHECK_THAT(rejection(b.bytes), Contains("at offset 59: array string length 50 exceeds the 2 bytes left in the file"));
}

TEST_CASE("gguf corrupt: string value above the cap or past the end", "[gguf][corrupt]") {
  GgufBytes big;
  big.header(0, 1).key("k", ValueType::STRING).u64(1ull << 31);
  CHECK_THAT(rejection(big.bytes), Contains("at offset 37: string value length 2147483648 exceeds the limit of 1073741824"));
  GgufBytes past;
  past.header(0, 1).key("k", ValueType::STRING).u64(10).raw("abc");
  CHECK_THAT(rejection(past.bytes), Contains("at offset 37: string value length 10 exceeds the 3 bytes left in the file"));
}

TEST_CASE("gguf corrupt: bool values other than 0 and 1", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(0, 1).key("k", ValueType::BOOL).u8(2);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 37: key 'k': bool value 2 is neither 0 nor 1"));
  GgufBytes arr;
  // Elements start at 49 (after the count at 41..48); element 1 is at 50.
  arr.header(0, 1).key("k", ValueType::ARRAY).u32(static_cast<uint32_t>(ValueType::BOOL)).u64(2).u8(1).u8(5);
  CHECK_THAT(rejection(arr.bytes), Contains("at offset 50: key 'k': bool array element 1 is 5, neither 0 nor 1"));
}

TEST_CASE("gguf corrupt: the file ends inside a scalar value", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(0, 1).key("k", ValueType::U64).raw("abc");
  CHECK_THAT(rejection(b.bytes), Contains("at offset 37: file ends inside u64 value (needs 8 bytes, 3 left)"));
}

TEST_CASE("gguf corrupt: keys from the file are escaped and cut in messages", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(0, 2).key("\x1b[31mred", ValueType::U8).u8(1).key("\x1b[31mred", ValueType::U8).u8(1);
  CHECK_THAT(rejection(b.bytes), Contains("duplicate metadata key '\\x1b[31mred'"));
  const std::string long_key(5000, 'k');
  GgufBytes l;
  l.header(0, 1).str(long_key).u32(99).u32(0);
  const std::string msg = rejection(l.bytes);
  CHECK_THAT(msg, Contains("unknown value type 99") && Contains("...(5000 bytes)"));
  CHECK(msg.size() < 300);
}

// ---- alignment ----

TEST_CASE("gguf corrupt: general.alignment of the wrong type", "[gguf][corrupt]") {
  GgufBytes b;
  // key "general.alignment" (17 bytes): type at 24 + 8 + 17 = 49, value at 53.
  b.header(0, 1).key("general.alignment", ValueType::U64).u64(32);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 53: general.alignment must be u32, found u64"));
}

TEST_CASE("gguf corrupt: general.alignment not a power of two", "[gguf][corrupt]") {
  for (uint32_t al : {0u, 48u, 3u}) {
    GgufBytes b;
    b.header(0, 1).key("general.alignment", ValueType::U32).u32(al);
    CHECK_THAT(rejection(b.bytes), Contains("at offset 53: general.alignment " + std::to_string(al) + " is not a power of two"));
  }
}

TEST_CASE("gguf corrupt: absurdly large general.alignment", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(0, 1).key("general.alignment", ValueType::U32).u32(1u << 31);
  CHECK_THAT(rejection(b.bytes), Contains("general.alignment 2147483648 is larger than the limit of 1048576"));
}

// ---- tensor directory ----

TEST_CASE("gguf corrupt: empty tensor name", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(1, 0).tensor("", {8}, kF32, 0).pad(32).zeros(32);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 24: tensor 0 has an empty name"));
}

TEST_CASE("gguf corrupt: tensor name of 64 bytes", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(1, 0).tensor(std::string(64, 'n'), {8}, kF32, 0).pad(32).zeros(32);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 24: tensor '") && Contains("name is 64 bytes, the limit is 63"));
}

TEST_CASE("gguf corrupt: duplicate tensor name", "[gguf][corrupt]") {
  GgufBytes b;
  // Each entry with a 1-dim shape and a 1-byte name is 33 bytes: the second starts at 57.
  b.header(2, 0).tensor("w", {8}, kF32, 0).tensor("w", {8}, kF32, 32).pad(32).zeros(64);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 57: duplicate tensor name 'w'"));
}

TEST_CASE("gguf corrupt: n_dims of 0 or 5", "[gguf][corrupt]") {
  GgufBytes five;
  five.header(1, 0).str("w").u32(5).zeros(64);  // n_dims at 24 + 8 + 1 = 33
  CHECK_THAT(rejection(five.bytes), Contains("at offset 33: tensor 'w': n_dims 5 is outside 1..4"));
  GgufBytes zero;
  zero.header(1, 0).str("w").u32(0).zeros(64);
  CHECK_THAT(rejection(zero.bytes), Contains("at offset 33: tensor 'w': n_dims 0 is outside 1..4"));
}

TEST_CASE("gguf corrupt: zero and negative dimensions", "[gguf][corrupt]") {
  // dims start at 37; the second dimension is at 45.
  CHECK_THAT(rejection(one_tensor_file({8, 0}, kF32, 0).bytes), Contains("at offset 45: tensor 'w': dimension 1 is 0 (must be > 0)"));
  CHECK_THAT(rejection(one_tensor_file({-8}, kF32, 0).bytes), Contains("at offset 37: tensor 'w': dimension 0 is -8 (must be > 0)"));
}

TEST_CASE("gguf corrupt: element count overflows", "[gguf][corrupt]") {
  // 2^32 * 2^32 = 2^64 does not fit in 64 bits; 2^62 * 2 fits in u64 but not in i64.
  CHECK_THAT(rejection(one_tensor_file({1LL << 32, 1LL << 32}, kF32, 0).bytes),
             Contains("at offset 45: tensor 'w': element count overflows at dimension 1"));
  CHECK_THAT(rejection(one_tensor_file({1LL << 62, 2}, kF32, 0).bytes),
             Contains("tensor 'w': element count overflows at dimension 1"));
}

TEST_CASE("gguf corrupt: byte size overflows although the element count fits", "[gguf][corrupt]") {
  // 2^62 f32 elements = 2^64 bytes (the CVE-2026-33298 class), as are 2^61 i64 (type 27) in
  // two dimensions. Both element counts fit in i64. (For the block types the element cap
  // already bounds the bytes: 2^63 / 32 blocks of 34 bytes is below 2^64.)
  CHECK_THAT(rejection(one_tensor_file({1LL << 62}, kF32, 0).bytes), Contains("at offset 33: tensor 'w': byte size overflows"));
  CHECK_THAT(rejection(one_tensor_file({1LL << 30, 1LL << 31}, 27, 0).bytes), Contains("tensor 'w': byte size overflows"));
  // A huge Q8_0 tensor whose byte size does fit is still caught: it lies outside the file.
  CHECK_THAT(rejection(one_tensor_file({1LL << 62}, kQ8_0, 0).bytes),
             Contains("data [0, +4899916394579099648) lies outside the 32-byte data section"));
}

TEST_CASE("gguf corrupt: unknown tensor type", "[gguf][corrupt]") {
  // The type field follows one dimension: 37 + 8 = 45.
  CHECK_THAT(rejection(one_tensor_file({8}, 99, 0).bytes), Contains("at offset 45: tensor 'w': unknown tensor type 99"));
}

TEST_CASE("gguf corrupt: retired tensor types", "[gguf][corrupt]") {
  for (uint32_t t : {4u, 5u, 31u, 36u})  // Q4_2, Q4_3, Q4_0_4_4, IQ4_NL_4_4
    CHECK_THAT(rejection(one_tensor_file({32}, t, 0).bytes),
               Contains("at offset 45: tensor 'w': tensor type " + std::to_string(t) + " has been removed from ggml"));
}

TEST_CASE("gguf corrupt: ne[0] not a multiple of the block size", "[gguf][corrupt]") {
  CHECK_THAT(rejection(one_tensor_file({33, 2}, kQ4_0, 0).bytes),
             Contains("at offset 33: tensor 'w': ne[0] = 33 is not a multiple of the Q4_0 block size 32"));
  CHECK_THAT(rejection(one_tensor_file({128}, 12, 0).bytes),  // Q4_K needs 256
             Contains("ne[0] = 128 is not a multiple of the Q4_K block size 256"));
}

TEST_CASE("gguf corrupt: tensor offset not a multiple of the alignment", "[gguf][corrupt]") {
  // The offset field is at 49.
  CHECK_THAT(rejection(one_tensor_file({8}, kF32, 4, 64).bytes),
             Contains("at offset 49: tensor 'w': data offset 4 is not a multiple of the alignment 32"));
}

TEST_CASE("gguf corrupt: tensor data past the end of the file", "[gguf][corrupt]") {
  // 16 f32 = 64 bytes, but the data section (64..96) holds 32.
  CHECK_THAT(rejection(one_tensor_file({16}, kF32, 0).bytes),
             Contains("at offset 24: tensor 'w': data [0, +64) lies outside the 32-byte data section"));
  CHECK_THAT(rejection(one_tensor_file({8}, kF32, 32).bytes), Contains("data [32, +32) lies outside the 32-byte data section"));
}

TEST_CASE("gguf corrupt: tensor offset + size wraps around", "[gguf][corrupt]") {
  const uint64_t near_max = ~uint64_t{0} - 31;  // a multiple of 32; + 32 bytes wraps to 0
  CHECK_THAT(rejection(one_tensor_file({8}, kF32, near_max).bytes),
             Contains("tensor 'w': data [18446744073709551584, +32) lies outside the 32-byte data section"));
}

TEST_CASE("gguf corrupt: the data section starts beyond the end", "[gguf][corrupt]") {
  GgufBytes b;
  b.header(1, 0).tensor("w", {8}, kF32, 0);  // the directory ends at 57; padding would reach 64
  CHECK_THAT(rejection(b.bytes),
             Contains("at offset 57: the data section (at 64) starts beyond the end of the file (57 bytes)"));
}

TEST_CASE("gguf corrupt: the file ends inside the tensor directory", "[gguf][corrupt]") {
  GgufBytes b;
  // Entry: name 24..32, n_dims 33..36, dims 37..52, type 53..56; the offset at 57 is missing.
  // 33 bytes follow the header, just enough to pass the tensor-count check.
  b.header(1, 0).str("w").u32(2).i64(8).i64(4).u32(kF32);
  REQUIRE(b.bytes.size() == 57);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 57: file ends inside tensor offset (needs 8 bytes, 0 left)"));
}

TEST_CASE("gguf corrupt: overlapping tensors", "[gguf][corrupt]") {
  GgufBytes b;
  // "a" is 16 f32 = 64 bytes at 0; "b" 8 f32 at 32 overlaps it. "b"'s entry starts at 57.
  b.header(2, 0).tensor("a", {16}, kF32, 0).tensor("b", {8}, kF32, 32).pad(32).zeros(96);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 57: tensor 'b' overlaps tensor 'a'"));
}

TEST_CASE("gguf corrupt: data not aligned for its type under a tiny alignment", "[gguf][corrupt]") {
  GgufBytes b;
  // alignment 1: key "general.alignment" pair is 24..56 (8 + 17 + 4 + 4 bytes = 33, ends at 57);
  // tensor entry 57..89 (33 bytes), so the data section starts at 90 and f32 data at 90 + 1 = 91
  // is not a multiple of 4.
  b.header(1, 1).key("general.alignment", ValueType::U32).u32(1).tensor("w", {2}, kF32, 1).zeros(1 + 8);
  CHECK_THAT(rejection(b.bytes), Contains("at offset 57: tensor 'w': data at file offset 91 is not aligned to the 4 bytes its type F32 needs"));
}

TEST_CASE("gguf corrupt: a tiny alignment is fine when the data is naturally aligned", "[gguf][corrupt]") {
  GgufBytes b;
  // As above with the data at offset 2: file offset 92 is a multiple of 4.
  b.header(1, 1).key("general.alignment", ValueType::U32).u32(1).tensor("w", {2}, kF32, 2).zeros(2).put(1.5f).put(-2.0f);
  const File f = File::from_bytes(b.bytes);
  CHECK(f.alignment() == 1);
  CHECK(f.data_offset() == 90);
  REQUIRE(f.tensors().size() == 1);
  float v[2];
  std::memcpy(v, f.tensors()[0].data, 8);
  CHECK(v[0] == 1.5f);
  CHECK(v[1] == -2.0f);
}

// ---- typed access on a valid file ----

TEST_CASE("gguf typed access checks the array element type at every access", "[gguf][corrupt]") {
  Writer w;
  w.set_array<uint8_t>("scores", {1, 2, 3, 4});  // stored as u8, read as f32 in the CVE pattern
  w.set_array<float>("floats", {1.0f});
  w.set<double>("big", 1e300);
  const File f = File::from_bytes(w.to_bytes(), "mem.gguf");
  CHECK_THROWS_WITH(f.get_array<float>("scores"), Contains("'scores': expected array of f32, found array of u8"));
  CHECK_THROWS_WITH(f.get_array<int8_t>("scores"), Contains("expected array of i8, found array of u8"));
  CHECK_THROWS_WITH(f.get_array<uint32_t>("floats"), Contains("expected array of u32, found array of f32"));
  CHECK_THROWS_WITH(f.get_array<double>("floats"), Contains("expected array of f64, found array of f32"));
  CHECK_THROWS_WITH(f.get_array<float>("big"), Contains("'big': expected array, found f64"));
  CHECK_THROWS_WITH(f.get<std::string>("scores"), Contains("'scores': expected string, found array"));
  // 1e300 is a valid f64 but becomes infinity as an f32: refused, not silently converted.
  CHECK_THROWS_WITH(f.get<float>("big"), Contains("'big': expected f32, found f64") && Contains("out of range"));
  CHECK(f.get<double>("big") == 1e300);
  CHECK(f.get_array<uint8_t>("scores") == std::vector<uint8_t>{1, 2, 3, 4});
}

// ---- File::open ----

TEST_CASE("gguf open refuses missing, non-regular and empty files", "[gguf][corrupt]") {
  try {
    (void)File::open("/nonexistent/dir/model.gguf");
    FAIL("opened a missing file");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Io);
    CHECK_THAT(e.what(), Contains("/nonexistent/dir/model.gguf: cannot open"));
  }
  CHECK_THROWS_WITH(File::open("/tmp"), Contains("/tmp: not a regular file"));
  char path[] = "/tmp/embed_gguf_empty_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  CHECK_THROWS_WITH(File::open(path), Contains("the file is empty"));
  std::remove(path);
}

TEST_CASE("gguf open maps a valid file and rejects a truncated copy", "[gguf][corrupt]") {
  Writer w;
  std::vector<float> x(64, 0.5f);
  w.add_tensor("w", TensorType::F32, {64}, x.data(), 256);
  char path[] = "/tmp/embed_gguf_valid_XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  w.write_file(path);
  {
    const File f = File::open(path);
    REQUIRE(f.find_tensor("w") != nullptr);
    CHECK(std::memcmp(f.find_tensor("w")->data, x.data(), 256) == 0);
  }
  // Cut the last 4 data bytes: the tensor no longer fits.
  REQUIRE(truncate(path, static_cast<off_t>(w.to_bytes().size() - 4)) == 0);
  CHECK_THROWS_WITH(File::open(path), Contains("tensor 'w': data [0, +256) lies outside the 252-byte data section"));
  std::remove(path);
}
