// `embed tokenize model.gguf input.txt`: for each input line, the token ids separated by spaces
// (one output line per input line). --pieces prints the pieces instead, --no-special leaves out
// the special tokens the model adds, --split-special reads special-token text in the input as text.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "base/error.h"
#include "engine/api.h"
#include "gguf/file.h"
#include "tokenizer/tokenizer.h"
#include "tools/cli/commands.h"

namespace embed::cli {
namespace {

// A piece printed on one line: control bytes escaped, so output lines stay one per input line.
std::string printable_piece(std::string_view p) {
  std::string out;
  for (unsigned char c : p) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c == ' ') out += "\\s";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

int run_tokenize(const TokenizeOptions& o) {
  const gguf::File f = open_model_file(o.model, source_options(o.source));
  const auto tok = tok::Tokenizer::from_gguf(f);
  for (const auto& w : tok->load_warnings()) std::fprintf(stderr, "embed: warning: %s\n", w.c_str());
  std::ifstream file;
  std::istream* in = &std::cin;
  if (o.input != "-") {
    file.open(o.input, std::ios::binary);
    if (!file) fail(ErrorKind::Io, o.input + ": cannot open");
    in = &file;
  }
  tok::EncodeOptions eo;
  eo.add_special = !o.no_special;
  eo.split_special = o.split_special;
  std::string line, out;
  size_t line_no = 0;
  while (std::getline(*in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const tok::Encoding e = tok->encode(line, eo);
    for (const auto& w : e.warnings) std::fprintf(stderr, "embed: warning: line %zu: %s\n", line_no, w.c_str());
    out.clear();
    for (size_t i = 0; i < e.size(); ++i) {
      if (i) out += ' ';
      out += o.pieces ? printable_piece(tok->piece(e.ids[i])) : std::to_string(e.ids[i]);
    }
    out += '\n';
    std::fwrite(out.data(), 1, out.size(), stdout);
  }
  if (in->bad()) fail(ErrorKind::Io, o.input + ": read error");
  return kExitOk;
}

}  // namespace embed::cli
