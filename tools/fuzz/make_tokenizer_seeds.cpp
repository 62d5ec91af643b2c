// Seeds for the tokenizer fuzzers: every case of the parity corpora (tests/fixtures/tokenizer/
// *.inp, cases separated by "\n__ggml_vocab_test__\n") as one file, behind a mode byte that
// cycles through the fuzzers' options (see tokenizer_fuzz.cpp).
//   tokenizer_fuzz_seeds OUT_DIR FILE.inp...
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: tokenizer_fuzz_seeds OUT_DIR FILE.inp...\n");
    return 2;
  }
  const std::filesystem::path out = argv[1];
  std::filesystem::create_directories(out);
  const std::string sep = "\n__ggml_vocab_test__\n";
  size_t n = 0;
  for (int a = 2; a < argc; ++a) {
    std::ifstream in(argv[a], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "tokenizer_fuzz_seeds: cannot read %s\n", argv[a]);
      return 1;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string data = ss.str();
    for (size_t pos = 0, hit; (hit = data.find(sep, pos)) != std::string::npos; pos = hit + sep.size(), ++n) {
      std::ofstream f(out / ("seed-" + std::to_string(n)), std::ios::binary);
      f.put(static_cast<char>(n * 37 & 0xFF));  // spread over the option bits and the tokenizer choice
      f << data.substr(pos, hit - pos);
    }
  }
  std::printf("tokenizer_fuzz_seeds: %zu seeds in %s\n", n, out.c_str());
  return 0;
}
