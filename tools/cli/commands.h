// The `embed` command's subcommands: options structs and entry points. The CLI is a thin layer
// over the library; each run_* returns the process exit code (see docs/cli.md).
#pragma once

#include <string>

namespace embed::cli {

// Exit codes (documented in docs/cli.md).
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;       // the engine failed (model, device, internal)
constexpr int kExitUsage = 2;         // bad flags or arguments
constexpr int kExitInput = 3;         // bad input data (a line that cannot be embedded)
constexpr int kExitIo = 4;            // a file could not be read or written

struct InfoOptions {
  std::string model;
  bool all_tensors = false;
};
int run_info(const InfoOptions& o);

struct TokenizeOptions {
  std::string model;
  std::string input = "-";  // a text file, or "-" for standard input
  bool pieces = false;       // print pieces instead of ids
  bool no_special = false;   // leave out the special tokens the model adds
  bool parse_special = false;
};
int run_tokenize(const TokenizeOptions& o);

}  // namespace embed::cli
