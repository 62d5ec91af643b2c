// Behaviour around the ids: special tokens and masks, split_special, the doubled-BOS and pooling
// EOS rules, pair layouts, truncation, invalid UTF-8, long words, offsets, decoding and the errors
// for unsupported metadata. Expected values are HF's / llama.cpp's ids (quoted from the fixtures'
// sources or ../shared/notes) or hand-derived rules written out next to each check.
#include <catch2/catch.hpp>

#include <random>

#include "base/error.h"
#include "tests/tokenizer/fixtures.h"
#include "tokenizer/unicode.h"

namespace embed::tok::test {
namespace {

using Ids = std::vector<int32_t>;

Ids content_ids(const Tokenizer& t, std::string_view s) {
  EncodeOptions o;
  o.add_special = false;
  return t.encode(s, o).ids;
}

bool has_warning(const Encoding& e, const std::string& needle) {
  for (const auto& w : e.warnings)
    if (w.find(needle) != std::string::npos) return true;
  return false;
}

// A minimal vocabulary GGUF for the error paths.
gguf::File tiny_gguf(const std::string& model, const std::string& pre, int64_t bos = -1) {
  gguf::Writer w;
  w.set_string("general.architecture", "test");
  if (!model.empty()) w.set_string("tokenizer.ggml.model", model);
  if (!pre.empty()) w.set_string("tokenizer.ggml.pre", pre);
  w.set_string_array("tokenizer.ggml.tokens", {"a", "b", "ab"});
  w.set_array<float>("tokenizer.ggml.scores", {0.f, 0.f, 0.f});
  w.set_string_array("tokenizer.ggml.merges", {"a b"});
  if (bos >= 0) w.set<uint32_t>("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(bos));
  return gguf::File::from_bytes(w.to_bytes());
}

}  // namespace

TEST_CASE("special ids come from metadata with the family defaults", "[tokenizer]") {
  const auto bert = load_vocab("minilm");  // tokenizer.json: [PAD]=0 [UNK]=100 [CLS]=101 [SEP]=102 [MASK]=103
  CHECK(bert->kind() == Kind::WordPiece);
  CHECK(bert->cls() == 101);
  CHECK(bert->sep() == 102);
  CHECK(bert->pad() == 0);
  CHECK(bert->unk() == 100);
  CHECK(bert->mask() == 103);
  CHECK(bert->eos() == -1);
  const auto qwen = load_vocab("qwen");  // Qwen3-Embedding template appends <|endoftext|> = 151643
  CHECK(qwen->kind() == Kind::Bpe);
  CHECK(qwen->eos() == 151643);
  CHECK(qwen->bos() == 151643);  // no BOS in HF: the importer names the EOS, never added
  CHECK(qwen->encode("a").ids.front() != 151643);
  const auto gemma = load_vocab("gemma");  // GGUF: bos 2, eos 1, unk 3, pad 0
  CHECK(gemma->kind() == Kind::SentencePiece);
  CHECK((gemma->bos() == 2 && gemma->eos() == 1 && gemma->unk() == 3 && gemma->pad() == 0));
  const auto uni = load_vocab("unigram");  // fairseq layout: <s>=0 <pad>=1 </s>=2 <unk>=3
  CHECK(uni->kind() == Kind::Unigram);
  CHECK((uni->bos() == 0 && uni->pad() == 1 && uni->eos() == 2 && uni->unk() == 3));
}

TEST_CASE("special-token mask, sequence ids and empty offsets for added tokens", "[tokenizer]") {
  const auto t = load_vocab("minilm");
  const Encoding e = t->encode("Hello world");  // HF: [101, 7592, 2088, 102]
  CHECK(e.ids == Ids{101, 7592, 2088, 102});
  CHECK(e.special == std::vector<uint8_t>{1, 0, 0, 1});
  CHECK(e.sequence == std::vector<int8_t>{-1, 0, 0, -1});
  CHECK(e.type_ids == Ids{0, 0, 0, 0});
  CHECK((e.begin[0] == 0 && e.end[0] == 0 && e.begin[3] == 0 && e.end[3] == 0));
  CHECK((e.begin[1] == 0 && e.end[1] == 5 && e.begin[2] == 6 && e.end[2] == 11));
  EncodeOptions no_special;
  no_special.add_special = false;
  CHECK(t->encode("Hello world", no_special).ids == Ids{7592, 2088});
}

TEST_CASE("special-token text is the special token unless split_special", "[tokenizer]") {
  const auto t = load_vocab("minilm");
  // HF (tokenizer("[MASK] x")): [CLS] [MASK] x [SEP] = 101 103 1060 102; split_special_tokens:
  // "[", "mask", "]", "x" = 1031 7308 1033 1060.
  const Encoding parsed = t->encode("[MASK] x");
  CHECK(parsed.ids == Ids{101, 103, 1060, 102});
  CHECK(parsed.special == std::vector<uint8_t>{1, 1, 0, 1});
  CHECK((parsed.begin[1] == 0 && parsed.end[1] == 6));
  EncodeOptions o;
  o.split_special = true;
  CHECK(t->encode("[MASK] x", o).ids == Ids{101, 1031, 7308, 1033, 1060, 102});
}

TEST_CASE("user-defined tokens are split out of any text", "[tokenizer]") {
  // Gemma's vocabulary types "</s>" (212), "<s>" (203) and "\n" (107) USER_DEFINED; HF matches
  // such added tokens in plain text. Qwen3's "<think>" (151667) is a non-special added token.
  const auto g = load_vocab("gemma");
  const Ids a = content_ids(*g, "a</s>b");
  CHECK(std::find(a.begin(), a.end(), 212) != a.end());
  EncodeOptions split;  // user-defined tokens are not special: split_special leaves them alone
  split.add_special = false;
  split.split_special = true;
  CHECK(g->encode("a</s>b", split).ids == a);
  CHECK(content_ids(*g, "\n") == Ids{107});
  const auto q = load_vocab("qwen");
  const Encoding e = q->encode("<think>");
  CHECK(e.ids == Ids{151667, 151643});
  CHECK(e.special == std::vector<uint8_t>{0, 1});  // user-defined text is content for pooling
}

TEST_CASE("a filled template keeps its own special tokens, split_special reads only the caller's text as text", "[tokenizer]") {
  const auto q = load_vocab("qwen");  // <|im_start|> = 151644, <|im_end|> = 151645
  const std::string user = "a<|im_end|>b";
  const std::string text = "<|im_start|>user\n" + user + "<|im_end|>";
  const std::vector<TextRange> ranges = {{17, 17 + user.size()}};
  EncodeOptions o;
  o.add_special = false;
  // Without split_special: every special-token text is the token, as encode() reads it.
  CHECK(q->encode_template(text, ranges, o).ids == q->encode(text, o).ids);
  // With it: the template's two tokens stay special, the caller's "<|im_end|>" is characters.
  o.split_special = true;
  Ids want{151644};
  const Ids middle = q->encode("user\n" + user, o).ids;
  want.insert(want.end(), middle.begin(), middle.end());
  want.push_back(151645);
  const Encoding e = q->encode_template(text, ranges, o);
  CHECK(e.ids == want);
  CHECK(std::count(e.ids.begin(), e.ids.end(), 151645) == 1);
  CHECK((e.begin.back() == text.size() - 10 && e.end.back() == text.size()));
}

TEST_CASE("Qwen3-Embedding pooling EOS: appended when the metadata does not add it", "[tokenizer]") {
  const std::string dir = real_model_path(kQwenVocabDir);
  // QwenLM/Qwen3-Embedding#122 (shared/notes/models.md): 'test' -> [1944, 151643].
  const auto with_flag = from_hf_folder(dir, [](gguf::Writer& w) { w.set<uint32_t>("test.pooling_type", 3); });
  const Encoding ok = with_flag->encode("test");
  CHECK(ok.ids == Ids{1944, 151643});
  CHECK(ok.warnings.empty());
  // An early Qwen3-Embedding GGUF: eos <|im_end|> (151645), add_eos false, pooling LAST.
  const auto old = from_hf_folder(dir, [](gguf::Writer& w) {
    w.set<uint32_t>("test.pooling_type", 3);
    w.set<bool>("tokenizer.ggml.add_eos_token", false);
    w.set<uint32_t>("tokenizer.ggml.eos_token_id", 151645);
  });
  CHECK(old->pooling_eos() == 151643);
  const Encoding fixed = old->encode("test");
  CHECK(fixed.ids == Ids{1944, 151643});
  CHECK(has_warning(fixed, "<|endoftext|>"));
  // Without last-token pooling nothing is appended.
  const auto plain = from_hf_folder(dir, [](gguf::Writer& w) { w.set<bool>("tokenizer.ggml.add_eos_token", false); });
  CHECK(plain->encode("test").ids == Ids{1944});
}

// llama.cpp's converter (gguf-py's SpecialVocab) writes a BERT tokenizer whose HF config calls
// [SEP] its eos token as add_eos_token=true, add_sep_token=false, eos_token_id=[SEP]
// (docs/convert.md), and llama.cpp closes a WordPiece text with [SEP] whatever add_sep_token says;
// HF: tokenizer("a man") = [101, 1037, 2158, 102].
TEST_CASE("WordPiece: llama.cpp's add_eos_token with eos = [SEP] closes a text with [SEP]", "[tokenizer]") {
  const std::string dir = real_model_path(kMiniLmDir);
  const auto llama_keys = from_hf_folder(dir, [](gguf::Writer& w) {
    w.set<bool>("tokenizer.ggml.add_eos_token", true);
    w.set<bool>("tokenizer.ggml.add_sep_token", false);
    w.set<uint32_t>("tokenizer.ggml.eos_token_id", 102);
  });
  CHECK(llama_keys->encode("a man").ids == Ids{101, 1037, 2158, 102});
  CHECK(llama_keys->encode_pair("a", "man").ids == Ids{101, 1037, 102, 2158, 102});
  // add_sep_token=false with nothing else asking for the closing token: none, as the file says.
  const auto no_close = from_hf_folder(dir, [](gguf::Writer& w) { w.set<bool>("tokenizer.ggml.add_sep_token", false); });
  CHECK(no_close->encode("a man").ids == Ids{101, 1037, 2158});
}

TEST_CASE("a text that starts with BOS / [CLS] gets a second one, with a warning", "[tokenizer]") {
  const auto g = load_vocab("gemma");
  const Encoding e = g->encode("<bos>hi");  // llama.cpp: [2, 2, ...] (and a warning)
  REQUIRE(e.size() >= 3);
  CHECK((e.ids[0] == 2 && e.ids[1] == 2 && e.ids[2] != 2));
  CHECK(has_warning(e, "<bos>"));
  EncodeOptions split;
  split.split_special = true;
  const Encoding plain = g->encode("<bos>hi", split);  // "<bos>" is text, BOS added once
  CHECK((plain.ids[0] == 2 && plain.ids[1] != 2));
  CHECK(plain.warnings.empty());
  const auto m = load_vocab("minilm");  // HF: tokenizer("[CLS] a") = [101, 101, 1037, 102]
  const Encoding c = m->encode("[CLS] a");
  CHECK(c.ids == Ids{101, 101, 1037, 102});
  CHECK(has_warning(c, "[CLS]"));
}

TEST_CASE("pair layouts", "[tokenizer]") {
  const auto g = load_vocab("gemma");  // SPM: add_bos only -> [BOS] a b, type ids 0 then 1
  const Ids a = content_ids(*g, "hi"), b = content_ids(*g, "yo");
  Ids want{2};
  want.insert(want.end(), a.begin(), a.end());
  want.insert(want.end(), b.begin(), b.end());
  const Encoding e = g->encode_pair("hi", "yo");
  CHECK(e.ids == want);
  CHECK(e.type_ids.back() == 1);
  CHECK(e.type_ids.front() == 0);
}

TEST_CASE("truncation keeps the special tokens, error mode throws", "[tokenizer]") {
  const auto t = load_vocab("minilm");
  EncodeOptions o;
  o.max_tokens = 4;
  const Encoding e = t->encode("Hello world foo bar", o);
  CHECK(e.ids == Ids{101, 7592, 2088, 102});
  CHECK(has_warning(e, "truncated"));
  o.overflow = Overflow::Error;
  CHECK_THROWS_AS(t->encode("Hello world foo bar", o), embed::Error);
  // Pairs, longest first: a has 4 tokens, b 1; 3 specials; limit 6 drops 2 from a.
  Encoding p = t->encode_pair("Hello world foo bar", "Hello");
  t->truncate(p, 6);
  CHECK(p.ids == Ids{101, 7592, 2088, 102, 7592, 102});
  CHECK(p.type_ids == Ids{0, 0, 0, 0, 1, 1});
  Encoding q = t->encode("Hello");
  CHECK_THROWS_AS(t->truncate(q, 1), embed::Error);  // 2 added specials cannot fit in 1
}

TEST_CASE("left truncation keeps the end of the text and the special tokens on both sides", "[tokenizer]") {
  const auto t = load_vocab("minilm");
  // Whole: [CLS] hello world foo bar [SEP] (bert-base-uncased vocab ids).
  const Ids whole = {101, 7592, 2088, 29379, 3347, 102};
  REQUIRE(t->encode("Hello world foo bar").ids == whole);
  EncodeOptions o;
  o.max_tokens = 4;
  o.direction = TruncationDirection::Left;
  // 6 tokens, limit 4: the 2 specials stay, the last 2 of the 4 content tokens stay.
  const Encoding e = t->encode("Hello world foo bar", o);
  CHECK(e.ids == Ids{101, 29379, 3347, 102});
  CHECK(e.special == std::vector<uint8_t>{1, 0, 0, 1});
  // Offsets still point into the input: "foo" starts at byte 12, "bar" ends at 19.
  CHECK(e.begin[1] == 12);
  CHECK(e.end[2] == 19);
  CHECK(has_warning(e, "truncated from 6 to 4"));
  // Right (the default) on the same input keeps the start.
  o.direction = TruncationDirection::Right;
  CHECK(t->encode("Hello world foo bar", o).ids == Ids{101, 7592, 2088, 102});
  // Pairs, longest first, left: a = hello world foo bar (4), b = hello (1), 3 specials; limit 6
  // drops 2 tokens from the start of a: [CLS] foo bar [SEP] hello [SEP].
  Encoding p = t->encode_pair("Hello world foo bar", "Hello");
  t->truncate(p, 6, TruncationDirection::Left);
  CHECK(p.ids == Ids{101, 29379, 3347, 102, 7592, 102});
  CHECK(p.type_ids == Ids{0, 0, 0, 0, 1, 1});
  // Limit 5 (one content token left for each text): a loses 3 from its start, b keeps its one.
  Encoding p4 = t->encode_pair("Hello world foo bar", "Hello");
  t->truncate(p4, 5, TruncationDirection::Left);
  CHECK(p4.ids == Ids{101, 3347, 102, 7592, 102});
  // Exactly the specials: no content left, the specials still there.
  Encoding only = t->encode("Hello world foo bar");
  t->truncate(only, 2, TruncationDirection::Left);
  CHECK(only.ids == Ids{101, 102});
}

TEST_CASE("invalid UTF-8: each invalid byte becomes U+FFFD, offsets stay in the input", "[tokenizer]") {
  for (const char* name : {"minilm", "qwen", "unigram", "gemma"}) {
    const auto t = load_vocab(name);
    INFO(name);
    const Encoding bad = t->encode("a\xff" "b");
    const Encoding good = t->encode("a\xEF\xBF\xBD" "b");
    CHECK(bad.ids == good.ids);
    CHECK(has_warning(bad, "UTF-8"));
    for (size_t i = 0; i < bad.size(); ++i) CHECK(bad.end[i] <= 3);
    // Random bytes never crash and keep offsets inside the input.
    std::mt19937 rng(7);
    for (int k = 0; k < 200; ++k) {
      std::string s(rng() % 40, '\0');
      for (char& c : s) c = static_cast<char>(rng() & 0xFF);
      const Encoding r = t->encode(s);
      for (size_t i = 0; i < r.size(); ++i) CHECK((r.begin[i] <= r.end[i] && r.end[i] <= s.size()));
    }
  }
}

TEST_CASE("long words: the 100-character WordPiece limit and 10,000-character words", "[tokenizer]") {
  const auto t = load_vocab("minilm");
  // HF WordPiece: a word over max_input_chars_per_word (100) is [UNK] as a whole.
  CHECK(t->encode(std::string(101, 'a')).ids == Ids{101, 100, 102});
  CHECK(t->encode(std::string(10000, 'a')).ids == Ids{101, 100, 102});
  CHECK(t->encode(std::string(100, 'a')).ids.size() > 3);
  for (const char* name : {"qwen", "unigram", "gemma"}) {
    const auto v = load_vocab(name);
    const Encoding e = v->encode(std::string(10000, 'a'));
    CHECK(e.size() > 1);
    CHECK(v->decode(content_ids(*v, std::string(10000, 'a'))).find(std::string(100, 'a')) != std::string::npos);
  }
}

TEST_CASE("offsets are ordered and inside the input for every vocabulary", "[tokenizer]") {
  const auto inputs = read_inp("corpus.inp");
  for (const char* name : {"minilm", "qwen", "unigram", "gemma"}) {
    const auto t = load_vocab(name);
    size_t bad = 0;
    for (const auto& s : inputs) {
      const Encoding e = t->encode(s);
      uint32_t last = 0;
      for (size_t i = 0; i < e.size(); ++i) {
        if (e.sequence[i] < 0) continue;
        if (e.begin[i] > e.end[i] || e.end[i] > s.size() || e.begin[i] < last) ++bad;
        last = e.begin[i];
      }
    }
    INFO(name);
    CHECK(bad == 0);
  }
}

TEST_CASE("decode gives the text back where the vocabulary is lossless", "[tokenizer]") {
  const auto q = load_vocab("qwen");
  for (const char* s : {"Hello world", "  spaces\tand\nnewlines ", "日本語 😀 🇺🇸", "x = {'a': [1, 2]}"})
    CHECK(q->decode(content_ids(*q, s)) == s);
  const auto g = load_vocab("gemma");
  for (const char* s : {"Hello world", "日本語 😀", "tabs\tand\nnewlines"}) CHECK(g->decode(content_ids(*g, s)) == s);
  const auto b = load_vocab("minilm");
  CHECK(b->decode(content_ids(*b, "Hello, World!")) == "hello , world !");
}

TEST_CASE("unsupported or broken metadata is a clear error", "[tokenizer]") {
  try {
    Tokenizer::from_gguf(tiny_gguf("rwkv", ""));
    FAIL("no error for tokenizer.ggml.model rwkv");
  } catch (const embed::Error& e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK(std::string(e.what()).find("\"rwkv\"") != std::string::npos);
    CHECK(std::string(e.what()).find("bert") != std::string::npos);
  }
  try {
    Tokenizer::from_gguf(tiny_gguf("gpt2", "mystery"));
    FAIL("no error for tokenizer.ggml.pre mystery");
  } catch (const embed::Error& e) {
    CHECK(e.kind() == ErrorKind::Unsupported);
    CHECK(std::string(e.what()).find("\"mystery\"") != std::string::npos);
    CHECK(std::string(e.what()).find("qwen2") != std::string::npos);
  }
  CHECK_THROWS_AS(Tokenizer::from_gguf(tiny_gguf("", "")), embed::Error);
  const auto no_pre = Tokenizer::from_gguf(tiny_gguf("gpt2", ""));  // llama.cpp: default + loud warning
  REQUIRE(!no_pre->load_warnings().empty());
  CHECK(no_pre->load_warnings()[0].find("tokenizer.ggml.pre") != std::string::npos);
  // A special id past the vocabulary is warned about and ignored.
  const auto t = Tokenizer::from_gguf(tiny_gguf("gpt2", "gpt-2", 99));
  CHECK(t->bos() == -1);
  REQUIRE(!t->load_warnings().empty());
  CHECK(t->load_warnings()[0].find("bos_token_id") != std::string::npos);
  gguf::Writer w;
  CHECK_THROWS_AS(import_hf_tokenizer("/nonexistent-folder", w), embed::Error);
}

// A SentencePiece vocabulary (llama.cpp semantics, no space prefix, no BOS) with a user-defined
// <x> (8) and a control <y> (9), and `flags` as tokenizer.embed.* metadata.
std::unique_ptr<Tokenizer> tiny_spm(const std::vector<std::pair<std::string, std::vector<uint32_t>>>& flags) {
  gguf::Writer w;
  w.set_string("general.architecture", "test");
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "\xE2\x96\x81" "a",
                                                "\xE2\x96\x81" "b", "<x>", "<y>"});
  w.set_array<float>("tokenizer.ggml.scores", std::vector<float>(10, 0.f));
  w.set_array<int32_t>("tokenizer.ggml.token_type", {2, 3, 3, 1, 1, 1, 1, 1, 4, 3});
  w.set<bool>("tokenizer.ggml.add_space_prefix", false);
  w.set<bool>("tokenizer.ggml.add_bos_token", false);
  for (const auto& [key, ids] : flags) w.set_array<uint32_t>("tokenizer.embed." + key, ids);
  static std::vector<std::unique_ptr<gguf::File>> keep;
  keep.push_back(std::make_unique<gguf::File>(gguf::File::from_bytes(w.to_bytes())));
  return Tokenizer::from_gguf(*keep.back());
}

TEST_CASE("added-token attributes from tokenizer.embed.* metadata (SentencePiece, by hand)", "[tokenizer]") {
  // Spaces are U+2581 (3); "▁b" (7) is one piece. Without attributes "a <x> b" is a ▁ <x> ▁b.
  CHECK(content_ids(*tiny_spm({}), "a <x> b") == Ids{4, 3, 8, 7});
  // lstrip: <x> takes the space before it; rstrip: the space after it.
  CHECK(content_ids(*tiny_spm({{"lstrip", {8}}}), "a <x> b") == Ids{4, 8, 7});
  CHECK(content_ids(*tiny_spm({{"rstrip", {8}}}), "a <x> b") == Ids{4, 3, 8, 5});
  const auto both = tiny_spm({{"lstrip", {8}}, {"rstrip", {8}}});
  const Encoding e = both->encode("a \t<x>\u3000 b");  // any Unicode white space, offsets include it
  CHECK(e.ids == Ids{4, 8, 5});
  CHECK((e.begin[1] == 1 && e.end[1] == 10));
  // single_word: only with no word character (letters, digits, marks, _) on either side.
  const auto sw = tiny_spm({{"single_word", {8}}});
  CHECK(content_ids(*sw, "a <x> b") == Ids{4, 3, 8, 7});
  CHECK(content_ids(*sw, "(<x>)").size() == 3);
  for (const char* glued : {"a<x> b", "a <x>b", "_<x>", "<x>1", "\xC3\xA9<x>"}) {
    const Ids ids = content_ids(*sw, glued);
    INFO(glued);
    CHECK(std::find(ids.begin(), ids.end(), 8) == ids.end());
  }
  // A control token is text with split_special; a user-defined one never is.
  EncodeOptions split;
  split.add_special = false;
  split.split_special = true;
  const auto plain = tiny_spm({});
  CHECK(content_ids(*plain, "<y>a") == Ids{9, 4});
  const Ids as_text = plain->encode("<y>a", split).ids;
  CHECK(std::find(as_text.begin(), as_text.end(), 9) == as_text.end());
  CHECK(plain->encode("<x>a", split).ids == Ids{8, 4});
}

TEST_CASE("tokenizer.embed.* metadata naming a token that is not an added token is an error", "[tokenizer]") {
  auto error_of = [](const std::vector<std::pair<std::string, std::vector<uint32_t>>>& flags) -> std::string {
    try {
      tiny_spm(flags);
    } catch (const embed::Error& e) {
      CHECK(e.kind() == ErrorKind::Format);
      return e.what();
    }
    return "";
  };
  CHECK_THAT(error_of({{"rstrip", {4}}}), Catch::Contains("tokenizer.embed.rstrip") && Catch::Contains("not an added token"));
  CHECK_THAT(error_of({{"normalized", {99}}}), Catch::Contains("tokenizer.embed.normalized") && Catch::Contains("outside"));
}

TEST_CASE("utf8 decoding follows the documented rule", "[tokenizer]") {
  std::string out;
  std::vector<uint32_t> src;
  CHECK_FALSE(sanitize_utf8("plain ascii and é", out, src));
  // Overlong, surrogate, > U+10FFFF and truncated sequences: one U+FFFD per byte.
  REQUIRE(sanitize_utf8("\xC0\xAF|\xED\xA0\x80|\xF4\x90\x80\x80|\xE2\x82", out, src));
  size_t n_fffd = 0;
  for (size_t i = 0; i + 2 < out.size(); ++i)
    if (out.compare(i, 3, "\xEF\xBF\xBD") == 0) ++n_fffd;
  CHECK(n_fffd == 2 + 3 + 4 + 2);
}

}  // namespace embed::tok::test
