// Streaming input of `embed`: one record at a time from plain text (one text per line), JSONL
// ({"id": ..., "text": ..., "spans": [[b, e], ...]} with selectable field names), CSV (RFC 4180,
// a header naming the columns) or TSV (a header, no quoting), so a corpus of any size is read in
// constant memory. Every record the file holds is accounted for: returned, or skipped when empty
// and asked to (counted), or an error naming its line.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "engine/request.h"

namespace embed::cli {

enum class InputFormat { Text, Jsonl, Csv, Tsv };
// "text", "jsonl", "csv", "tsv"; "" picks by the file's extension (.jsonl/.ndjson, .csv, .tsv; else text).
InputFormat input_format(const std::string& flag, const std::string& path);

struct RecordFields {
  std::string text = "text";
  std::string id = "id";
  std::string spans = "spans";
  bool id_required = false;  // --id-field was given: every record must have it
};

struct Record {
  size_t line = 0;        // 1-based line of the record's start
  size_t index = 0;       // 0-based position among the input's records (skipped ones included):
                          // the line - 1 for text and jsonl
  std::string text;
  std::string id_json;    // the id as JSON (a string or number as the input had it), "" if none
  bool has_spans = false;
  std::vector<CharSpan> spans;
};

class RecordReader {
 public:
  // path "-" reads stdin. Throws Error(Io) when the file cannot be opened.
  RecordReader(const std::string& path, InputFormat format, const RecordFields& fields, bool skip_empty);
  ~RecordReader();
  // The next record, false at the end. Throws Error(InvalidArgument) naming the line for invalid
  // UTF-8, an empty text (unless skip_empty), malformed JSON/CSV or a missing field.
  bool next(Record& r);
  const std::vector<size_t>& skipped() const { return skipped_; }  // lines of skipped empty texts
  size_t skipped_count() const { return skipped_count_; }
  uint64_t bytes_read() const { return bytes_; }
  uint64_t file_size() const { return size_; }  // 0 when unknown (stdin, pipes)
  const std::string& name() const { return name_; }

 private:
  bool read_line(std::string& line);  // without the '\n' (and a '\r' before it)
  bool next_csv(Record& r, char sep);
  void read_header(char sep);
  [[noreturn]] void bad(size_t line, const std::string& what) const;

  std::FILE* f_ = nullptr;
  bool close_ = false;
  InputFormat format_;
  RecordFields fields_;
  bool skip_empty_;
  std::string name_;
  size_t line_ = 0, records_ = 0;
  uint64_t bytes_ = 0, size_ = 0;
  std::vector<size_t> skipped_;  // the first 20
  size_t skipped_count_ = 0;
  int text_col_ = -1, id_col_ = -1;
  size_t n_cols_ = 0;
};

}  // namespace embed::cli
