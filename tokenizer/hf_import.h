// HF tokenizer.json -> tokenizer.ggml.* GGUF metadata in llama.cpp's conventions (what the HF->GGUF
// converter calls for the vocabulary part). Reads files only; knows nothing about weights.
#pragma once

#include <string>

#include "gguf/writer.h"

namespace embed::tok {

// Reads tokenizer.json (+ tokenizer_config.json, special_tokens_map.json and config.json when
// present) from `model_dir` and writes the tokenizer.ggml.* keys into `w`. Supports WordPiece
// (-> "bert"), byte-level BPE (-> "gpt2", pre "qwen2" / "llama-bpe" / "gpt-2"), SentencePiece
// BPE with byte fallback (Gemma; -> "llama", pieces and scores from the folder's
// tokenizer.model) and Unigram (-> "t5", with precompiled_charsmap). Throws embed::Error naming the file and the unsupported
// or malformed part. Returns the tokenizer kind string written.
std::string import_hf_tokenizer(const std::string& model_dir, gguf::Writer& w);

}  // namespace embed::tok
