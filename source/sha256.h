// SHA-256 (FIPS 180-4), for checking downloaded files against the Hub's LFS object ids. Streaming:
// update() any number of times, then hex(). Knows nothing of files or the Hub.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace embed::source {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  // The digest as 64 lower-case hex digits; the object is spent afterwards.
  std::string hex();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t used_ = 0;     // bytes in buf_
  uint64_t total_ = 0;  // bytes hashed
};

// The SHA-256 of a whole file as hex; throws embed::Error(Io) when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace embed::source
