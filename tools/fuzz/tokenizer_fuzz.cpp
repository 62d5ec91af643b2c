// libFuzzer entry for one tokenizer kind (EMBED_FUZZ_KIND: wordpiece, bpe, spm, unigram): encodes
// arbitrary bytes as single texts and pairs, with and without split_special, added specials and
// truncation, and aborts where the tokenizer breaks its promises (ids outside the vocabulary,
// offsets outside the input, ragged encodings, invalid UTF-8 not handled as documented). Owns no logic.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include "base/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "tokenizer/tokenizer.h"

using namespace embed;
using namespace embed::tok;

namespace {

[[noreturn]] void broken(const char* what, std::string_view input) {
  std::fprintf(stderr, "tokenizer_fuzz (%s): %s (input of %zu bytes)\n", EMBED_FUZZ_KIND, what, input.size());
  std::abort();
}

[[noreturn]] void setup_failed(const std::string& why) {
  std::fprintf(stderr, "tokenizer_fuzz (%s): %s\n", EMBED_FUZZ_KIND, why.c_str());
  std::exit(2);
}

std::string env_or(const char* var, const std::string& fallback) {
  const char* v = std::getenv(var);
  return v && *v ? v : fallback;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) setup_failed("cannot read " + p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::unique_ptr<gguf::File>> g_files;  // the GGUFs the tokenizers were read from

// An HF folder through the importer, with the attribute tokens of the parity fixtures
// (tests/fixtures/tokenizer/attrs.json: lstrip, rstrip, single_word, normalized) added, so the
// added-token matcher is fuzzed with every rule. `pre` overrides tokenizer.ggml.pre.
std::unique_ptr<Tokenizer> from_hf(const std::string& dir, const std::string& attrs_name, const std::string& pre = "") {
  namespace fs = std::filesystem;
  const fs::path fixtures = fs::path(EMBED_SOURCE_DIR) / "tests/fixtures/tokenizer";
  nlohmann::json tj = nlohmann::json::parse(read_file(fs::path(dir) / "tokenizer.json"));
  const nlohmann::json attrs = nlohmann::json::parse(read_file(fixtures / "attrs.json"));
  for (const auto& e : attrs.at(attrs_name)) tj["added_tokens"].push_back(e);
  const fs::path tmp = fs::temp_directory_path() / ("embed-tokenizer-fuzz-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  std::ofstream(tmp / "tokenizer.json") << tj.dump();
  for (const char* name : {"tokenizer_config.json", "special_tokens_map.json", "config.json"})
    if (fs::exists(fs::path(dir) / name)) fs::copy_file(fs::path(dir) / name, tmp / name, fs::copy_options::overwrite_existing);
  gguf::Writer w;
  w.set_string("general.architecture", "fuzz");
  import_hf_tokenizer(tmp.string(), w);
  fs::remove_all(tmp);
  if (!pre.empty()) w.set_string("tokenizer.ggml.pre", pre);
  g_files.push_back(std::make_unique<gguf::File>(gguf::File::from_bytes(w.to_bytes(), dir)));
  return Tokenizer::from_gguf(*g_files.back());
}

std::vector<std::unique_ptr<Tokenizer>> g_tokenizers;

void load() {
  const std::string kind = EMBED_FUZZ_KIND;
  const std::string cache = env_or("HOME", "") + "/.cache/embed/models/";
  try {
    if (kind == "wordpiece") {
      g_tokenizers.push_back(from_hf(env_or("EMBED_MINILM_DIR", cache + "all-MiniLM-L6-v2"), "minilm"));
    } else if (kind == "bpe") {  // the Qwen vocabulary under every pre-tokenizer family
      const std::string dir = env_or("EMBED_QWEN_VOCAB_DIR", cache + "qwen3-embedding-vocab");
      for (const char* pre : {"qwen2", "llama-bpe", "gpt-2", "default"}) g_tokenizers.push_back(from_hf(dir, "qwen", pre));
    } else if (kind == "unigram") {
      g_tokenizers.push_back(from_hf(std::string(EMBED_SOURCE_DIR) + "/tests/fixtures/tokenizer/unigram", "unigram"));
    } else if (kind == "spm") {
      g_files.push_back(std::make_unique<gguf::File>(gguf::File::open(env_or("EMBED_GEMMA_GGUF", cache + "gemma-3-270m-q4_k_m.gguf"))));
      g_tokenizers.push_back(Tokenizer::from_gguf(*g_files.back()));
    } else {
      setup_failed("unknown kind");
    }
  } catch (const Error& e) {
    setup_failed(std::string(e.what()) + " (run tools/models.sh minilm | qwen-vocab | gemma3-270m)");
  }
}

// Independent of the tokenizer's own repair: the length of the valid UTF-8 sequence at s[i], or 0
// (Unicode 15, table 3-7: no overlong forms, surrogates or code points above U+10FFFF).
size_t sequence_length(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) n = 2;
  else if (b == 0xE0) n = 3, lo = 0xA0;
  else if (b == 0xED) n = 3, hi = 0x9F;
  else if (b >= 0xE1 && b <= 0xEF) n = 3;
  else if (b == 0xF0) n = 4, lo = 0x90;
  else if (b == 0xF4) n = 4, hi = 0x8F;
  else if (b >= 0xF1 && b <= 0xF3) n = 4;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return 0;
  }
  return n;
}

// The documented rule (docs/tokenizers.md): each byte that does not start a valid sequence
// becomes U+FFFD. Returns false when `s` is valid.
bool repair_utf8(std::string_view s, std::string& out) {
  bool changed = false;
  for (size_t i = 0; i < s.size();) {
    const size_t n = sequence_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      changed = true;
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return changed;
}

bool has_utf8_warning(const Encoding& e) {
  for (const std::string& w : e.warnings)
    if (w.find("UTF-8") != std::string::npos) return true;
  return false;
}

// The promises every encoding keeps; `len[s]` is the byte length of text s (0 or 1).
void check(const Tokenizer& t, const Encoding& e, const size_t len[2], std::string_view input) {
  const size_t n = e.ids.size();
  if (e.type_ids.size() != n || e.begin.size() != n || e.end.size() != n || e.special.size() != n || e.sequence.size() != n)
    broken("encoding arrays differ in length", input);
  for (size_t i = 0; i < n; ++i) {
    if (e.ids[i] < 0 || static_cast<size_t>(e.ids[i]) >= t.vocab_size()) broken("id outside the vocabulary", input);
    if (e.sequence[i] < -1 || e.sequence[i] > 1) broken("sequence index out of range", input);
    if (e.begin[i] > e.end[i]) broken("token offsets reversed", input);
    if (e.sequence[i] >= 0 && e.end[i] > len[e.sequence[i]]) broken("token offsets outside the input", input);
    if (e.sequence[i] < 0 && (e.begin[i] != 0 || e.end[i] != 0 || !e.special[i])) broken("added special token not marked", input);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  load();
  return 0;
}

// Byte 0 picks the options (bits 0-4 below, 5-6 the vocabulary variant, 7 the truncation side),
// the rest is text; a 0x1F byte in it splits a pair.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  const Tokenizer& t = *g_tokenizers[((mode >> 5) & 3) % g_tokenizers.size()];
  EncodeOptions o;
  o.split_special = mode & 1;
  o.add_special = !(mode & 2);
  if (mode & 4) o.max_tokens = 1 + input.size() % 16;  // the Error overflow mode is a clean throw
  o.direction = (mode & 128) ? TruncationDirection::Left : TruncationDirection::Right;  // bit 7: free of the choice below
  const bool pair = mode & 8;
  try {
    if (pair) {
      const size_t cut = input.find('\x1f');
      const std::string_view a = input.substr(0, cut), b = cut == std::string_view::npos ? std::string_view() : input.substr(cut + 1);
      const size_t len[2] = {a.size(), b.size()};
      const Encoding e = t.encode_pair(a, b, o);
      check(t, e, len, input);
      std::string ra, rb;
      const bool bad_a = repair_utf8(a, ra), bad_b = repair_utf8(b, rb);
      const bool bad = bad_a || bad_b;
      if (bad != has_utf8_warning(e)) broken("invalid UTF-8 not reported, or valid UTF-8 reported", input);
      if (bad && t.encode_pair(ra, rb, o).ids != e.ids) broken("invalid UTF-8 is not read as U+FFFD per byte", input);
      if (mode & 16) {  // a template: `a` its own text, `b` the caller's, filled in after it
        const std::string filled = std::string(a) + std::string(b);
        const size_t flen[2] = {filled.size(), 0};
        const Encoding te = t.encode_template(filled, {TextRange{a.size(), filled.size()}}, o);
        check(t, te, flen, input);
        if (!o.split_special && te.ids != t.encode(filled, o).ids) broken("a template without split_special differs from encode", input);
      }
    } else {
      const size_t len[2] = {input.size(), 0};
      const Encoding e = t.encode(input, o);
      check(t, e, len, input);
      std::string repaired;
      const bool bad = repair_utf8(input, repaired);
      if (bad != has_utf8_warning(e)) broken("invalid UTF-8 not reported, or valid UTF-8 reported", input);
      if (bad && t.encode(repaired, o).ids != e.ids) broken("invalid UTF-8 is not read as U+FFFD per byte", input);
      if (mode & 16) {
        Encoding c = e;
        t.truncate(c, c.size() / 2 + 3, o.direction);
        check(t, c, len, input);
      }
      (void)t.decode(e.ids);
    }
  } catch (const Error& err) {
    // Only a text too long for the added specials may be refused (truncation below them).
    if (err.kind() != ErrorKind::InvalidArgument) broken("unexpected error kind", input);
  }
  return 0;
}
