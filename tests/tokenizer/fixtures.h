// Shared helpers of the tokenizer tests: reading the *.inp / *.out fixtures written by
// tools/refgen/tokenizer_refgen.py, loading the four test vocabularies, and a token-level diff.
#pragma once

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "tests/real_models.h"
#include "tokenizer/tokenizer.h"

namespace embed::tok::test {

using embed::test::kGemmaGguf;
using embed::test::kMiniLmDir;
using embed::test::kQwenVocabDir;
using embed::test::real_model_path;

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open fixture " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string fixture(const std::string& name) { return std::string(EMBED_FIXTURES_DIR) + "/tokenizer/" + name; }

// Cases of an .inp file: each followed by "\n__ggml_vocab_test__\n".
inline std::vector<std::string> read_inp(const std::string& name) {
  const std::string data = read_file(fixture(name));
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t pos = 0;
  for (size_t hit; (hit = data.find(sep, pos)) != std::string::npos; pos = hit + sep.size()) out.push_back(data.substr(pos, hit - pos));
  return out;
}

inline std::vector<std::string> read_lines(const std::string& name) {
  std::istringstream in(read_file(fixture(name)));
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

inline std::vector<int32_t> parse_ids(const std::string& line) {
  std::istringstream in(line);
  std::vector<int32_t> ids;
  for (int32_t v; in >> v;) ids.push_back(v);
  return ids;
}

// A tokenizer from an HF folder through our importer (the path the converter takes). `extra`
// can add or override metadata before the GGUF is read back.
template <class Extra = void (*)(gguf::Writer&)>
std::unique_ptr<Tokenizer> from_hf_folder(const std::string& dir, Extra extra = [](gguf::Writer&) {}) {
  gguf::Writer w;
  w.set_string("general.architecture", "test");
  import_hf_tokenizer(dir, w);
  extra(w);
  static std::vector<std::unique_ptr<gguf::File>> keep;  // Tokenizer copies what it needs; files stay valid anyway
  keep.push_back(std::make_unique<gguf::File>(gguf::File::from_bytes(w.to_bytes(), dir)));
  return Tokenizer::from_gguf(*keep.back());
}

inline std::unique_ptr<Tokenizer> load_vocab(const std::string& name) {
  if (name == "minilm") return from_hf_folder(real_model_path(kMiniLmDir));
  if (name == "qwen") return from_hf_folder(real_model_path(kQwenVocabDir));
  for (const char* pre : {"llama-bpe", "gpt-2", "default"}) {  // the Qwen vocabulary, other pre-tokenizers
    const std::string variant = std::string("qwen-") + (pre == std::string("llama-bpe") ? "llama3" : pre == std::string("gpt-2") ? "gpt2" : pre);
    if (name == variant)
      return from_hf_folder(real_model_path(kQwenVocabDir),
                            [pre](gguf::Writer& w) {
                              w.set_string("tokenizer.ggml.pre", pre);
                              // llama.cpp was asked for no special tokens; HF's template still appends EOS
                              if (std::string(pre) == "default") w.set<bool>("tokenizer.ggml.add_eos_token", false);
                            });
  }
  if (name == "unigram") return from_hf_folder(fixture("unigram"));
  if (name == "gemma") {
    static auto file = std::make_unique<gguf::File>(
        gguf::File::open(real_model_path(kGemmaGguf)));
    return Tokenizer::from_gguf(*file);
  }
  throw std::runtime_error("unknown test vocabulary " + name);
}

// "index: expected id 'piece' | got id 'piece'" lines around the first difference.
inline std::string token_diff(const Tokenizer& t, const std::vector<int32_t>& want, const std::vector<int32_t>& got) {
  size_t first = 0;
  while (first < want.size() && first < got.size() && want[first] == got[first]) ++first;
  std::ostringstream os;
  os << "  expected " << want.size() << " tokens, got " << got.size() << "; first difference at " << first << "\n";
  for (size_t i = first > 2 ? first - 2 : 0; i < std::max(want.size(), got.size()) && i < first + 6; ++i) {
    os << "    [" << i << "] ";
    if (i < want.size()) os << want[i] << " '" << t.piece(want[i]) << "'";
    else os << "-";
    os << " | ";
    if (i < got.size()) os << got[i] << " '" << t.piece(got[i]) << "'";
    else os << "-";
    os << (i < want.size() && i < got.size() && want[i] == got[i] ? "" : "   <--") << "\n";
  }
  return os.str();
}

inline std::string printable(const std::string& s, size_t max = 80) {
  std::string out;
  for (unsigned char c : s.substr(0, max)) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) out += "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
    else out += static_cast<char>(c);
  }
  return s.size() > max ? out + "... (" + std::to_string(s.size()) + " bytes)" : out;
}

}  // namespace embed::tok::test
