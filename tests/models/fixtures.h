// Reading the committed reference fixtures of tests/fixtures/models/<name>/ (format described in
// docs/reference-data.md): cases.json (texts and reference token ids) and float32 .npy arrays.
#pragma once

#include <string>
#include <vector>

namespace embed::test {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
  int64_t rows() const { return shape.empty() ? 0 : shape[0]; }
  int64_t cols() const { return shape.size() < 2 ? 1 : shape[1]; }
  const float* row(int64_t i) const { return data.data() + i * cols(); }
};

// float32, little-endian, C order; anything else fails the test with the reason.
NpyArray read_npy(const std::string& path);

struct FixtureCase {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;
};

struct Fixture {
  std::string dir;
  std::string model;
  int64_t d_model = 0;
  std::vector<FixtureCase> cases;
  bool has(const std::string& file) const;
  NpyArray npy(const std::string& file) const { return read_npy(dir + "/" + file); }
};

Fixture load_fixture(const std::string& dir);
std::vector<std::string> fixture_dirs();  // every tests/fixtures/models/* with a cases.json

double cosine(const float* a, const float* b, int64_t n);
double max_abs_diff(const float* a, const float* b, int64_t n);

}  // namespace embed::test
