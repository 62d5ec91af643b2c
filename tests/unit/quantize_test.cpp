// Quantized output vectors (engine/quantize.h): codes equal sentence-transformers'
// quantize_embeddings on the committed reference (tools/refgen/make_quantization.py), ranges
// computed from rows equal numpy's min/max, and the ranges file read back or refused by field.
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "engine/quantize.h"

using namespace embed;

namespace {

nlohmann::json reference() {
  std::ifstream f(std::string(EMBED_FIXTURES_DIR) + "/quantization/reference.json");
  REQUIRE(f.good());
  return nlohmann::json::parse(f);
}

std::vector<float> flat(const nlohmann::json& rows) {
  std::vector<float> v;
  for (const auto& r : rows)
    for (const auto& x : r) v.push_back(x.get<float>());
  return v;
}

std::string format_error(const std::string& text) {
  try {
    ranges_from_json(text, "r.json");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Format);
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("quantized rows equal sentence-transformers' quantize_embeddings", "[unit][quantize]") {
  const nlohmann::json ref = reference();
  const int64_t dims = ref["dims"];
  const std::vector<float> rows = flat(ref["rows"]);
  const int64_t n = static_cast<int64_t>(rows.size()) / dims;
  QuantizationRanges ranges;
  ranges.min = ref["min"].get<std::vector<float>>();
  ranges.max = ref["max"].get<std::vector<float>>();
  for (Precision p : {Precision::Int8, Precision::Uint8, Precision::Binary, Precision::Ubinary}) {
    INFO(precision_name(p));
    const nlohmann::json& want = ref["codes"][precision_name(p)];
    const int64_t nb = code_bytes(p, dims);
    REQUIRE(static_cast<int64_t>(want[0].size()) == nb);
    std::vector<uint8_t> got(static_cast<size_t>(n * nb));
    quantize_rows(rows.data(), n, dims, p, &ranges, got.data());
    for (int64_t r = 0; r < n; r++)
      for (int64_t b = 0; b < nb; b++) {
        const int value = precision_signed(p) ? static_cast<int8_t>(got[r * nb + b]) : got[r * nb + b];
        INFO("row " << r << " byte " << b);
        REQUIRE(value == want[r][b].get<int>());
      }
  }
  CHECK(code_bytes(Precision::Binary, 21) == 3);
  CHECK(code_bytes(Precision::Ubinary, 16) == 2);
  CHECK(code_bytes(Precision::Int8, 21) == 21);
}

TEST_CASE("calibration ranges: numpy's min and max, and the file read back", "[unit][quantize]") {
  const nlohmann::json ref = reference();
  const int64_t dims = ref["dims"];
  const std::vector<float> cal = flat(ref["calibration"]);
  QuantizationRanges r = ranges_from_rows(cal.data(), static_cast<int64_t>(cal.size()) / dims, dims);
  CHECK(r.min == ref["min"].get<std::vector<float>>());
  CHECK(r.max == ref["max"].get<std::vector<float>>());
  CHECK(r.count == 40);
  r.model = "m.gguf";
  r.pooling = "mean";
  const QuantizationRanges back = ranges_from_json(ranges_to_json(r), "r.json");
  CHECK(back.min == r.min);
  CHECK(back.max == r.max);
  CHECK(back.model == "m.gguf");
  CHECK(back.pooling == "mean");
  CHECK(back.count == 40);
  CHECK(back.normalize == 2);
  Precision p;
  CHECK(parse_precision("ubinary", &p));
  CHECK(p == Precision::Ubinary);
  CHECK_FALSE(parse_precision("int4", &p));
}

TEST_CASE("a malformed ranges file is refused with the field named", "[unit][quantize]") {
  CHECK_THAT(format_error("{"), Catch::StartsWith("r.json: not a quantization ranges file") && Catch::Contains("invalid JSON"));
  CHECK_THAT(format_error("{}"), Catch::Contains("no 'embed_quantization_ranges'"));
  CHECK_THAT(format_error(R"({"embed_quantization_ranges":2,"dimensions":1,"min":[0],"max":[1]})"), Catch::Contains("version 2"));
  CHECK_THAT(format_error(R"({"embed_quantization_ranges":1,"dimensions":0,"min":[],"max":[]})"),
             Catch::Contains("'dimensions' must be a positive integer"));
  CHECK_THAT(format_error(R"({"embed_quantization_ranges":1,"dimensions":2,"min":[0],"max":[1,2]})"),
             Catch::Contains("'min' has 1 values, 'dimensions' says 2"));
  CHECK_THAT(format_error(R"({"embed_quantization_ranges":1,"dimensions":1,"min":["a"],"max":[1]})"),
             Catch::Contains("'min'[0] is not a number"));
  CHECK_THAT(format_error(R"({"embed_quantization_ranges":1,"dimensions":1,"min":[1e300],"max":[1e301]})"),
             Catch::Contains("'min'[0] is not a finite float"));
  CHECK_THAT(format_error(R"({"embed_quantization_ranges":1,"dimensions":2,"min":[0,3],"max":[1,2]})"),
             Catch::Contains("min[1] is larger than max[1]"));
  CHECK(format_error(R"({"embed_quantization_ranges":1,"dimensions":1,"min":[0],"max":[1]})") == "(accepted)");
  try {
    load_ranges("/nonexistent/ranges.json");
    FAIL("accepted a missing file");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::Io);
    CHECK_THAT(std::string(e.what()), Catch::StartsWith("/nonexistent/ranges.json: cannot read"));
  }
}
