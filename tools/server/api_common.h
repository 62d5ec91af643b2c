// Shared by the route files of tools/server: the call in progress (request, parsed body, the
// one reply), the error that answers a request with a status code, JSON field readers that name
// the field at fault, and the writers of rows (floats or quantized codes).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tools/server/api.h"

namespace embed::server {

using nlohmann::json;

// Answers the request with `status` and {"error", "error_type", "field"?, "index"?}.
struct ApiError {
  int status;
  std::string type;     // TEI's error_type: Validation, Tokenizer, Empty, Overloaded, Unhealthy, ...
  std::string message;
  std::string field;    // the JSON field at fault, or ""
  int64_t index = -1;   // the input at fault, or -1
};

// How a route's errors are written: TEI's {"error", "error_type", ...} with its status codes,
// Ollama's {"error"} with Ollama's (400 for what TEI answers 413 or 422, 503 for 429), or OpenAI's
// {"error": {"message", "type", "param", "code"}} with TEI's status codes (the official clients
// read the status for the exception class and error.message for its text).
enum class ErrorShape { Tei, Ollama, OpenAI };
// The shape of the errors of the route at `path`: OpenAI's on /v1/embeddings, /embeddings and
// /v1/models, Ollama's on /api/*, TEI's elsewhere.
ErrorShape error_shape_of(const std::string& path);

struct Api::Call {
  HttpRequest request;
  std::string route;  // the route's path, for metrics
  ErrorShape error_shape = ErrorShape::Tei;
  json body;
  Reply reply;        // wrapped by Api::handle: metrics, CORS, in-flight count; call once
  void answer(HttpResponse r) { reply(std::move(r)); }
  void fail(const ApiError& e);  // answers error_response(e, error_shape)
  void answer_json(const std::string& body, int status = 200) {
    HttpResponse r;
    r.status = status;
    r.body = body;
    reply(std::move(r));
  }
};

HttpResponse error_response(const ApiError& e, ErrorShape shape = ErrorShape::Tei);

// Field readers: absent and null read as "not given"; a value of another type is a 422 naming
// the field.
const json* field(const json& body, const char* name);
std::optional<bool> bool_field(const json& body, const char* name);
std::optional<int64_t> int_field(const json& body, const char* name);
std::optional<std::string> string_field(const json& body, const char* name);

// What a request's input field holds: texts, or token-id lists.
struct Inputs {
  std::vector<std::string> texts;
  std::vector<std::vector<int32_t>> ids;
  bool are_ids = false;
  size_t size() const { return are_ids ? ids.size() : texts.size(); }
};
// A string, an array of strings, an array of token ids, or an array of token-id arrays; empty
// inputs are 400, more than `max_items` 413, anything else 422, each naming field[index].
Inputs parse_inputs(const json& body, const char* name, size_t max_items, bool required = true);
// TEI's truncate (null: the server's default) and truncation_direction ("Left" / "Right").
void read_truncation(const json& body, Request& r);
// Leaves out the server's defaults for pooled rows (--precision, --template, --kv-*): for answers
// that are not those rows (per-token states, sparse and ColBERT read-outs, M3 scores).
void drop_pooled_row_defaults(Request& r);
std::vector<std::string> parse_strings(const json& body, const char* name, size_t max_items);

// "[v0,v1,...]" with the shortest text that reads back as the same float32.
void append_floats(std::string& out, const float* v, int64_t n);
// Row i of e: its floats, or a quantized row's codes as integers (int8 and binary signed, uint8
// and ubinary unsigned), the `embed` CLI's JSON.
void append_row(std::string& out, const Embeddings& e, int64_t i);
// Row i of e as base64 (OpenAI's encoding_format): little-endian float32 bytes, or a quantized
// row's code bytes.
std::string base64_row(const Embeddings& e, int64_t i);
std::string base64_bytes(const void* data, size_t n);
std::string json_string(const std::string& s);

// Ollama's model names are [namespace/]model[:tag], the tag "latest" when none is written
// (api_ollama.cpp); ollama_name_key compares them tagged and without regard to case, as Ollama does.
std::string ollama_tagged(const std::string& name);
std::string ollama_name_key(const std::string& name);
// `Authorization` header against --api-key, in time that does not depend on where they differ.
bool authorized(const std::string& header, const std::string& key);        // a quoted JSON string (invalid UTF-8 replaced)

}  // namespace embed::server
