// Writers for the CLI's output formats: jsonl (one {"index","embedding"} object per line), json
// (an OpenAI-style list object), csv, raw (space-separated) and npy (float32, or int8 / uint8 for
// quantized rows; numpy.load reads it unchanged), plus the cosine-similarity matrix.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "engine/api.h"

namespace embed::cli {

enum class Format { Jsonl, Json, Csv, Npy, Raw };
bool parse_format(const std::string& s, Format* f);

struct OutputMeta {
  std::string model;
  std::vector<size_t> indices;  // index reported for each row (input line number - 1)
  int64_t total_tokens = 0;
};

// Pooled rows: one per input. Throws embed::Error(Io) on write failure.
void write_embeddings(std::FILE* out, Format f, const Embeddings& e, const OutputMeta& meta);
// Per-token rows (pooling none): jsonl/json only.
void write_token_embeddings(std::FILE* out, Format f, const Embeddings& e, const OutputMeta& meta);

// Cosine similarity of every pair of rows.
std::vector<float> cosine_matrix(const Embeddings& e);
void write_similarity(std::FILE* out, Format f, const std::vector<float>& sim, int64_t n, const std::vector<std::string>& labels);

// Shortest text that reads back as the same float.
std::string format_float(float v);

}  // namespace embed::cli

namespace embed::cli {
// Human-readable similarity matrix with row labels (the start of each text).
void write_similarity_table(std::FILE* out, const std::vector<float>& sim, int64_t n, const std::vector<std::string>& labels);
}  // namespace embed::cli
