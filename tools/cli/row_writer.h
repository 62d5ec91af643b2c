// Writing `embed`'s rows as they are computed, in input order, in every format, so memory holds a
// block of rows and not the corpus: jsonl/csv/raw lines, a json list closed at the end, npy with
// its header's row count written last (or known first). --resume reopens a file a killed run left
// and continues after its last complete row, cutting off a partial one.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "engine/api.h"
#include "tools/cli/output.h"

namespace embed::cli {

// What an input's rows are labelled with.
struct RowLabel {
  size_t index = 0;     // the input's position (0-based, skipped ones included)
  std::string id_json;  // the input's id as JSON, "" for none
};

enum class RowShape {
  Pooled,    // one row per input
  PerToken,  // one row per token (pooling none): jsonl, json
  Chunks,    // one row per chunk (late chunking): jsonl, json, npy (+ a spans file)
};

struct RowWriterOptions {
  std::string path;        // "" or "-": stdout
  Format format = Format::Jsonl;
  RowShape shape = RowShape::Pooled;
  std::string model;       // json's "model"
  bool resume = false;
  std::string spans_path;  // Chunks as npy: one {"row","index","id","span"} line per chunk
  int64_t npy_rows = -1;   // npy to an output that cannot seek: the row count, known first
};

class RowWriter {
 public:
  explicit RowWriter(const RowWriterOptions& o);  // throws Error(Io / InvalidArgument)
  ~RowWriter();
  RowWriter(const RowWriter&) = delete;
  RowWriter& operator=(const RowWriter&) = delete;
  // Inputs a previous run completed (resume; 0 otherwise) and, for jsonl, the index of the last.
  size_t resumed() const { return resumed_; }
  int64_t resumed_last_index() const { return last_index_; }
  // The rows of e's inputs, labelled, appended and flushed (each write ends on a row boundary).
  void write(const Embeddings& e, const std::vector<RowLabel>& labels);
  // Closes the json list (with the token count) or writes the npy header's row count.
  void finish(int64_t total_tokens);

 private:
  void resume_lines();
  void resume_npy();
  void put(const std::string& s);
  void npy_header(int64_t rows, int64_t cols);

  RowWriterOptions o_;
  std::FILE* f_ = nullptr;
  std::FILE* spans_ = nullptr;
  bool close_ = false;
  size_t resumed_ = 0;
  int64_t last_index_ = -1;
  int64_t rows_ = 0, cols_ = -1;  // npy: rows in the file, their width (values of descr_)
  std::string descr_;             // npy: '<f4', '|i1' or '|u1' once known
  bool first_ = true;             // json: no row written yet
};

}  // namespace embed::cli
