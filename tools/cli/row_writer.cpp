// RowWriter. Each write() builds a block's text in memory and writes it with one fwrite and a
// flush, so a killed run leaves whole rows and at most one partial row at the end, which a resume
// cuts off: lines end with '\n' (jsonl, csv, raw: one line per input), npy rows have a fixed size
// after a fixed 128-byte header.
#include "tools/cli/row_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "engine/quantize.h"
#include "tools/cli/commands.h"

namespace embed::cli {
namespace {

constexpr long kNpyHeader = 128;  // bytes: room for any row count, so the header is rewritten in place

void append_values(std::string& s, const float* v, int64_t n, const char* sep) {
  for (int64_t i = 0; i < n; i++) {
    if (i) s += sep;
    s += format_float(v[i]);
  }
}

// Row r of e: its floats, or a quantized row's integers (int8 and binary signed, uint8 and
// ubinary unsigned).
void append_row_values(std::string& s, const Embeddings& e, int64_t r, const char* sep) {
  if (e.precision == Precision::Float32) return append_values(s, e.row(r), e.cols, sep);
  const uint8_t* c = e.code_row(r);
  const bool sgn = precision_signed(e.precision);
  for (int64_t i = 0; i < e.code_bytes; i++) {
    if (i) s += sep;
    s += std::to_string(sgn ? static_cast<int>(static_cast<int8_t>(c[i])) : static_cast<int>(c[i]));
  }
}

void append_vector(std::string& s, const Embeddings& e, int64_t r) {
  s += '[';
  append_row_values(s, e, r, ",");
  s += ']';
}

// npy's dtype of e's rows and the bytes of one value.
const char* npy_descr(Precision p) {
  if (p == Precision::Float32) return "<f4";
  return precision_signed(p) ? "|i1" : "|u1";
}

std::string label_json(const RowLabel& l) {
  return "\"index\":" + std::to_string(l.index) + (l.id_json.empty() ? "" : ",\"id\":" + l.id_json);
}

// An id as a CSV field: strings without their JSON quotes (CSV-quoted when needed), numbers as written.
std::string csv_field(const std::string& id_json) {
  const nlohmann::json j = nlohmann::json::parse(id_json);
  if (!j.is_string()) return id_json;
  const std::string v = j.get<std::string>();
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string q = "\"";
  for (char c : v) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

bool seekable(std::FILE* f) {
  struct stat st;
  return fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

RowWriter::RowWriter(const RowWriterOptions& o) : o_(o) {
  const bool to_stdout = o.path.empty() || o.path == "-";
  const bool npy = o.format == Format::Npy;
  if (o.resume) {
    if (to_stdout) usage_fail("--resume continues an output file: give it with --out FILE");
    if (o.format == Format::Json) usage_fail("--resume needs a format written row by row: jsonl, csv, raw or npy, not json");
    if (npy && o.shape == RowShape::Chunks) usage_fail("--resume with --late-chunking needs -f jsonl");
  }
  if (to_stdout) {
    if (npy && isatty(fileno(stdout)))
      usage_fail("refusing to write binary npy to a terminal: use --out FILE or redirect stdout");
    f_ = stdout;
  } else {
    struct stat st;
    const bool exists = stat(o.path.c_str(), &st) == 0;
    f_ = std::fopen(o.path.c_str(), o.resume && exists ? "r+b" : "wb");
    if (!f_) fail(ErrorKind::Io, o.path + ": cannot " + (o.resume && exists ? "open" : "create") + " the output file: " + std::strerror(errno));
    close_ = true;
    if (o.resume && exists) {
      if (npy) resume_npy();
      else resume_lines();
    }
  }
  if (npy && o.npy_rows < 0 && !seekable(f_))
    usage_fail("npy to a pipe needs the row count first: give the input as a file, or use --out FILE");
  if (!o.spans_path.empty()) {
    spans_ = std::fopen(o.spans_path.c_str(), "wb");
    if (!spans_) fail(ErrorKind::Io, o.spans_path + ": cannot create the spans file: " + std::strerror(errno));
  }
}

RowWriter::~RowWriter() {
  if (close_) std::fclose(f_);
  if (spans_) std::fclose(spans_);
}

void RowWriter::put(const std::string& s) {
  if (std::fwrite(s.data(), 1, s.size(), f_) != s.size() || std::fflush(f_) != 0)
    fail(ErrorKind::Io, "cannot write the output (disk full or pipe closed?)");
}

// Line formats: complete rows end with '\n'; what follows the last one is a partial row.
void RowWriter::resume_lines() {
  std::vector<char> buf(1 << 16);
  long end = 0, pos = 0, last_start = -1, line_start = 0;
  size_t lines = 0;
  for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), f_)) > 0; pos += static_cast<long>(n))
    for (size_t i = 0; i < n; i++)
      if (buf[i] == '\n') {
        lines++;
        last_start = line_start;
        line_start = pos + static_cast<long>(i) + 1;
        end = line_start;
      }
  if (std::ferror(f_)) fail(ErrorKind::Io, o_.path + ": cannot read the output to resume it");
  if (ftruncate(fileno(f_), end) != 0) fail(ErrorKind::Io, o_.path + ": cannot cut off its partial last row: " + std::strerror(errno));
  if (pos > end) std::fprintf(stderr, "embed: %s: cut off a partial last row (%ld bytes)\n", o_.path.c_str(), pos - end);
  if (lines > 0 && o_.format == Format::Jsonl) {
    std::string last(static_cast<size_t>(end - last_start), '\0');
    std::fseek(f_, last_start, SEEK_SET);
    if (std::fread(last.data(), 1, last.size(), f_) != last.size()) fail(ErrorKind::Io, o_.path + ": cannot read its last row");
    try {
      last_index_ = nlohmann::json::parse(last).at("index").get<int64_t>();
    } catch (const nlohmann::json::exception&) {
      fail(ErrorKind::InvalidArgument, o_.path + ": its last row is not an embed jsonl row (no \"index\"): not an output to resume");
    }
  }
  std::fseek(f_, end, SEEK_SET);
  resumed_ = lines;
}

void RowWriter::resume_npy() {
  char head[10];
  std::string header;
  const size_t got = std::fread(head, 1, sizeof head, f_);
  std::fseek(f_, 0, SEEK_END);
  const long size = std::ftell(f_);
  // Empty, or a header cut short: a run killed before its first row; start again.
  if (size < kNpyHeader && std::memcmp(head, "\x93NUMPY\x01\x00", std::min<size_t>(got, 8)) == 0) {
    if (ftruncate(fileno(f_), 0) != 0) fail(ErrorKind::Io, o_.path + ": cannot cut off its partial header: " + std::strerror(errno));
    std::fseek(f_, 0, SEEK_SET);
    return;
  }
  std::fseek(f_, static_cast<long>(got), SEEK_SET);
  const auto hl = static_cast<size_t>(static_cast<unsigned char>(head[8]) | static_cast<unsigned char>(head[9]) << 8);
  header.resize(hl);
  const bool read = got == sizeof head && std::memcmp(head, "\x93NUMPY\x01\x00", 8) == 0 && std::fread(header.data(), 1, hl, f_) == hl;
  for (Precision p : {Precision::Float32, Precision::Int8, Precision::Uint8})
    if (read && header.find(std::string("'descr': '") + npy_descr(p) + "'") != std::string::npos) descr_ = npy_descr(p);
  if (!read || descr_.empty() || 10 + hl != kNpyHeader)
    fail(ErrorKind::InvalidArgument,
         o_.path + ": not an npy file written by embed (float32, int8 or uint8 rows after a 128-byte header): not an output to resume");
  const size_t shape = header.find("'shape': (");
  long long rows = 0, cols = 0;
  if (shape == std::string::npos || std::sscanf(header.c_str() + shape + 10, "%lld, %lld", &rows, &cols) != 2 || cols <= 0)
    fail(ErrorKind::InvalidArgument, o_.path + ": its npy header has no shape (rows, cols): not an output to resume");
  const long item = descr_ == "<f4" ? 4 : 1;
  const long complete = (size - kNpyHeader) / (cols * item);
  const long end = kNpyHeader + complete * cols * item;
  if (ftruncate(fileno(f_), end) != 0) fail(ErrorKind::Io, o_.path + ": cannot cut off its partial last row: " + std::strerror(errno));
  if (size > end) std::fprintf(stderr, "embed: %s: cut off a partial last row (%ld bytes)\n", o_.path.c_str(), size - end);
  std::fseek(f_, end, SEEK_SET);
  rows_ = complete;
  cols_ = cols;
  resumed_ = static_cast<size_t>(complete);
}

void RowWriter::npy_header(int64_t rows, int64_t cols) {
  std::string h = "{'descr': '" + (descr_.empty() ? std::string("<f4") : descr_) + "', 'fortran_order': False, 'shape': (" + std::to_string(rows) +
                  ", " + std::to_string(cols) + "), }";
  h.append(static_cast<size_t>(kNpyHeader) - 10 - h.size() - 1, ' ');
  h += '\n';
  put(std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(h.size() & 0xFF) + static_cast<char>(h.size() >> 8) + h);
}

void RowWriter::write(const Embeddings& e, const std::vector<RowLabel>& labels) {
  const bool grouped = o_.shape != RowShape::Pooled;  // rows of input i: [row_offsets[i], row_offsets[i+1])
  EMBED_CHECK(grouped ? e.row_offsets.size() == labels.size() + 1 : static_cast<size_t>(e.rows) == labels.size(),
              "RowWriter::write: rows and labels differ");
  if (o_.format == Format::Npy) {
    const bool quantized = e.precision != Precision::Float32;
    const int64_t cols = quantized ? e.code_bytes : e.cols;  // npy values per row: floats or code bytes
    if (cols_ < 0) {
      cols_ = cols;
      descr_ = npy_descr(e.precision);
      npy_header(o_.npy_rows >= 0 ? o_.npy_rows : 0, cols_);
    }
    if (cols != cols_ || descr_ != npy_descr(e.precision))
      fail(ErrorKind::InvalidArgument, o_.path + ": the output's rows have " + std::to_string(cols_) + " values of type " + descr_ +
                                           ", this run's " + std::to_string(cols) + " of type " + npy_descr(e.precision) +
                                           " (resume with the same model, --dims and --precision)");
    const size_t n = static_cast<size_t>(e.rows * cols), item = quantized ? 1 : sizeof(float);
    const void* data = quantized ? static_cast<const void*>(e.codes.data()) : static_cast<const void*>(e.data.data());
    if (n && (std::fwrite(data, item, n, f_) != n || std::fflush(f_) != 0)) fail(ErrorKind::Io, "cannot write the output");
    if (spans_) {
      std::string s;
      for (size_t i = 0; i < labels.size(); i++)
        for (int64_t r = e.row_offsets[i]; r < e.row_offsets[i + 1]; r++)
          s += "{\"row\":" + std::to_string(rows_ + r) + "," + label_json(labels[i]) + ",\"span\":[" + std::to_string(e.spans[r].begin) +
               "," + std::to_string(e.spans[r].end) + "]}\n";
      if (std::fwrite(s.data(), 1, s.size(), spans_) != s.size() || std::fflush(spans_) != 0) fail(ErrorKind::Io, "cannot write the spans file");
    }
    rows_ += e.rows;
    return;
  }
  std::string s;
  for (size_t i = 0; i < labels.size(); i++) {
    if (o_.format == Format::Csv || o_.format == Format::Raw) {
      if (o_.format == Format::Csv && !labels[i].id_json.empty()) s += csv_field(labels[i].id_json) + ",";
      append_row_values(s, e, static_cast<int64_t>(i), o_.format == Format::Csv ? "," : " ");
      s += '\n';
      continue;
    }
    const bool json = o_.format == Format::Json;
    if (json) s += first_ ? "{\"object\":\"list\",\"data\":[" : ",";
    first_ = false;
    s += std::string("{") + (json ? "\"object\":\"embedding\"," : "") + label_json(labels[i]);
    if (o_.shape == RowShape::Pooled) {
      s += ",\"embedding\":";
      append_vector(s, e, static_cast<int64_t>(i));
    } else if (o_.shape == RowShape::PerToken) {
      s += ",\"embedding\":[";
      for (int64_t r = e.row_offsets[i]; r < e.row_offsets[i + 1]; r++) {
        if (r > e.row_offsets[i]) s += ',';
        append_vector(s, e, r);
      }
      s += ']';
    } else {
      s += ",\"chunks\":[";
      for (int64_t r = e.row_offsets[i]; r < e.row_offsets[i + 1]; r++) {
        s += std::string(r > e.row_offsets[i] ? "," : "") + "{\"span\":[" + std::to_string(e.spans[r].begin) + "," +
             std::to_string(e.spans[r].end) + "],\"embedding\":";
        append_vector(s, e, r);
        s += '}';
      }
      s += ']';
    }
    s += json ? "}" : "}\n";
  }
  put(s);
}

void RowWriter::finish(int64_t total_tokens) {
  if (o_.format == Format::Json) {
    std::string s = first_ ? "{\"object\":\"list\",\"data\":[" : "";
    s += "],\"model\":" + nlohmann::json(o_.model).dump() + ",\"usage\":{\"prompt_tokens\":" + std::to_string(total_tokens) +
         ",\"total_tokens\":" + std::to_string(total_tokens) + "}}\n";
    put(s);
  }
  if (o_.format == Format::Npy) {
    if (cols_ < 0) cols_ = 0, npy_header(0, 0);
    if (o_.npy_rows >= 0) {
      EMBED_CHECK(o_.npy_rows == rows_, "npy: the row count given first differs from the rows written");
      return;
    }
    std::fseek(f_, 0, SEEK_SET);
    npy_header(rows_, cols_);
    std::fseek(f_, 0, SEEK_END);
  }
}

}  // namespace embed::cli
