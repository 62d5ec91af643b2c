// Fixture reading: a minimal .npy parser (the subset numpy.save writes for float32 arrays).
#include "tests/models/fixtures.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace embed::test {

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  INFO("reading " << path);
  REQUIRE(in.good());
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(bytes.size() >= 10);
  REQUIRE(bytes.compare(0, 6, "\x93NUMPY") == 0);
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, start;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    start = 10;
  } else {
    uint32_t hl;
    std::memcpy(&hl, bytes.data() + 8, 4);
    header_len = hl;
    start = 12;
  }
  const std::string header = bytes.substr(start, header_len);
  REQUIRE(header.find("'descr': '<f4'") != std::string::npos);
  REQUIRE(header.find("'fortran_order': False") != std::string::npos);
  NpyArray a;
  const size_t lp = header.find('(', header.find("'shape'")), rp = header.find(')', lp);
  std::stringstream ss(header.substr(lp + 1, rp - lp - 1));
  std::string item;
  int64_t n = 1;
  while (std::getline(ss, item, ','))
    if (item.find_first_not_of(' ') != std::string::npos) {
      a.shape.push_back(std::stoll(item));
      n *= a.shape.back();
    }
  REQUIRE(bytes.size() - start - header_len == static_cast<size_t>(n) * 4);
  a.data.resize(static_cast<size_t>(n));
  std::memcpy(a.data.data(), bytes.data() + start + header_len, static_cast<size_t>(n) * 4);
  return a;
}

bool Fixture::has(const std::string& file) const { return std::filesystem::exists(dir + "/" + file); }

Fixture load_fixture(const std::string& dir) {
  std::ifstream in(dir + "/cases.json");
  INFO("reading " << dir << "/cases.json");
  REQUIRE(in.good());
  const nlohmann::json j = nlohmann::json::parse(in);
  Fixture f;
  f.dir = dir;
  f.model = j.value("model", "");
  f.d_model = j.value("d_model", 0);
  for (const auto& c : j.at("cases")) {
    FixtureCase fc;
    fc.text = c.value("text", "");
    fc.ids = c.at("ids").get<std::vector<int32_t>>();
    if (c.contains("type_ids")) fc.type_ids = c.at("type_ids").get<std::vector<int32_t>>();
    f.cases.push_back(std::move(fc));
  }
  return f;
}

std::vector<std::string> fixture_dirs() {
  std::vector<std::string> out;
  const std::string root = std::string(EMBED_FIXTURES_DIR) + "/models";
  if (!std::filesystem::exists(root)) return out;
  for (const auto& e : std::filesystem::directory_iterator(root))
    if (std::filesystem::exists(e.path() / "cases.json")) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

double cosine(const float* a, const float* b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; i++) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : (aa == bb ? 1.0 : 0.0);
}

double max_abs_diff(const float* a, const float* b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; i++) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}

}  // namespace embed::test
