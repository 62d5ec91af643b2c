// Texts that do not map to one sequence: windows over a text longer than max_tokens
// (LongInputs::Chunk, and late chunking's windows) and late chunking's chunks. Each window is a
// sequence; its RowParts say which of its pooled rows add to which output rows (engine/pipeline.h).
// The rules are documented in docs/long-inputs.md.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/pipeline.h"
#include "tokenizer/tokenizer.h"

namespace embed {

// What the model reads of a text under late chunking, and its chunks.
struct TextChunks {
  std::string text;  // the text as the model reads it (ChunkRule::Separator: separators removed)
  // Chunks as byte ranges of `text` (a token belongs to the range holding its first byte) and as
  // code-point spans of the caller's text. Empty for ChunkRule::Tokens, cut after tokenization.
  std::vector<std::pair<size_t, size_t>> bytes;
  std::vector<CharSpan> spans;
};

// Chunks of `text`: the given spans (validated: ordered, disjoint, non-empty, inside the text),
// else the request's rule. Throws InvalidArgument naming the span at fault.
TextChunks plan_chunks(const std::string& text, const ResolvedRequest& r, const std::vector<CharSpan>* given);

// Where the text is in the string that was encoded: bytes [begin, end), after the prompt and
// before the rest of a prompt template (whose tokens each window repeats, like the prompt's).
struct TextBytes {
  size_t begin = 0, end = 0;
};

// One input of `out` (index `input`) from its encoding (prompt + text + template suffix, with the
// model's special tokens; `text`: where the text is): its chunks' rows (late chunking, with `chunks`
// from plan_chunks) or, when it is longer than max_tokens, its windows adding to row `input`.
void add_late_chunks(const ResolvedRequest& r, size_t input, const tok::Encoding& e, TextBytes text, const TextChunks& chunks,
                     Tokenized& out);
void add_windows(const ResolvedRequest& r, size_t input, const tok::Encoding& e, TextBytes text, Tokenized& out);

// Code points of a UTF-8 string before byte `byte` (the string is valid UTF-8).
int64_t code_points_before(const std::string& s, size_t byte);

}  // namespace embed
