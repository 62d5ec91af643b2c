// embed-tokenizer-bench: single-threaded tokens/s of the tokenizer of a GGUF on a text file, either
// each line as one input (short texts, like STS-B) or the whole file as one input (a long
// document). Prints one JSON line for tools/bench/tokenizer_bench.py.
//   embed-tokenizer-bench <model.gguf> <text file> lines|doc [min seconds]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: embed-tokenizer-bench <model.gguf> <text file> lines|doc [min seconds]\n");
    return 2;
  }
  const std::string mode = argv[3];
  const double min_seconds = argc > 4 ? std::atof(argv[4]) : 2.0;
  try {
    const auto f = embed::gguf::File::open(argv[1]);
    const auto tok = embed::tok::Tokenizer::from_gguf(f);
    std::ifstream in(argv[2], std::ios::binary);
    if (!in) embed::fail(embed::ErrorKind::Io, std::string(argv[2]) + ": cannot open");
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    std::vector<std::string> inputs;
    if (mode == "doc") {
      inputs.push_back(text);
    } else {
      std::istringstream ls(text);
      for (std::string line; std::getline(ls, line);) inputs.push_back(line);
    }
    using clock = std::chrono::steady_clock;
    size_t tokens = 0, reps = 0;
    tok->encode("warm-up");  // builds the Unicode class table once, outside the timing
    const auto t0 = clock::now();
    double elapsed = 0;
    while (reps < 3 || elapsed < min_seconds) {
      for (const auto& s : inputs) tokens += tok->encode(s).size();
      ++reps;
      elapsed = std::chrono::duration<double>(clock::now() - t0).count();
    }
    std::printf("{\"tokens\": %zu, \"seconds\": %.6f, \"reps\": %zu, \"tokens_per_s\": %.1f, \"bytes\": %zu}\n", tokens / reps,
                elapsed / reps, reps, tokens / elapsed, text.size());
  } catch (const embed::Error& e) {
    std::fprintf(stderr, "embed-tokenizer-bench: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
