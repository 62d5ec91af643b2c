// Line reading and UTF-8 validation (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
#include "tools/cli/input.h"

#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "base/error.h"

namespace embed::cli {

size_t find_invalid_utf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned c = p[i];
    size_t len;
    unsigned cp;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > n) return i;
    for (size_t k = 1; k < len; k++) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    const unsigned min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string::npos;
}

InputLines read_lines(const std::string& path, bool skip_empty) {
  std::string data;
  if (path == "-") {
    data.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(ErrorKind::Io, path + ": cannot open input file: " + std::strerror(errno));
    std::ostringstream ss;
    ss << in.rdbuf();
    data = ss.str();
  }
  const std::string name = path == "-" ? "stdin" : path;
  InputLines out;
  size_t start = 0, line = 0;
  while (start < data.size()) {
    size_t end = data.find('\n', start);
    if (end == std::string::npos) end = data.size();
    std::string text = data.substr(start, end - start);
    if (!text.empty() && text.back() == '\r') text.pop_back();  // CRLF files
    line++;
    start = end + 1;
    if (const size_t bad = find_invalid_utf8(text); bad != std::string::npos) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
      fail(ErrorKind::InvalidArgument, name + ": line " + std::to_string(line) + " is not valid UTF-8 (byte " + hex + " at column " +
                                           std::to_string(bad + 1) + "); convert the file to UTF-8");
    }
    if (text.empty()) {
      if (!skip_empty)
        fail(ErrorKind::InvalidArgument, name + ": line " + std::to_string(line) +
                                             " is empty; every line must hold a text (use --skip-empty to leave empty lines out)");
      out.skipped.push_back(line);
      continue;
    }
    out.texts.push_back(std::move(text));
    out.line_numbers.push_back(line);
  }
  return out;
}

}  // namespace embed::cli
