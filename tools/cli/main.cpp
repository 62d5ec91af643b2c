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
  embed::cli::ConvertOptions convert;
  CLI::App* convert_cmd = app.add_subcommand("convert", "Convert a HuggingFace / sentence-transformers folder to GGUF");
  convert_cmd->add_option("model_dir", convert.model_dir, "Folder with config.json, tokenizer.json, model.safetensors")->required();
  convert_cmd->add_option("output", convert.out_path, "GGUF file to write")->required();
  convert_cmd->add_option("--type", convert.type, "Weight type: f32, f16, bf16 or q8_0 (norms and biases stay f32)")
      ->capture_default_str();
  convert_cmd->add_option("--name", convert.name, "general.name (default: the folder's name)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : embed::cli::kExitUsage;
  }
  try {
    if (info_cmd->parsed()) return embed::cli::run_info(info);
    if (convert_cmd->parsed()) return embed::cli::run_convert(convert);
  } catch (const embed::Error& e) {
    std::fprintf(stderr, "embed: error: %s\n", e.what());
    return exit_code_for(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "embed: error: %s\n", e.what());
    return embed::cli::kExitFailure;
  }
  return embed::cli::kExitUsage;
}
