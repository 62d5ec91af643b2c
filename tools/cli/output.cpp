// Output formats. Floats use the shortest representation that round-trips (std::to_chars).
#include "tools/cli/output.h"

#include <charconv>
#include <cmath>

namespace embed::cli {
namespace {

void put(std::FILE* out, const std::string& s) {
  if (std::fwrite(s.data(), 1, s.size(), out) != s.size()) fail(ErrorKind::Io, "cannot write the output (disk full or pipe closed?)");
}

void append_row(std::string& s, const float* v, int64_t n, const char* sep) {
  for (int64_t i = 0; i < n; i++) {
    if (i) s += sep;
    s += format_float(v[i]);
  }
}

std::string json_escape(const std::string& in) {
  std::string s;
  for (unsigned char c : in) {
    switch (c) {
      case '"': s += "\\\""; break;
      case '\\': s += "\\\\"; break;
      case '\n': s += "\\n"; break;
      case '\r': s += "\\r"; break;
      case '\t': s += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          s += buf;
        } else {
          s += static_cast<char>(c);
        }
    }
  }
  return s;
}

// A quantized row: integers (int8 and binary signed, uint8 and ubinary unsigned).
void append_codes(std::string& s, const Embeddings& e, int64_t r, const char* sep) {
  const uint8_t* c = e.code_row(r);
  const bool sgn = precision_signed(e.precision);
  for (int64_t i = 0; i < e.code_bytes; i++) {
    if (i) s += sep;
    s += std::to_string(sgn ? static_cast<int>(static_cast<int8_t>(c[i])) : static_cast<int>(c[i]));
  }
}

void append_output_row(std::string& s, const Embeddings& e, int64_t r, const char* sep) {
  if (e.precision == Precision::Float32) append_row(s, e.row(r), e.cols, sep);
  else append_codes(s, e, r, sep);
}

// descr: '<f4', '|i1' or '|u1'; `data` holds rows * cols items of that type.
void write_npy(std::FILE* out, const char* descr, const void* data, size_t item, int64_t rows, int64_t cols) {
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  // Magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64, ending in '\n'.
  const size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header += '\n';
  std::string head = std::string("\x93NUMPY\x01\x00", 8);
  head += static_cast<char>(header.size() & 0xFF);
  head += static_cast<char>(header.size() >> 8);
  put(out, head + header);
  const size_t n = static_cast<size_t>(rows * cols);
  if (n && std::fwrite(data, item, n, out) != n) fail(ErrorKind::Io, "cannot write the output");
}

}  // namespace

bool parse_format(const std::string& s, Format* f) {
  if (s == "jsonl") *f = Format::Jsonl;
  else if (s == "json") *f = Format::Json;
  else if (s == "csv") *f = Format::Csv;
  else if (s == "npy") *f = Format::Npy;
  else if (s == "raw") *f = Format::Raw;
  else return false;
  return true;
}

std::string format_float(float v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity");
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

void write_embeddings(std::FILE* out, Format f, const Embeddings& e, const OutputMeta& meta) {
  if (f == Format::Npy) {
    if (e.precision == Precision::Float32) return write_npy(out, "<f4", e.data.data(), sizeof(float), e.rows, e.cols);
    return write_npy(out, precision_signed(e.precision) ? "|i1" : "|u1", e.codes.data(), 1, e.rows, e.code_bytes);
  }
  std::string s;
  if (f == Format::Json) s += "{\"object\":\"list\",\"data\":[";
  for (int64_t r = 0; r < e.rows; r++) {
    switch (f) {
      case Format::Jsonl:
        s += "{\"index\":" + std::to_string(meta.indices[r]) + ",\"embedding\":[";
        append_output_row(s, e, r, ",");
        s += "]}\n";
        break;
      case Format::Json:
        s += std::string(r ? "," : "") + "{\"object\":\"embedding\",\"index\":" + std::to_string(meta.indices[r]) + ",\"embedding\":[";
        append_output_row(s, e, r, ",");
        s += "]}";
        break;
      case Format::Csv: append_output_row(s, e, r, ","); s += "\n"; break;
      case Format::Raw: append_output_row(s, e, r, " "); s += "\n"; break;
      case Format::Npy: break;
    }
    if (s.size() > (1 << 20)) {
      put(out, s);
      s.clear();
    }
  }
  if (f == Format::Json)
    s += "],\"model\":\"" + json_escape(meta.model) + "\",\"usage\":{\"prompt_tokens\":" + std::to_string(meta.total_tokens) +
         ",\"total_tokens\":" + std::to_string(meta.total_tokens) + "}}\n";
  put(out, s);
}

void write_token_embeddings(std::FILE* out, Format f, const Embeddings& e, const OutputMeta& meta) {
  std::string s;
  if (f == Format::Json) s += "{\"object\":\"list\",\"data\":[";
  const size_t n_texts = e.row_offsets.size() - 1;
  for (size_t t = 0; t < n_texts; t++) {
    s += std::string(f == Format::Json && t ? "," : "") + "{" + (f == Format::Json ? "\"object\":\"embedding\"," : "") +
         "\"index\":" + std::to_string(meta.indices[t]) + ",\"embedding\":[";
    for (int64_t r = e.row_offsets[t]; r < e.row_offsets[t + 1]; r++) {
      s += r > e.row_offsets[t] ? ",[" : "[";
      append_output_row(s, e, r, ",");
      s += "]";
    }
    s += f == Format::Json ? "]}" : "]}\n";
    if (s.size() > (1 << 20)) {
      put(out, s);
      s.clear();
    }
  }
  if (f == Format::Json) s += "],\"model\":\"" + json_escape(meta.model) + "\"}\n";
  put(out, s);
}

std::vector<float> cosine_matrix(const Embeddings& e) {
  const int64_t n = e.rows;
  std::vector<double> norm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) {
    double s = 0;
    for (int64_t k = 0; k < e.cols; k++) s += static_cast<double>(e.row(i)[k]) * e.row(i)[k];
    norm[i] = std::sqrt(s);
  }
  std::vector<float> sim(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++) {
      double dot = 0;
      for (int64_t k = 0; k < e.cols; k++) dot += static_cast<double>(e.row(i)[k]) * e.row(j)[k];
      sim[i * n + j] = norm[i] > 0 && norm[j] > 0 ? static_cast<float>(dot / (norm[i] * norm[j])) : 0.0f;
    }
  return sim;
}

void write_similarity(std::FILE* out, Format f, const std::vector<float>& sim, int64_t n, const std::vector<std::string>& labels) {
  if (f == Format::Npy) return write_npy(out, "<f4", sim.data(), sizeof(float), n, n);
  std::string s;
  if (f == Format::Json || f == Format::Jsonl) {
    s += "{\"similarity\":[";
    for (int64_t i = 0; i < n; i++) {
      s += i ? ",[" : "[";
      append_row(s, sim.data() + i * n, n, ",");
      s += "]";
    }
    s += "]}\n";
    return put(out, s);
  }
  if (f == Format::Csv || f == Format::Raw) {
    for (int64_t i = 0; i < n; i++) {
      append_row(s, sim.data() + i * n, n, f == Format::Csv ? "," : " ");
      s += "\n";
    }
    return put(out, s);
  }
}

}  // namespace embed::cli

namespace embed::cli {

void write_similarity_table(std::FILE* out, const std::vector<float>& sim, int64_t n, const std::vector<std::string>& labels) {
  std::string s = "      ";
  char buf[64];
  for (int64_t j = 0; j < n; j++) {
    std::snprintf(buf, sizeof buf, " %6s", ("[" + std::to_string(j + 1) + "]").c_str());
    s += buf;
  }
  s += "\n";
  for (int64_t i = 0; i < n; i++) {
    std::snprintf(buf, sizeof buf, "%5s ", ("[" + std::to_string(i + 1) + "]").c_str());
    s += buf;
    for (int64_t j = 0; j < n; j++) {
      std::snprintf(buf, sizeof buf, " %6.3f", sim[i * n + j]);
      s += buf;
    }
    std::string label = i < static_cast<int64_t>(labels.size()) ? labels[i] : "";
    if (label.size() > 60) {
      size_t cut = 57;
      while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0) == 0x80) cut--;  // keep UTF-8 whole
      label = label.substr(0, cut) + "...";
    }
    s += "   " + label + "\n";
  }
  put(out, s);
}

}  // namespace embed::cli
