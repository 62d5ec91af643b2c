// Where a model comes from, for every front end (the embed command, embed serve, the Python
// module, C++ callers): a GGUF file; a HuggingFace / sentence-transformers folder, converted by
// the converter (tools/convert) at load, in memory or once into embed's cache; or a name on the
// Hugging Face Hub (ORG/NAME, ORG/NAME:QUANT, hf://ORG/NAME@REVISION), downloaded into the
// Hugging Face cache that huggingface_hub and sentence-transformers share. The engine
// (engine/api.h) loads GGUF only and knows nothing of this layer.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "engine/api.h"

namespace embed {

struct SourceOptions {
  // An HF folder (or a Hub repository of one) is converted at every load and used from memory;
  // with cache_gguf the GGUF is written once into $EMBED_CACHE/gguf/ and mapped from there.
  bool cache_gguf = false;
  std::string convert_type = "f16";  // the conversion's weight type: f32, f16, bf16, q8_0 (embed convert --type)
  bool progress = true;              // download progress on stderr (a bar on a terminal)
};

// A Hub model name taken apart: [hf://]ORG/NAME[:QUANT][@REVISION] (the two suffixes in either order).
struct HubName {
  std::string repo;               // ORG/NAME
  std::string revision = "main";  // branch, tag or commit
  std::string quant;              // a GGUF repository's quantization tag; empty: llama.cpp's default choice
};
// nullopt when `arg` is not a Hub name; throws InvalidArgument for a malformed hf:// name.
std::optional<HubName> parse_hub_name(const std::string& arg);

struct ModelLocation {
  enum class Kind { Gguf, HfFolder };
  Kind kind = Kind::Gguf;
  std::string path;    // the GGUF file, or the HF folder (a snapshot in the Hub cache for a Hub name)
  std::string name;    // ORG/NAME for a Hub name, else the file's or folder's name (a server's model id)
  std::string commit;  // the Hub commit of a Hub name
};

// What `model` names, on disk: "default" (or "") the default model (resolve_model_path, engine/api.h);
// an existing file (GGUF) or folder (HF) is itself; otherwise a Hub
// name is looked up in the Hugging Face cache first (no request when its files are all there)
// and downloaded when missing. Throws embed::Error naming the problem and what to do.
ModelLocation locate_model(const std::string& model, const SourceOptions& o = {});

// The GGUF `model` names: mapped from disk, or an HF folder converted (in memory, or into the
// cache with cache_gguf). Throws embed::Error.
gguf::File open_model_file(const std::string& model, const SourceOptions& o = {});

// Model::load for any of the above; no exception crosses it.
Result<std::shared_ptr<const Model>> open_model(const std::string& model, const ModelOptions& mo = {}, const SourceOptions& so = {});

}  // namespace embed
