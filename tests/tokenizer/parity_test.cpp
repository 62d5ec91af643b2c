// Id-for-id parity with the reference tokenizers (HF tokenizers for MiniLM, Qwen3 and the Unigram
// vocabulary; llama.cpp for Gemma-3) on the shared corpus, prompt templates, cross-encoder pairs,
// every added token of each vocabulary mixed with text (default and split_special), and added
// tokens with HF's lstrip / rstrip / single_word / normalized attributes. Expected ids come from
// tools/refgen/tokenizer_refgen.py.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "tests/tokenizer/fixtures.h"

namespace embed::tok::test {
namespace {

struct Tally {
  size_t cases = 0, exact = 0;
  std::string report;
  void add(bool ok, const std::string& what) {
    ++cases;
    if (ok) ++exact;
    else if (cases - exact <= 15) report += what;
  }
  void print(const std::string& name) const {
    std::printf("tokenizer parity %-22s %zu / %zu exact (%.2f%%)\n", name.c_str(), exact, cases, cases ? 100.0 * exact / cases : 0.0);
  }
};

// Known llama.cpp divergence: it re-types every token named "</s>" as a control token (its
// end-of-generation name list), whatever the vocabulary says: Gemma's user-defined "</s>" (212),
// which HF and we split out of any text, so llama.cpp keeps it as text with parse_special off;
// and the Qwen vocabulary's ordinary piece "</s>" (128247), which llama.cpp then splits out.
// Cases with "</s>" are left out (and counted) in those two comparisons.
constexpr const char* kLlamaCppRetyped = "</s>";

// Every case of `inp` encoded with `o` against the ids in `out`; `retyped`: leave out the cases
// of kLlamaCppRetyped.
Tally check_cases(const Tokenizer& t, const std::string& inp, const std::string& out, const EncodeOptions& o,
                  const std::string& name, bool retyped = false) {
  const auto inputs = read_inp(inp);
  const auto expected = read_lines(out);
  REQUIRE(!inputs.empty());
  REQUIRE(expected.size() == inputs.size());
  Tally tally;
  size_t left_out = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (retyped && inputs[i].find(kLlamaCppRetyped) != std::string::npos) {
      ++left_out;
      continue;
    }
    const auto want = parse_ids(expected[i]);
    const auto got = t.encode(inputs[i], o).ids;
    tally.add(want == got, "case " + std::to_string(i) + " \"" + printable(inputs[i]) + "\"\n" + token_diff(t, want, got));
  }
  tally.print(name);
  if (left_out) std::printf("  (%zu cases with \"%s\" left out: llama.cpp re-types that token)\n", left_out, kLlamaCppRetyped);
  CHECK(left_out * 50 <= inputs.size());  // a handful, never a silent majority
  INFO(tally.report);
  CHECK(tally.exact == tally.cases);
  return tally;
}

void check_corpus(const std::string& vocab) {
  const auto t = load_vocab(vocab);
  CHECK(check_cases(*t, "corpus.inp", vocab + ".out", {}, vocab + " corpus", vocab == "qwen-default").cases >= 2000);
}

void check_templates(const std::string& vocab) {
  check_cases(*load_vocab(vocab), "templates.inp", vocab + ".templates.out", {}, vocab + " templates");
}

// The vocabulary's own added tokens in text: read as the tokens (default) and as text (split_special).
void check_special(const std::string& vocab) {
  const auto t = load_vocab(vocab);
  check_cases(*t, vocab + ".special.inp", vocab + ".special.out", {}, vocab + " special");
  EncodeOptions split;
  split.split_special = true;
  check_cases(*t, vocab + ".special.inp", vocab + ".special.split.out", split, vocab + " special split", vocab == "gemma");
}

// The HF folder of `vocab` with the attribute tokens of attrs.json appended to its added_tokens (as
// tools/refgen added them through tokenizers' API), written to a scratch folder and imported.
std::unique_ptr<Tokenizer> with_attr_tokens(const std::string& vocab, const std::string& dir) {
  const nlohmann::json extra = nlohmann::json::parse(read_file(fixture("attrs.json")))[vocab];
  REQUIRE(extra.size() >= 10);
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / ("embed-attrs-" + vocab + "-" + std::to_string(getpid()));
  fs::create_directories(tmp);
  nlohmann::json tj = nlohmann::json::parse(read_file(dir + "/tokenizer.json"));
  for (const auto& e : extra) tj["added_tokens"].push_back(e);
  std::ofstream(tmp / "tokenizer.json") << tj.dump();
  for (const char* name : {"tokenizer_config.json", "special_tokens_map.json", "config.json"})
    if (fs::exists(fs::path(dir) / name)) fs::copy_file(fs::path(dir) / name, tmp / name, fs::copy_options::overwrite_existing);
  auto t = from_hf_folder(tmp.string());
  fs::remove_all(tmp);
  return t;
}

void check_attrs(const std::string& vocab, const std::string& dir) {
  const auto t = with_attr_tokens(vocab, dir);
  check_cases(*t, "attrs.inp", vocab + ".attrs.out", {}, vocab + " attrs");
  EncodeOptions split;
  split.split_special = true;
  check_cases(*t, "attrs.inp", vocab + ".attrs.split.out", split, vocab + " attrs split");
}

void check_pairs(const std::string& vocab) {
  const auto t = load_vocab(vocab);
  const auto inputs = read_inp("pairs.inp");
  const auto expected = read_lines(vocab + ".pairs.out");
  REQUIRE(expected.size() == inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const size_t tab = inputs[i].find('\t');
    const auto bar = expected[i].find('|');
    const auto want_ids = parse_ids(expected[i].substr(0, bar));
    const auto want_types = parse_ids(expected[i].substr(bar + 1));
    const Encoding e = t->encode_pair(inputs[i].substr(0, tab), inputs[i].substr(tab + 1));
    INFO("pair " << i << " \"" << printable(inputs[i]) << "\"\n" << token_diff(*t, want_ids, e.ids));
    CHECK(e.ids == want_ids);
    CHECK(e.type_ids == want_types);
  }
}

}  // namespace

TEST_CASE("minilm wordpiece corpus matches HF", "[tokenizer]") { check_corpus("minilm"); }
TEST_CASE("qwen3 bpe corpus matches HF", "[tokenizer]") { check_corpus("qwen"); }
TEST_CASE("unigram corpus matches HF", "[tokenizer]") { check_corpus("unigram"); }
TEST_CASE("gemma3 sentencepiece corpus matches llama.cpp", "[tokenizer]") { check_corpus("gemma"); }

TEST_CASE("llama3 pre-tokenizer (Qwen vocabulary) matches HF", "[tokenizer]") { check_corpus("qwen-llama3"); }
TEST_CASE("gpt-2 pre-tokenizer (Qwen vocabulary) matches HF", "[tokenizer]") { check_corpus("qwen-gpt2"); }
TEST_CASE("default pre-tokenizer (Qwen vocabulary) matches llama.cpp", "[tokenizer]") { check_corpus("qwen-default"); }

TEST_CASE("minilm templates match HF", "[tokenizer]") { check_templates("minilm"); }
TEST_CASE("qwen3 templates match HF", "[tokenizer]") { check_templates("qwen"); }
TEST_CASE("unigram templates match HF", "[tokenizer]") { check_templates("unigram"); }
TEST_CASE("gemma3 templates match llama.cpp", "[tokenizer]") { check_templates("gemma"); }

TEST_CASE("minilm added tokens in text match HF, default and split_special", "[tokenizer]") { check_special("minilm"); }
TEST_CASE("qwen3 added tokens in text match HF, default and split_special", "[tokenizer]") { check_special("qwen"); }
TEST_CASE("unigram added tokens in text match HF, default and split_special", "[tokenizer]") { check_special("unigram"); }
TEST_CASE("gemma3 added tokens in text match llama.cpp, parse_special on and off", "[tokenizer]") { check_special("gemma"); }

TEST_CASE("wordpiece: lstrip, rstrip, single_word, normalized added tokens match HF", "[tokenizer]") {
  check_attrs("minilm", real_model_path(kMiniLmDir));
}
TEST_CASE("byte-level bpe: lstrip, rstrip, single_word, normalized added tokens match HF", "[tokenizer]") {
  check_attrs("qwen", real_model_path(kQwenVocabDir));
}
TEST_CASE("unigram: lstrip, rstrip, single_word, normalized added tokens match HF", "[tokenizer]") {
  check_attrs("unigram", fixture("unigram"));
}

TEST_CASE("minilm pairs match HF", "[tokenizer]") { check_pairs("minilm"); }
TEST_CASE("qwen3 pairs match HF", "[tokenizer]") { check_pairs("qwen"); }
TEST_CASE("unigram pairs match HF", "[tokenizer]") { check_pairs("unigram"); }

TEST_CASE("minilm byte offsets match HF", "[tokenizer]") {
  const auto t = load_vocab("minilm");
  const auto inputs = read_inp("corpus.inp");
  const auto expected = read_lines("minilm.offsets.out");
  REQUIRE(expected.size() == inputs.size());
  Tally tally;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Encoding e = t->encode(inputs[i]);
    // Invalid UTF-8: HF saw U+FFFD (3 bytes) where we keep 1 input byte.
    if (std::any_of(e.warnings.begin(), e.warnings.end(), [](const std::string& w) { return w.find("UTF-8") != std::string::npos; }))
      continue;
    std::string got;
    for (size_t k = 0; k < e.size(); ++k) {
      if (k) got += ' ';
      got += std::to_string(e.begin[k]);
      got += ':';
      got += std::to_string(e.end[k]);
    }
    tally.add(got == expected[i], "case " + std::to_string(i) + " \"" + printable(inputs[i]) + "\"\n  want " + expected[i].substr(0, 200) + "\n  got  " + got.substr(0, 200) + "\n");
  }
  tally.print("minilm offsets");
  INFO(tally.report);
  CHECK(tally.exact == tally.cases);
}

// VERSIONS records what made the fixtures and how many cases each file holds: it must describe
// the files as committed (a partial regeneration shows up here).
TEST_CASE("tokenizer fixtures: VERSIONS matches the committed files", "[tokenizer]") {
  std::map<std::string, size_t> recorded;
  for (const std::string& line : read_lines("VERSIONS")) {
    const size_t sp = line.rfind(' ');
    if (sp != std::string::npos && line.find_first_not_of("0123456789", sp + 1) == std::string::npos)
      recorded[line.substr(0, sp)] = std::stoul(line.substr(sp + 1));
  }
  CHECK(recorded.at("cases") == read_inp("corpus.inp").size());
  CHECK(recorded.at("attrs") == read_inp("attrs.inp").size());
  for (const char* vocab : {"minilm", "qwen", "unigram", "gemma"})
    CHECK(recorded.at(std::string("special ") + vocab) == read_inp(std::string(vocab) + ".special.inp").size());
}

}  // namespace embed::tok::test
