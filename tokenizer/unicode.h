// Unicode helpers for the tokenizers: UTF-8 decoding with the one invalid-byte rule, code point
// classes (from utf8proc, cached in a table), NFC/NFD pieces, lowercasing and grapheme breaks.
// No tokenizer logic lives here; everything is per code point or per short run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace embed::tok {

constexpr char32_t kReplacementChar = 0xFFFD;

// Decodes one code point at s[i]; returns its byte length, or 0 if the bytes there are not a
// valid UTF-8 sequence (overlong forms, surrogates, > U+10FFFF and truncated sequences are invalid).
size_t decode_utf8(std::string_view s, size_t i, char32_t& cp);
// Byte length of the (already valid) UTF-8 sequence starting with byte b.
inline size_t utf8_len(unsigned char b) { return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; }
void append_utf8(std::string& out, char32_t cp);

// The documented rule for input that is not valid UTF-8: each byte that does not start a valid
// sequence becomes U+FFFD (so one invalid byte = one replacement character, as Python's
// errors="surrogateescape" followed by mapping each escape to U+FFFD). Returns false and leaves
// `out` empty when `in` is valid; otherwise fills `out` and `src` (src[k] = input byte offset of
// output byte k, plus one final entry for the end).
bool sanitize_utf8(std::string_view in, std::string& out, std::vector<uint32_t>& src);

// Code point classes used by the normalizers and pre-tokenizers.
enum CharClass : uint16_t {
  kLetter = 1 << 0,      // L*
  kNumber = 1 << 1,      // N*
  kPunct = 1 << 2,       // P*
  kMark = 1 << 3,        // M*
  kMarkNonspacing = 1 << 4,  // Mn
  kWhitespace = 1 << 5,  // the Unicode White_Space property (what \s matches in HF's regexes)
  kOther = 1 << 6,       // Cc, Cf, Co, Cs: what BERT's clean_text drops (Cn is kept, as HF does)
  kCjk = 1 << 7,         // the CJK ideograph blocks BERT isolates
  kNfcTrivial = 1 << 8,  // NFC leaves this code point alone and it never composes with a neighbour
  kCombines = 1 << 9,    // may compose with the code point before it (marks, Hangul V/T jamo)
  kWord = 1 << 10,       // Rust regex \w (HF's single_word test): Alphabetic, M*, Nd, Pc, Join_Control
};
uint16_t char_class(char32_t cp);
inline bool is_letter(char32_t cp) { return char_class(cp) & kLetter; }
inline bool is_number(char32_t cp) { return char_class(cp) & kNumber; }
inline bool is_space(char32_t cp) { return char_class(cp) & kWhitespace; }
inline bool is_word_char(char32_t cp) { return char_class(cp) & kWord; }

// Simple lowercase mapping, except U+0130 which lowercases to "i" + U+0307 as Rust's
// char::to_lowercase does (HF normalizers are Rust). Appends UTF-8 to out.
void append_lower(std::string& out, char32_t cp);
// Canonical decomposition (NFD) of one code point into out (at most 4 code points for any
// character; returns the count).
int decompose_nfd(char32_t cp, char32_t out[8]);
// NFC of a short run (a starter and the code points that may combine with it).
std::string nfc(std::string_view run);

// Extended grapheme cluster break between two code points (state carried across calls).
bool grapheme_break(char32_t a, char32_t b, int32_t& state);

}  // namespace embed::tok
