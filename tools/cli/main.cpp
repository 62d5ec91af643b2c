// Entry point of the `embed` command: parses flags with CLI11 and dispatches to a subcommand.
// Errors are printed as "embed: error: ..." on stderr with the exit codes of commands.h.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "engine/error.h"
#include "tools/cli/commands.h"

namespace {

int exit_code_for(const embed::Error& e) {
  switch (e.kind()) {
    case embed::ErrorKind::InvalidArgument: return embed::cli::kExitInput;
    case embed::ErrorKind::Io: return embed::cli::kExitIo;
    default: return embed::cli::kExitFailure;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"embed: text embeddings and reranking from GGUF models"};
  app.require_subcommand(1);
  embed::cli::InfoOptions info;
  CLI::App* info_cmd = app.add_subcommand("info", "Describe a GGUF file: architecture, hyperparameters, tokenizer, tensors");
  info_cmd->add_option("model", info.model, "GGUF file")->required();
  info_cmd->add_flag("--all-tensors", info.all_tensors, "List the tensors of every block");
  embed::cli::TokenizeOptions tokenize;
  CLI::App* tokenize_cmd = app.add_subcommand("tokenize", "Print the token ids of each input line (one output line per input line)");
  tokenize_cmd->add_option("model", tokenize.model, "GGUF file")->required();
  tokenize_cmd->add_option("input", tokenize.input, "Text file, one input per line (default: standard input)");
  tokenize_cmd->add_flag("--pieces", tokenize.pieces, "Print the pieces instead of the ids");
  tokenize_cmd->add_flag("--no-special", tokenize.no_special, "Leave out the special tokens the model adds (BOS/CLS/EOS/SEP)");
  tokenize_cmd->add_flag("--parse-special", tokenize.parse_special, "Recognise special-token text in the input (templates)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : embed::cli::kExitUsage;
  }
  try {
    if (info_cmd->parsed()) return embed::cli::run_info(info);
    if (tokenize_cmd->parsed()) return embed::cli::run_tokenize(tokenize);
  } catch (const embed::Error& e) {
    std::fprintf(stderr, "embed: error: %s\n", e.what());
    return exit_code_for(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "embed: error: %s\n", e.what());
    return embed::cli::kExitFailure;
  }
  return embed::cli::kExitUsage;
}
