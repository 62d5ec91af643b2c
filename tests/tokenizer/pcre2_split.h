// The byte-level BPE pre-tokenizer regexes run by PCRE2 (UTF + UCP), as a second implementation
// to check the hand-written scanners against and to time them (tools/bench). Find-all with the
// unmatched gaps kept, as HF's Split(behavior=Isolated) does.
#pragma once

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace embed::tok::test {

// The regexes exactly as HF's tokenizer.json files spell them.
inline const char* kRegexQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline const char* kRegexLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline const char* kRegexGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class Pcre2Splitter {
 public:
  explicit Pcre2Splitter(const char* pattern) {
    int err = 0;
    PCRE2_SIZE off = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
    if (!code_) throw std::runtime_error("pcre2_compile failed at " + std::to_string(off));
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);
    data_ = pcre2_match_data_create_from_pattern(code_, nullptr);
  }
  ~Pcre2Splitter() {
    pcre2_match_data_free(data_);
    pcre2_code_free(code_);
  }
  Pcre2Splitter(const Pcre2Splitter&) = delete;
  Pcre2Splitter& operator=(const Pcre2Splitter&) = delete;

  void split(std::string_view text, std::vector<std::pair<uint32_t, uint32_t>>& out) const {
    size_t pos = 0, gap = 0;
    while (pos < text.size()) {
      const int rc = pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(text.data()), text.size(), pos, PCRE2_NO_UTF_CHECK, data_, nullptr);
      if (rc < 0) break;
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data_);
      if (ov[1] == ov[0]) {  // empty match: step over one character
        pos = ov[0] + 1;
        while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
        continue;
      }
      if (gap < ov[0]) out.emplace_back(static_cast<uint32_t>(gap), static_cast<uint32_t>(ov[0]));
      out.emplace_back(static_cast<uint32_t>(ov[0]), static_cast<uint32_t>(ov[1]));
      pos = gap = ov[1];
    }
    if (gap < text.size()) out.emplace_back(static_cast<uint32_t>(gap), static_cast<uint32_t>(text.size()));
  }

 private:
  pcre2_code* code_ = nullptr;
  pcre2_match_data* data_ = nullptr;
};

}  // namespace embed::tok::test
