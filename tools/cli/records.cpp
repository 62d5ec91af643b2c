// RecordReader: line reading with getline on a FILE (constant memory), then the record format.
#include "tools/cli/records.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "tools/cli/commands.h"
#include "tools/cli/input.h"

namespace embed::cli {
namespace {

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

InputFormat input_format(const std::string& flag, const std::string& path) {
  if (flag == "text") return InputFormat::Text;
  if (flag == "jsonl") return InputFormat::Jsonl;
  if (flag == "csv") return InputFormat::Csv;
  if (flag == "tsv") return InputFormat::Tsv;
  if (!flag.empty()) usage_fail("unknown --input-format '" + flag + "' (text, jsonl, csv, tsv)");
  if (ends_with(path, ".jsonl") || ends_with(path, ".ndjson")) return InputFormat::Jsonl;
  if (ends_with(path, ".csv")) return InputFormat::Csv;
  if (ends_with(path, ".tsv")) return InputFormat::Tsv;
  return InputFormat::Text;
}

RecordReader::RecordReader(const std::string& path, InputFormat format, const RecordFields& fields, bool skip_empty)
    : format_(format), fields_(fields), skip_empty_(skip_empty), name_(path == "-" ? "stdin" : path) {
  if (path == "-") {
    f_ = stdin;
  } else {
    f_ = std::fopen(path.c_str(), "rb");
    if (!f_) fail(ErrorKind::Io, path + ": cannot open input file: " + std::strerror(errno));
    close_ = true;
    struct stat st;
    if (fstat(fileno(f_), &st) == 0 && S_ISREG(st.st_mode)) size_ = static_cast<uint64_t>(st.st_size);
  }
  if (format_ == InputFormat::Csv) read_header(',');
  if (format_ == InputFormat::Tsv) read_header('\t');
}

RecordReader::~RecordReader() {
  if (close_) std::fclose(f_);
}

void RecordReader::bad(size_t line, const std::string& what) const {
  fail(ErrorKind::InvalidArgument, name_ + ": line " + std::to_string(line) + ": " + what);
}

bool RecordReader::read_line(std::string& line) {
  line.clear();
  char buf[65536];
  bool any = false;
  while (std::fgets(buf, sizeof buf, f_)) {
    any = true;
    const size_t n = std::strlen(buf);
    bytes_ += n;
    if (n > 0 && buf[n - 1] == '\n') {
      line.append(buf, n - 1);
      break;
    }
    line.append(buf, n);
  }
  if (std::ferror(f_)) fail(ErrorKind::Io, name_ + ": cannot read the input: " + std::strerror(errno));
  if (!any) return false;
  if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF files
  line_++;
  if (const size_t bad_at = find_invalid_utf8(line); bad_at != std::string::npos) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(line[bad_at]));
    fail(ErrorKind::InvalidArgument, name_ + ": line " + std::to_string(line_) + " is not valid UTF-8 (byte " + hex + " at column " +
                                         std::to_string(bad_at + 1) + "); convert the file to UTF-8");
  }
  return true;
}

namespace {

// One CSV/TSV record's fields; CSV fields may be quoted ("" inside quotes is a quote) and span
// lines (the reader supplies more lines through `more`).
template <class More>
std::vector<std::string> split_fields(std::string line, char sep, bool quoted, More&& more) {
  std::vector<std::string> fields(1);
  bool in_quotes = false;
  for (size_t i = 0;; i++) {
    if (i == line.size()) {
      if (!in_quotes) break;
      std::string next;
      if (!more(next)) fail(ErrorKind::InvalidArgument, "a quoted field is not closed before the end of the file");
      fields.back() += '\n';
      line = std::move(next);
      i = static_cast<size_t>(-1);
      continue;
    }
    const char c = line[i];
    if (quoted && in_quotes) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') fields.back() += '"', i++;
      else if (c == '"') in_quotes = false;
      else fields.back() += c;
    } else if (quoted && c == '"' && fields.back().empty()) {
      in_quotes = true;
    } else if (c == sep) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

}  // namespace

void RecordReader::read_header(char sep) {
  std::string line;
  if (!read_line(line)) fail(ErrorKind::InvalidArgument, name_ + ": empty input: a header line naming the columns is expected");
  const std::vector<std::string> cols = split_fields(line, sep, sep == ',', [&](std::string& l) { return read_line(l); });
  n_cols_ = cols.size();
  std::string names;
  for (size_t c = 0; c < cols.size(); c++) {
    if (cols[c] == fields_.text) text_col_ = static_cast<int>(c);
    if (cols[c] == fields_.id) id_col_ = static_cast<int>(c);
    names += (c ? ", " : "") + cols[c];
  }
  if (text_col_ < 0) bad(1, "no column named '" + fields_.text + "' (columns: " + names + "); choose one with --text-field");
  if (id_col_ < 0 && fields_.id_required) bad(1, "no column named '" + fields_.id + "' (columns: " + names + ")");
}

bool RecordReader::next_csv(Record& r, char sep) {
  std::string line;
  if (!read_line(line)) return false;
  r.line = line_;
  std::vector<std::string> f;
  try {
    f = split_fields(line, sep, sep == ',', [&](std::string& l) { return read_line(l); });
  } catch (const Error& e) {
    bad(r.line, e.what());
  }
  if (f.size() != n_cols_)
    bad(r.line, "has " + std::to_string(f.size()) + " fields, the header has " + std::to_string(n_cols_));
  r.text = std::move(f[static_cast<size_t>(text_col_)]);
  r.id_json = id_col_ >= 0 ? nlohmann::json(f[static_cast<size_t>(id_col_)]).dump() : "";
  return true;
}

bool RecordReader::next(Record& r) {
  for (;;) {
    r = Record{};
    if (format_ == InputFormat::Csv || format_ == InputFormat::Tsv) {
      if (!next_csv(r, format_ == InputFormat::Csv ? ',' : '\t')) return false;
    } else {
      std::string line;
      if (!read_line(line)) return false;
      r.line = line_;
      if (format_ == InputFormat::Text) {
        r.text = std::move(line);
      } else {
        if (line.empty() && skip_empty_) {
          records_++;
          if (skipped_.size() < 20) skipped_.push_back(r.line);
          skipped_count_++;
          continue;
        }
        nlohmann::json j;
        try {
          j = nlohmann::json::parse(line);
        } catch (const nlohmann::json::exception& e) {
          bad(r.line, std::string("not a JSON object: ") + e.what());
        }
        if (!j.is_object()) bad(r.line, "not a JSON object");
        const auto t = j.find(fields_.text);
        if (t == j.end() || !t->is_string()) bad(r.line, "no string field '" + fields_.text + "' (choose the field with --text-field)");
        r.text = t->get<std::string>();
        if (const auto id = j.find(fields_.id); id != j.end()) r.id_json = id->dump();
        else if (fields_.id_required) bad(r.line, "no field '" + fields_.id + "'");
        if (const auto sp = j.find(fields_.spans); sp != j.end()) {
          if (!sp->is_array()) bad(r.line, "'" + fields_.spans + "' must be a list of [begin, end] character offsets");
          for (const auto& s : *sp) {
            if (!s.is_array() || s.size() != 2 || !s[0].is_number_integer() || !s[1].is_number_integer())
              bad(r.line, "'" + fields_.spans + "' must be a list of [begin, end] character offsets");
            r.spans.push_back(CharSpan{s[0].get<int64_t>(), s[1].get<int64_t>()});
          }
          r.has_spans = true;
        }
      }
    }
    r.index = records_++;
    if (!r.text.empty()) return true;
    if (!skip_empty_)
      fail(ErrorKind::InvalidArgument, name_ + ": line " + std::to_string(r.line) + " is empty; every " +
                                           (format_ == InputFormat::Text ? "line" : "record") + " must hold a text (use --skip-empty to leave empty " +
                                           (format_ == InputFormat::Text ? "lines" : "ones") + " out)");
    if (skipped_.size() < 20) skipped_.push_back(r.line);
    skipped_count_++;
  }
}

}  // namespace embed::cli
