// The tokenizer.model reader (tokenizer/sentencepiece_model.h) on the EmbeddingGemma-shaped
// fixture's model, whose layout the training call in tools/refgen/tiny_tokenizers.py
// build_gemma_spm fixes (pad 0, eos 1, bos 2, unk 3, user-defined <mask>, 256 byte pieces, BPE,
// no dummy prefix), and on malformed bytes.
#include <catch2/catch.hpp>

#include <fstream>
#include <random>
#include <sstream>

#include "base/error.h"
#include "tokenizer/sentencepiece_model.h"
#include "convert_test_util.h"

using namespace embed;
using namespace embed::tok;
using namespace embed::convert::testing;

namespace {

std::string fixture_model() {
  std::ifstream in(fixtures_dir() / "embeddinggemma-tiny" / "tokenizer.model", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("tokenizer.model: pieces, scores, types and normalizer flags", "[convert][sentencepiece]") {
  const SentencePieceModel m = parse_sentencepiece_model(fixture_model(), "tokenizer.model");
  REQUIRE(m.pieces.size() == 1000);  // vocab_size=1000
  CHECK(m.model_type == 2);          // model_type="bpe"
  CHECK_FALSE(m.add_dummy_prefix);   // add_dummy_prefix=False
  CHECK_FALSE(m.remove_extra_whitespaces);
  const char* specials[] = {"<pad>", "<eos>", "<bos>", "<unk>"};
  for (int i = 0; i < 4; i++) {
    CHECK(m.pieces[i].text == specials[i]);
    CHECK(m.pieces[i].type == (i == 3 ? SentencePieceModel::Unknown : SentencePieceModel::Control));
  }
  CHECK(m.pieces[4].text == "<mask>");
  CHECK(m.pieces[4].type == SentencePieceModel::UserDefined);
  // byte_fallback=True: <0x00> .. <0xFF> follow, then the merged pieces with scores 0, -1, -2, ...
  CHECK(m.pieces[5].text == "<0x00>");
  CHECK(m.pieces[260].text == "<0xFF>");
  int bytes = 0;
  for (const auto& p : m.pieces) bytes += p.type == SentencePieceModel::Byte;
  CHECK(bytes == 256);
  CHECK(m.pieces[261].score == 0.0f);
  CHECK(m.pieces[262].score == -1.0f);
  CHECK(m.pieces[999].score == -738.0f);  // sentencepiece's GetScore(999)
}

TEST_CASE("tokenizer.model: malformed bytes are refused with the file named, never a crash", "[convert][sentencepiece]") {
  const std::string good = fixture_model();
  CHECK_THROWS_WITH(parse_sentencepiece_model("", "x.model"), Catch::Contains("x.model") && Catch::Contains("no pieces"));
  CHECK_THROWS_WITH(parse_sentencepiece_model(good.substr(0, good.size() / 2), "x.model"), Catch::Contains("x.model"));
  CHECK_THROWS_WITH(parse_sentencepiece_model(std::string("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11), "x.model"),
                    Catch::Contains("varint"));
  CHECK_THROWS_WITH(parse_sentencepiece_model(std::string("\x0b", 1), "x.model"), Catch::Contains("wire type 3"));
  std::mt19937 rng(12);
  int refused = 0, read = 0;
  for (int i = 0; i < 2000; i++) {
    std::string bad = good;
    for (int k = 0; k < 4; k++) bad[rng() % bad.size()] = static_cast<char>(rng());
    if (rng() % 2) bad.resize(rng() % bad.size());
    try {
      parse_sentencepiece_model(bad, "x.model");
      read++;
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::Format);
      refused++;
    }
  }
  CHECK(refused + read == 2000);
  CHECK(refused > 0);
}
