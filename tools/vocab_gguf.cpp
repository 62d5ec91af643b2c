// embed-vocab-gguf: writes a vocabulary-only GGUF (tokenizer.ggml.* metadata, no tensors) from an
// HF tokenizer folder, for tokenizer tests and for checking llama.cpp reads our conventions.
//   embed-vocab-gguf <hf-folder> <out.gguf> [--arch NAME] [--pooling N] [--pre NAME]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/error.h"
#include "gguf/writer.h"
#include "tokenizer/hf_import.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: embed-vocab-gguf <hf-folder> <out.gguf> [--arch NAME] [--pooling N] [--pre NAME]\n");
    return 2;
  }
  std::string arch = "vocab-only", pre;
  int pooling = -1;
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--arch") arch = argv[i + 1];
    else if (flag == "--pooling") pooling = std::atoi(argv[i + 1]);
    else if (flag == "--pre") pre = argv[i + 1];
    else {
      std::fprintf(stderr, "embed-vocab-gguf: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  try {
    embed::gguf::Writer w;
    w.set_string("general.architecture", arch);
    w.set_string("general.name", arch + " vocabulary");
    const std::string kind = embed::tok::import_hf_tokenizer(argv[1], w);
    if (!pre.empty()) w.set_string("tokenizer.ggml.pre", pre);
    if (pooling >= 0) w.set<uint32_t>(arch + ".pooling_type", static_cast<uint32_t>(pooling));
    w.write_file(argv[2]);
    std::fprintf(stderr, "embed-vocab-gguf: wrote %s (%s)\n", argv[2], kind.c_str());
  } catch (const embed::Error& e) {
    std::fprintf(stderr, "embed-vocab-gguf: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
