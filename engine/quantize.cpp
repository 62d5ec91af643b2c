// Quantized output vectors: row quantizer and calibration ranges (their JSON file). The int8 /
// uint8 arithmetic is float32 throughout, step by step as sentence-transformers does it with
// numpy, so codes match quantize_embeddings bit for bit.
#include "engine/quantize.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"

namespace embed {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::Float32: return "float32";
    case Precision::Int8: return "int8";
    case Precision::Uint8: return "uint8";
    case Precision::Binary: return "binary";
    case Precision::Ubinary: return "ubinary";
  }
  return "?";
}

bool parse_precision(const std::string& s, Precision* out) {
  for (Precision p : {Precision::Float32, Precision::Int8, Precision::Uint8, Precision::Binary, Precision::Ubinary})
    if (s == precision_name(p)) {
      *out = p;
      return true;
    }
  return false;
}

int64_t code_bytes(Precision p, int64_t dims) {
  switch (p) {
    case Precision::Float32: return dims * 4;
    case Precision::Int8:
    case Precision::Uint8: return dims;
    case Precision::Binary:
    case Precision::Ubinary: return (dims + 7) / 8;
  }
  return 0;
}

QuantizationRanges ranges_from_rows(const float* data, int64_t rows, int64_t dims) {
  EMBED_CHECK(rows >= 1 && dims >= 1, "ranges_from_rows: empty input");
  QuantizationRanges r;
  r.min.assign(data, data + dims);
  r.max.assign(data, data + dims);
  for (int64_t i = 1; i < rows; i++)
    for (int64_t d = 0; d < dims; d++) {
      const float v = data[i * dims + d];
      r.min[d] = std::min(r.min[d], v);
      r.max[d] = std::max(r.max[d], v);
    }
  r.count = rows;
  return r;
}

std::string ranges_to_json(const QuantizationRanges& r) {
  nlohmann::json j;
  j["embed_quantization_ranges"] = 1;
  j["model"] = r.model;
  j["pooling"] = r.pooling;
  j["normalize"] = r.normalize;
  j["dimensions"] = r.dims();
  j["count"] = r.count;
  j["min"] = r.min;
  j["max"] = r.max;
  return j.dump() + "\n";
}

namespace {

[[noreturn]] void bad(const std::string& source, const std::string& what) {
  fail(ErrorKind::Format, source + ": not a quantization ranges file (embed calibrate): " + what);
}

std::vector<float> float_array(const nlohmann::json& j, const char* key, int64_t dims, const std::string& source) {
  if (!j.contains(key) || !j[key].is_array()) bad(source, std::string("'") + key + "' must be an array of numbers");
  const nlohmann::json& a = j[key];
  if (static_cast<int64_t>(a.size()) != dims)
    bad(source, std::string("'") + key + "' has " + std::to_string(a.size()) + " values, 'dimensions' says " + std::to_string(dims));
  std::vector<float> v;
  for (size_t i = 0; i < a.size(); i++) {
    if (!a[i].is_number()) bad(source, std::string("'") + key + "'[" + std::to_string(i) + "] is not a number");
    const double x = a[i].get<double>();
    if (!std::isfinite(x) || std::fabs(x) > std::numeric_limits<float>::max())
      bad(source, std::string("'") + key + "'[" + std::to_string(i) + "] is not a finite float");
    v.push_back(static_cast<float>(x));
  }
  return v;
}

}  // namespace

QuantizationRanges ranges_from_json(const std::string& text, const std::string& source) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    bad(source, std::string("invalid JSON: ") + e.what());
  }
  if (!j.is_object() || !j.contains("embed_quantization_ranges")) bad(source, "no 'embed_quantization_ranges' version key");
  if (j["embed_quantization_ranges"] != 1) bad(source, "version " + j["embed_quantization_ranges"].dump() + " (this build reads 1)");
  if (!j.contains("dimensions") || !j["dimensions"].is_number_integer() || j["dimensions"].get<int64_t>() < 1)
    bad(source, "'dimensions' must be a positive integer");
  const int64_t dims = j["dimensions"].get<int64_t>();
  QuantizationRanges r;
  r.min = float_array(j, "min", dims, source);
  r.max = float_array(j, "max", dims, source);
  for (int64_t d = 0; d < dims; d++)
    if (r.min[d] > r.max[d]) bad(source, "min[" + std::to_string(d) + "] is larger than max[" + std::to_string(d) + "]");
  if (j.contains("model") && j["model"].is_string()) r.model = j["model"].get<std::string>();
  if (j.contains("pooling") && j["pooling"].is_string()) r.pooling = j["pooling"].get<std::string>();
  if (j.contains("normalize") && j["normalize"].is_number_integer()) r.normalize = j["normalize"].get<int>();
  if (j.contains("count") && j["count"].is_number_integer()) r.count = j["count"].get<int64_t>();
  return r;
}

QuantizationRanges load_ranges(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorKind::Io, path + ": cannot read the quantization ranges file");
  std::stringstream s;
  s << f.rdbuf();
  return ranges_from_json(s.str(), path);
}

void quantize_rows(const float* in, int64_t rows, int64_t dims, Precision p, const QuantizationRanges* ranges, uint8_t* out) {
  EMBED_CHECK(p != Precision::Float32, "quantize_rows: float32 is not a quantization");
  const int64_t nb = code_bytes(p, dims);
  if (p == Precision::Binary || p == Precision::Ubinary) {
    for (int64_t r = 0; r < rows; r++) {
      const float* x = in + r * dims;
      uint8_t* y = out + r * nb;
      for (int64_t b = 0; b < nb; b++) {
        unsigned byte = 0;
        for (int64_t k = 0; k < 8; k++) byte = byte << 1 | (b * 8 + k < dims && x[b * 8 + k] > 0.0f ? 1u : 0u);
        // binary: byte - 128 as a signed byte, stored as its two's-complement bits.
        y[b] = static_cast<uint8_t>(p == Precision::Ubinary ? byte : (byte + 128) & 0xFF);
      }
    }
    return;
  }
  EMBED_CHECK(ranges && ranges->dims() == dims, "quantize_rows: ranges of another width");
  std::vector<float> step(static_cast<size_t>(dims));
  for (int64_t d = 0; d < dims; d++) {
    step[d] = (ranges->max[d] - ranges->min[d]) / 255.0f;
    if (step[d] == 0.0f) step[d] = 1.0f;
  }
  for (int64_t r = 0; r < rows; r++) {
    const float* x = in + r * dims;
    uint8_t* y = out + r * nb;
    for (int64_t d = 0; d < dims; d++) {
      const float q = std::floor((x[d] - ranges->min[d]) / step[d]);
      const int v = q >= 255.0f ? 255 : (q > 0.0f ? static_cast<int>(q) : 0);  // NaN lands on 0
      y[d] = static_cast<uint8_t>(p == Precision::Uint8 ? v : (v - 128) & 0xFF);
    }
  }
}

}  // namespace embed
