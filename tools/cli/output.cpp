// Output formats shared by the writers: floats in the shortest form that round-trips
// (std::to_chars), the similarity matrix. Embedding rows are written by row_writer.cpp.
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

void write_npy(std::FILE* out, const float* data, int64_t rows, int64_t cols) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  // Magic (6) + version (2) + length (2) + header, padded with spaces to a multiple of 64, ending in '\n'.
  const size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header += '\n';
  std::string head = std::string("\x93NUMPY\x01\x00", 8);
  head += static_cast<char>(header.size() & 0xFF);
  head += static_cast<char>(header.size() >> 8);
  put(out, head + header);
  const size_t n = static_cast<size_t>(rows * cols);
  if (n && std::fwrite(data, sizeof(float), n, out) != n) fail(ErrorKind::Io, "cannot write the output");
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
  if (f == Format::Npy) return write_npy(out, sim.data(), n, n);
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
namespace {

// "[n]", built by appending: GCC 12 reports `"[" + std::string` as an overlapping memcpy
// (-Wrestrict false positive, GCC bug 105329).
std::string bracketed(int64_t n) {
  std::string s = "[";
  s += std::to_string(n);
  s += ']';
  return s;
}

}  // namespace

void write_similarity_table(std::FILE* out, const std::vector<float>& sim, int64_t n, const std::vector<std::string>& labels) {
  std::string s = "      ";
  char buf[64];
  for (int64_t j = 0; j < n; j++) {
    std::snprintf(buf, sizeof buf, " %6s", bracketed(j + 1).c_str());
    s += buf;
  }
  s += "\n";
  for (int64_t i = 0; i < n; i++) {
    std::snprintf(buf, sizeof buf, "%5s ", bracketed(i + 1).c_str());
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
