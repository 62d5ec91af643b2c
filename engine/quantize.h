// Quantized output vectors: the precisions of sentence-transformers' quantize_embeddings (int8 and
// uint8 from per-dimension calibration ranges, binary and ubinary as packed sign bits), the
// calibration ranges with their file format (docs/api.md), and the row quantizer. Runs on finished
// rows (after Matryoshka truncation and normalization); knows nothing of models.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace embed {

// float32: the rows as they are. int8 / uint8: each dimension's calibrated [min, max] cut into 255
// equal steps, value = floor((x - min) / step) clipped to 0..255 (int8: minus 128). binary /
// ubinary: one bit per dimension (x > 0), eight to a byte, the first dimension in the top bit,
// the last byte padded with zeros; ubinary keeps the byte, binary stores byte - 128 as int8.
enum class Precision { Float32, Int8, Uint8, Binary, Ubinary };

const char* precision_name(Precision p);
// "float32", "int8", "uint8", "binary", "ubinary"; false for anything else.
bool parse_precision(const std::string& s, Precision* out);
// Bytes of one quantized row of `dims` values (int8/uint8: dims; binary/ubinary: ceil(dims / 8)).
int64_t code_bytes(Precision p, int64_t dims);
// int8 and binary codes are signed bytes, uint8 and ubinary unsigned.
inline bool precision_signed(Precision p) { return p == Precision::Int8 || p == Precision::Binary; }

// Per-dimension [min, max] of finished rows, for int8/uint8. Written by `embed calibrate` as JSON:
//   {"embed_quantization_ranges": 1, "model": "...", "pooling": "mean", "normalize": 2,
//    "dimensions": D, "count": N, "min": [D floats], "max": [D floats]}
// model, pooling, normalize and count record how the ranges were made; dimensions must equal the
// width of the rows they quantize.
struct QuantizationRanges {
  std::vector<float> min, max;
  std::string model, pooling;
  int normalize = 2;
  int64_t count = 0;  // rows the ranges were computed from
  int64_t dims() const { return static_cast<int64_t>(min.size()); }
};

// The ranges of `rows` rows of `dims` values (rows >= 1).
QuantizationRanges ranges_from_rows(const float* data, int64_t rows, int64_t dims);
std::string ranges_to_json(const QuantizationRanges& r);
// Throws embed::Error(Format) naming `source` and the field at fault.
QuantizationRanges ranges_from_json(const std::string& text, const std::string& source);
// Reads a ranges file; throws embed::Error(Io) when it cannot be read, Format when it is malformed.
QuantizationRanges load_ranges(const std::string& path);

// rows x dims floats -> rows x code_bytes(p, dims) bytes. `ranges` (int8/uint8 only) has `dims`
// dimensions. float32 is not a quantization: the caller keeps its floats.
void quantize_rows(const float* in, int64_t rows, int64_t dims, Precision p, const QuantizationRanges* ranges, uint8_t* out);

}  // namespace embed
