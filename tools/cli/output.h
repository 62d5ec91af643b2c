// The CLI's output formats (jsonl: one {"index","embedding"} object per line, json: an
// OpenAI-style list object, csv, raw: space-separated, npy: float32, or int8 / uint8 for quantized
// rows, that numpy.load reads), the float format, and the cosine-similarity matrix. Rows are
// streamed by row_writer.h.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "engine/api.h"

namespace embed::cli {

enum class Format { Jsonl, Json, Csv, Npy, Raw };
bool parse_format(const std::string& s, Format* f);

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
