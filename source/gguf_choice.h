// Which GGUF file of a repository `ORG/NAME:QUANT` names, as llama.cpp's `-hf` chooses it
// (common/download.cpp find_best_model): among the *.gguf files that are not projectors, imatrix
// or draft models (of a split file, only its first part), the first whose path shows QUANT
// followed by '.' or '-' (any case); without QUANT, Q4_K_M, then Q8_0, then the first. Paths are
// taken in sorted order, and a whole-word match comes first: llama.cpp's search would take
// "model-BF16.gguf" for F16 when it is listed before "model-F16.gguf".
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace embed::source {

// The model files among `paths` (sorted): *.gguf without mmproj, imatrix, mtp-, eagle3-, dflash-, dspark-.
std::vector<std::string> gguf_candidates(const std::vector<std::string>& paths);
// The file `tag` names among `candidates` (empty tag: the default order), or nullopt.
std::optional<std::string> choose_gguf(const std::vector<std::string>& candidates, const std::string& tag);
// The quantization tag a file name shows ("model-Q4_K_M.gguf" -> "Q4_K_M"), for messages.
std::string gguf_tag_of(const std::string& path);
// Not the second or a later part of a split GGUF (those are never chosen or offered).
bool is_first_or_only_part(const std::string& path);
// A part of a split GGUF ("-00001-of-00003.gguf"): the engine reads single files only.
bool is_split_gguf(const std::string& path);

}  // namespace embed::source
