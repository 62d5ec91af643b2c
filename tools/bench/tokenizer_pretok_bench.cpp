// embed-pretok-bench: the measurement behind the pre-tokenizer choice. Times the hand-written
// scanners against PCRE2 (JIT, UTF + UCP) running HF's regexes on a text file, checks that both
// split identically, and prints MB/s for each.
//   embed-pretok-bench <text file>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "tests/tokenizer/pcre2_split.h"
#include "tokenizer/pretokenize.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: embed-pretok-bench <text file>\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  using embed::tok::PreKind;
  struct Case {
    const char* name;
    PreKind kind;
    const char* regex;
  } cases[] = {{"qwen2", PreKind::Qwen2, embed::tok::test::kRegexQwen2},
               {"llama3", PreKind::Llama3, embed::tok::test::kRegexLlama3},
               {"gpt2", PreKind::Gpt2, embed::tok::test::kRegexGpt2}};
  std::printf("| pre-tokenizer | scanner MB/s | PCRE2 JIT MB/s | same splits |\n|---|---:|---:|---|\n");
  for (const Case& c : cases) {
    const embed::tok::test::Pcre2Splitter re(c.regex);
    std::vector<std::pair<uint32_t, uint32_t>> a, b;
    auto time = [&](auto fn) {
      const auto t0 = std::chrono::steady_clock::now();
      int reps = 0;
      double dt = 0;
      while (reps < 3 || dt < 1.0) {
        fn();
        ++reps;
        dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      return text.size() * reps / dt / 1e6;
    };
    const double scan = time([&] { a.clear(); embed::tok::pretokenize(c.kind, text, a); });
    const double pcre = time([&] { b.clear(); re.split(text, b); });
    std::printf("| %s | %.1f | %.1f | %s |\n", c.name, scan, pcre, a == b ? "yes" : "NO");
  }
  return 0;
}
