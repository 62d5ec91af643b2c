// The hand-written pre-tokenizer scanners against PCRE2 running HF's regexes verbatim, on the
// whole parity corpus (invalid UTF-8 repaired first, as the tokenizer does).
#include <catch2/catch.hpp>

#include "tests/tokenizer/fixtures.h"
#include "tests/tokenizer/pcre2_split.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/unicode.h"

namespace embed::tok::test {
namespace {

void compare(PreKind kind, const char* regex) {
  const Pcre2Splitter re(regex);
  size_t same = 0, n = 0;
  std::string report;
  std::vector<std::string> extra = {"a'Sb 'LL 'Ve", "x\r\n\r\ny", "  \n  z", "1234567 abc", "\u00a0\u00a0x", " !!\n\n"};
  auto cases = read_inp("corpus.inp");
  cases.insert(cases.end(), extra.begin(), extra.end());
  for (const auto& raw : cases) {
    std::string fixed;
    std::vector<uint32_t> src;
    const std::string& s = sanitize_utf8(raw, fixed, src) ? fixed : raw;
    std::vector<std::pair<uint32_t, uint32_t>> a, b;
    pretokenize(kind, s, a);
    re.split(s, b);
    ++n;
    if (a == b) ++same;
    else if (report.size() < 2000) {
      report += '"';
      report += printable(s);
      report += "\"\n";
    }
  }
  INFO(report);
  CHECK(same == n);
}

}  // namespace

TEST_CASE("qwen2 scanner equals PCRE2 on the corpus", "[tokenizer]") { compare(PreKind::Qwen2, kRegexQwen2); }
TEST_CASE("llama3 scanner equals PCRE2 on the corpus", "[tokenizer]") { compare(PreKind::Llama3, kRegexLlama3); }
TEST_CASE("gpt2 scanner equals PCRE2 on the corpus", "[tokenizer]") { compare(PreKind::Gpt2, kRegexGpt2); }

}  // namespace embed::tok::test
