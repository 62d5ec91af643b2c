// Helpers of the server tests: the committed tiny models and texts, the `embed` CLI's output for
// the same inputs (the reference every answer is checked against), base64 decoding, and
// posting JSON through cpp-httplib's client with the status and error body checked.
#pragma once

#include <cctype>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/server/server_process.h"

namespace embed::test {

using nlohmann::json;

inline const std::string kFixtures = EMBED_FIXTURES_DIR;
inline const std::string kBert = kFixtures + "/models/tiny-bert-rank/model.gguf";      // mean pooling + rank head
inline const std::string kQwen = kFixtures + "/models/tiny-qwen3-embed/model.gguf";    // embeddings only
inline const std::string kRerank = kFixtures + "/models/tiny-qwen3-rerank/model.gguf";  // reranker only

inline const std::vector<std::string> kTexts = {"A man is playing a guitar.", "Someone plays the guitar!", "The stock market fell 3% today.",
                                                "Ünïcödé and emoji 🎸 too", "short", "a b c d e f g h i j k l m n o p q r s t u v w x y z"};

inline std::string tmp_path(const std::string& name) { return "/tmp/embed_server_test_" + std::to_string(::getpid()) + "_" + name; }

// The CLI's stdout for `args` with `lines` on stdin.
inline std::string cli(const std::string& args, const std::vector<std::string>& lines, const std::string& after = " -t 2") {
  const std::string in = tmp_path("in.txt"), out = tmp_path("out.txt");
  {
    std::ofstream f(in, std::ios::binary);
    for (const std::string& l : lines) f << l << "\n";
  }
  const int rc = std::system((std::string(EMBED_BIN) + " " + args + " " + in + after + " >" + out + " 2>/dev/null").c_str());
  REQUIRE(rc == 0);
  return slurp(out);
}

// One float32 row per jsonl line ({"index", "embedding"}); per-token output gives a row per token.
inline std::vector<std::vector<float>> cli_rows(const std::string& model, const std::string& flags, const std::vector<std::string>& lines) {
  std::vector<std::vector<float>> rows;
  std::istringstream in(cli(model + " " + flags + " -f jsonl", lines));
  std::string line;
  while (std::getline(in, line)) {
    const json e = json::parse(line).at("embedding");
    if (!e.empty() && e[0].is_array())
      for (const json& t : e) rows.push_back(t.get<std::vector<float>>());
    else rows.push_back(e.get<std::vector<float>>());
  }
  return rows;
}

// The CLI's "embedding" of each jsonl line, as JSON (floats, or a quantized row's integers).
inline std::vector<json> cli_json(const std::string& model, const std::string& flags, const std::vector<std::string>& lines) {
  std::vector<json> rows;
  std::istringstream in(cli(model + " " + flags + " -f jsonl", lines));
  for (std::string line; std::getline(in, line);) rows.push_back(json::parse(line).at("embedding"));
  return rows;
}

inline std::vector<float> floats(const json& a) { return a.get<std::vector<float>>(); }

inline std::string base64_decode(const std::string& s) {
  std::string bytes;
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : s) {
    if (ch == '=') break;
    const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    acc = (acc << 6) | static_cast<uint32_t>(std::strchr(table, ch) - table);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return bytes;
}

inline std::vector<float> from_base64(const std::string& s) {
  const std::string bytes = base64_decode(s);
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

inline json post(httplib::Client& c, const std::string& path, const json& body, int want_status = 200) {
  auto r = c.Post(path.c_str(), body.dump(), "application/json");
  REQUIRE(r);
  INFO(path << " " << body.dump().substr(0, 200) << " -> " << r->status << " " << r->body.substr(0, 300));
  REQUIRE(r->status == want_status);
  return r->body.empty() ? json() : json::parse(r->body);
}

// OpenAI's code for this server's error_type: snake case ("NotFound" -> "not_found").
inline std::string openai_code(const std::string& type) {
  std::string out;
  for (char ch : type) {
    if (std::isupper(static_cast<unsigned char>(ch))) {
      if (!out.empty()) out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    } else {
      out += ch;
    }
  }
  return out;
}

// The error body of a refused request, checked: status, error_type, and the field named. OpenAI's
// routes (/v1/embeddings, /embeddings) answer {"error": {"message", "type", "param", "code"}}: their
// four members are checked (param the field or null, code the error_type in snake case; the shape
// has no index), and the body comes back as {"error": message, "error_type", "field"?} like the
// other routes', so callers read both alike.
inline json expect_error(httplib::Client& c, const std::string& path, const std::string& body, int status, const std::string& type,
                         const std::string& field = "", int64_t index = -1) {
  auto r = c.Post(path.c_str(), body, "application/json");
  REQUIRE(r);
  INFO(path << " " << body.substr(0, 120) << " -> " << r->status << " " << r->body);
  CHECK(r->status == status);
  const json j = json::parse(r->body);
  if (path == "/v1/embeddings" || path == "/embeddings") {
    const json& e = j.at("error");
    REQUIRE(e.is_object());
    CHECK(j.size() == 1);
    CHECK(e.size() == 4);
    CHECK(e.at("message").is_string());
    CHECK(e.at("type") == (status == 401   ? "authentication_error"
                           : status == 404 ? "not_found_error"
                           : status == 429 ? "rate_limit_error"
                           : status >= 500 ? "server_error"
                                           : "invalid_request_error"));
    CHECK(e.at("code") == openai_code(type));
    if (!field.empty()) CHECK(e.at("param") == field);
    json out = {{"error", e.at("message")}, {"error_type", type}};
    if (!e.at("param").is_null()) out["field"] = e.at("param");
    return out;
  }
  CHECK(j.at("error").is_string());
  CHECK(j.at("error_type") == type);
  if (!field.empty()) CHECK(j.at("field") == field);
  if (index >= 0) CHECK(j.at("index") == index);
  return j;
}

}  // namespace embed::test
