// Error bodies, JSON field readers and row writers of the routes.
#include "tools/server/api_common.h"

#include <cctype>
#include <charconv>
#include <limits>

namespace embed::server {

ErrorShape error_shape_of(const std::string& path) {
  if (path.rfind("/api/", 0) == 0) return ErrorShape::Ollama;
  if (path == "/v1/embeddings" || path == "/embeddings" || path == "/v1/models") return ErrorShape::OpenAI;
  return ErrorShape::Tei;
}

namespace {

// OpenAI's error type for a status: invalid_request_error for what is wrong with the request,
// authentication_error (401), not_found_error (404), rate_limit_error (429), server_error (5xx).
const char* openai_type(int status) {
  if (status == 401) return "authentication_error";
  if (status == 404) return "not_found_error";
  if (status == 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

// The code: this server's error_type in OpenAI's snake case ("NotFound" -> "not_found").
std::string snake_case(const std::string& type) {
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

}  // namespace

HttpResponse error_response(const ApiError& e, ErrorShape shape) {
  if (shape == ErrorShape::OpenAI) {
    HttpResponse r;
    r.status = e.status;
    const json error = {{"message", e.message},
                        {"type", openai_type(e.status)},
                        {"param", e.field.empty() ? json(nullptr) : json(e.field)},
                        {"code", snake_case(e.type)}};
    r.body = json{{"error", error}}.dump(-1, ' ', false, json::error_handler_t::replace);
    if (e.status == 429) r.headers.emplace_back("Retry-After", "1");
    return r;
  }
  if (shape == ErrorShape::Ollama) {
    HttpResponse r;
    r.status = e.status == 413 || e.status == 422 ? 400 : e.status == 429 ? 503 : e.status;
    r.body = json{{"error", e.message}}.dump(-1, ' ', false, json::error_handler_t::replace);
    return r;
  }
  json j = {{"error", e.message}, {"error_type", e.type}};
  if (!e.field.empty()) j["field"] = e.field;
  if (e.index >= 0) j["index"] = e.index;
  HttpResponse r;
  r.status = e.status;
  r.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (e.status == 429) r.headers.emplace_back("Retry-After", "1");
  return r;
}

void Api::Call::fail(const ApiError& e) { answer(error_response(e, error_shape)); }

const json* field(const json& body, const char* name) {
  if (!body.is_object()) return nullptr;
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

namespace {
[[noreturn]] void wrong_type(const char* name, const char* want) {
  throw ApiError{422, "Validation", std::string("field '") + name + "' must be " + want, name};
}
}  // namespace

std::optional<bool> bool_field(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong_type(name, "true or false");
  return v->get<bool>();
}

std::optional<int64_t> int_field(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_number_integer()) wrong_type(name, "an integer");
  return v->get<int64_t>();
}

std::optional<std::string> string_field(const json& body, const char* name) {
  const json* v = field(body, name);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong_type(name, "a string");
  return v->get<std::string>();
}

namespace {

void check_count(const char* name, size_t n, size_t max_items) {
  if (n == 0) throw ApiError{400, "Empty", std::string("field '") + name + "' is empty: give at least one input", name};
  if (n > max_items)
    throw ApiError{413, "Validation",
                   std::string("field '") + name + "' has " + std::to_string(n) + " inputs, more than the server's limit of " +
                       std::to_string(max_items) + " (--max-client-batch-size)",
                   name};
}

std::vector<int32_t> token_ids(const json& a, const char* name, int64_t index) {
  std::vector<int32_t> ids;
  for (const json& t : a) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int32_t>::max())
      throw ApiError{422, "Validation", std::string("field '") + name + "': token ids must be non-negative integers", name, index};
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  if (ids.empty()) throw ApiError{400, "Empty", std::string("field '") + name + "': an empty token list", name, index};
  return ids;
}

}  // namespace

Inputs parse_inputs(const json& body, const char* name, size_t max_items, bool required) {
  Inputs in;
  const json* v = field(body, name);
  if (!v) {
    if (!required) return in;
    throw ApiError{422, "Validation", std::string("missing field '") + name + "'", name};
  }
  if (v->is_string()) {
    in.texts.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    check_count(name, v->size(), std::numeric_limits<size_t>::max());
    if ((*v)[0].is_number()) {  // one token list
      in.are_ids = true;
      in.ids.push_back(token_ids(*v, name, 0));
    } else {
      in.are_ids = (*v)[0].is_array();
      for (size_t i = 0; i < v->size(); i++) {
        const json& e = (*v)[i];
        const auto at = static_cast<int64_t>(i);
        if (in.are_ids && e.is_array()) in.ids.push_back(token_ids(e, name, at));
        else if (!in.are_ids && e.is_string()) in.texts.push_back(e.get<std::string>());
        else
          throw ApiError{422, "Validation",
                         std::string("field '") + name + "': every item must be " + (in.are_ids ? "a token-id array" : "a string"), name, at};
      }
    }
  } else {
    throw ApiError{422, "Validation", std::string("field '") + name + "' must be a string, an array of strings or token ids", name};
  }
  check_count(name, in.size(), max_items);
  for (size_t i = 0; i < in.texts.size(); i++)
    if (in.texts[i].empty())
      throw ApiError{400, "Empty", std::string("field '") + name + "': input " + std::to_string(i) + " is an empty string", name,
                     static_cast<int64_t>(i)};
  return in;
}

void read_truncation(const json& body, Request& r) {
  if (auto t = bool_field(body, "truncate")) r.truncate = *t;
  if (auto d = string_field(body, "truncation_direction"))
    if (!parse_truncation_direction(*d, &r.truncation_direction))
      throw ApiError{422, "Validation", "field 'truncation_direction' must be \"Left\" or \"Right\", not \"" + *d + "\"",
                     "truncation_direction"};
}

void drop_pooled_row_defaults(Request& r) {
  r.precision = Precision::Float32;
  r.ranges = nullptr;
  r.kv_embedding = false;
  r.kv_layers.reset();
  r.kv_bias.reset();
  r.prompt_template.reset();
}

std::vector<std::string> parse_strings(const json& body, const char* name, size_t max_items) {
  const Inputs in = parse_inputs(body, name, max_items);
  if (in.are_ids) throw ApiError{422, "Validation", std::string("field '") + name + "' must hold strings", name};
  return in.texts;
}

void append_floats(std::string& out, const float* v, int64_t n) {
  char buf[32];
  out += '[';
  for (int64_t i = 0; i < n; i++) {
    if (i) out += ',';
    const auto r = std::to_chars(buf, buf + sizeof buf, v[i]);
    out.append(buf, r.ptr);
  }
  out += ']';
}

void append_row(std::string& out, const Embeddings& e, int64_t i) {
  if (e.precision == Precision::Float32) return append_floats(out, e.row(i), e.cols);
  const uint8_t* codes = e.code_row(i);
  const bool sgn = precision_signed(e.precision);
  out += '[';
  for (int64_t k = 0; k < e.code_bytes; k++) {
    if (k) out += ',';
    out += std::to_string(sgn ? static_cast<int>(static_cast<int8_t>(codes[k])) : static_cast<int>(codes[k]));
  }
  out += ']';
}

std::string base64_row(const Embeddings& e, int64_t i) {
  // x86-64 and aarch64 Linux are little-endian: a float row's bytes are OpenAI's.
  if (e.precision == Precision::Float32) return base64_bytes(e.row(i), static_cast<size_t>(e.cols) * sizeof(float));
  return base64_bytes(e.code_row(i), static_cast<size_t>(e.code_bytes));
}

std::string base64_bytes(const void* data, size_t n) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < n; i += 3) {
    const uint32_t w = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    for (int s : {18, 12, 6, 0}) out += kAlphabet[(w >> s) & 63];
  }
  if (i < n) {
    const uint32_t w = (bytes[i] << 16) | (i + 1 < n ? bytes[i + 1] << 8 : 0);
    out += kAlphabet[(w >> 18) & 63];
    out += kAlphabet[(w >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(w >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string json_string(const std::string& s) { return json(s).dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace embed::server
