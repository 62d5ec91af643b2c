// Unicode helpers (see unicode.h). Classes come from utf8proc once, into a table over all code
// points, so the hot loops of the tokenizers do one array read per character.
#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

namespace embed::tok {

size_t decode_utf8(std::string_view s, size_t i, char32_t& cp) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
  const size_t left = s.size() - i;
  const unsigned char b0 = p[0];
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  size_t n;
  char32_t min;
  if (b0 >= 0xC2 && b0 <= 0xDF) n = 2, min = 0x80, cp = b0 & 0x1F;
  else if (b0 >= 0xE0 && b0 <= 0xEF) n = 3, min = 0x800, cp = b0 & 0x0F;
  else if (b0 >= 0xF0 && b0 <= 0xF4) n = 4, min = 0x10000, cp = b0 & 0x07;
  else return 0;
  if (left < n) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((p[k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[k] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool sanitize_utf8(std::string_view in, std::string& out, std::vector<uint32_t>& src) {
  size_t i = 0;
  char32_t cp;
  while (i < in.size()) {
    const size_t n = decode_utf8(in, i, cp);
    if (n == 0) break;
    i += n;
  }
  out.clear();
  src.clear();
  if (i == in.size()) return false;
  out.reserve(in.size() + 16);
  src.reserve(in.size() + 16);
  out.append(in.data(), i);
  for (size_t k = 0; k < i; ++k) src.push_back(static_cast<uint32_t>(k));
  while (i < in.size()) {
    size_t n = decode_utf8(in, i, cp);
    if (n == 0) {
      append_utf8(out, kReplacementChar);
      for (int k = 0; k < 3; ++k) src.push_back(static_cast<uint32_t>(i));
      i += 1;
      continue;
    }
    for (size_t k = 0; k < n; ++k) src.push_back(static_cast<uint32_t>(i + k));
    out.append(in.data() + i, n);
    i += n;
  }
  src.push_back(static_cast<uint32_t>(in.size()));
  return true;
}

namespace {

bool is_white_space_property(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

// The ranges BERT's handle_chinese_chars isolates (HF tokenizers normalizers/bert.rs).
bool is_bert_cjk(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// Other_Alphabetic code points outside L* and M* (PropList.txt, Unicode 15): circled and squared
// Latin letters (So). With L*, Nl, M*, Nd, Pc and the joiners they make up Rust regex's \w.
bool is_other_alphabetic_symbol(char32_t cp) {
  return (cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F149) || (cp >= 0x1F150 && cp <= 0x1F169) ||
         (cp >= 0x1F170 && cp <= 0x1F189);
}

uint16_t compute_class(char32_t cp) {
  const auto* prop = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
  uint16_t c = 0;
  switch (prop->category) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: c |= kLetter; break;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO: c |= kNumber; break;
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS: case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF: case UTF8PROC_CATEGORY_PO: c |= kPunct; break;
    case UTF8PROC_CATEGORY_MN: c |= kMark | kMarkNonspacing; break;
    case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: c |= kMark; break;
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS: c |= kOther; break;
    default: break;
  }
  if (is_white_space_property(cp)) c |= kWhitespace;
  if (is_bert_cjk(cp)) c |= kCjk;
  if ((c & (kLetter | kMark)) || prop->category == UTF8PROC_CATEGORY_ND || prop->category == UTF8PROC_CATEGORY_NL ||
      prop->category == UTF8PROC_CATEGORY_PC || cp == 0x200C || cp == 0x200D || is_other_alphabetic_symbol(cp))
    c |= kWord;
  const bool hangul_vt = (cp >= 0x1161 && cp <= 0x1175) || (cp >= 0x11A8 && cp <= 0x11C2);
  if (prop->combining_class != 0 || (c & kMark) || hangul_vt) c |= kCombines;
  if (!(c & kCombines)) {
    utf8proc_int32_t buf[8];
    int bound = 0;
    const auto n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 8,
                                           static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE), &bound);
    // NFC keeps cp as is when its canonical decomposition recomposes to it: either there is none,
    // or it is a composite that is not excluded from composition.
    if (n == 1 && buf[0] == static_cast<utf8proc_int32_t>(cp)) c |= kNfcTrivial;
    else if (n > 0 && cp < 0xAC00) {
      std::string s;
      append_utf8(s, cp);
      if (nfc(s) == s) c |= kNfcTrivial;
    } else if (cp >= 0xAC00 && cp <= 0xD7A3) {
      c |= kNfcTrivial;  // precomposed Hangul syllables are NFC
    }
  }
  return c;
}

struct ClassTable {
  std::unique_ptr<uint16_t[]> v{new uint16_t[0x110000]};
  ClassTable() {
    for (char32_t cp = 0; cp < 0x110000; ++cp) v[cp] = compute_class(cp);
  }
};

}  // namespace

uint16_t char_class(char32_t cp) {
  static const ClassTable table;
  return cp < 0x110000 ? table.v[cp] : 0;
}

void append_lower(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp));
    return;
  }
  if (cp == 0x130) {
    out += "i\xCC\x87";
    return;
  }
  append_utf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
}

int decompose_nfd(char32_t cp, char32_t out[8]) {
  utf8proc_int32_t buf[8];
  int bound = 0;
  const auto n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 8,
                                         static_cast<utf8proc_option_t>(UTF8PROC_DECOMPOSE), &bound);
  if (n <= 0 || n > 8) {
    out[0] = cp;
    return 1;
  }
  for (int k = 0; k < n; ++k) out[k] = static_cast<char32_t>(buf[k]);
  return static_cast<int>(n);
}

std::string nfc(std::string_view run) {
  utf8proc_uint8_t* res = nullptr;
  const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(run.data()), static_cast<utf8proc_ssize_t>(run.size()),
                              &res, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) {
    std::free(res);
    return std::string(run);
  }
  std::string s(reinterpret_cast<const char*>(res), static_cast<size_t>(n));
  std::free(res);
  return s;
}

bool grapheme_break(char32_t a, char32_t b, int32_t& state) {
  return utf8proc_grapheme_break_stateful(static_cast<utf8proc_int32_t>(a), static_cast<utf8proc_int32_t>(b), &state);
}

}  // namespace embed::tok
