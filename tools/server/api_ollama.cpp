// Ollama's API (docs/server.md "Ollama"): POST /api/embed and the older POST /api/embeddings map
// their fields onto the one embed::Request and go through Api::compute like every other route;
// GET /api/tags, POST /api/show, GET /api/ps and GET /api/version describe the served model in
// Ollama's shapes, from its GGUF. Errors on these routes answer Ollama's {"error": "..."} body
// (error_response with ErrorShape::Ollama).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>

#include "gguf/file.h"
#include "gguf/types.h"
#include "source/sha256.h"
#include "tools/server/api_common.h"

namespace embed::server {

// What /api/tags, /api/show and /api/ps say of the served model: read from its GGUF once, on
// first use (the digest hashes the whole file).
struct OllamaFacts {
  json details;               // Ollama's ModelDetails
  json model_info_short;      // GGUF metadata, arrays as [] (Ollama's show without verbose)
  json model_info_verbose;    // GGUF metadata, arrays whole
  json tensors;               // [{name, type, shape}]
  std::string digest;         // sha256 of the GGUF bytes
  uint64_t size = 0;          // GGUF bytes
  std::string modified_at;    // RFC 3339, UTC: the file's (or folder's) modification time
  std::string license;        // general.license, or ""
};

namespace {

using Clock = std::chrono::steady_clock;

std::string rfc3339(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Ollama's parameter_size: "137M", "3.2B" (one decimal above a billion, none below).
std::string parameter_size(uint64_t n) {
  char buf[32];
  if (n >= 1000000000) std::snprintf(buf, sizeof buf, "%.1fB", static_cast<double>(n) / 1e9);
  else if (n >= 1000000) std::snprintf(buf, sizeof buf, "%.0fM", static_cast<double>(n) / 1e6);
  else if (n >= 1000) std::snprintf(buf, sizeof buf, "%.0fK", static_cast<double>(n) / 1e3);
  else std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
  std::string s = buf;
  const size_t dot = s.find(".0");
  if (dot != std::string::npos && dot + 3 == s.size()) s.erase(dot, 2);  // "3.0B" -> "3B"
  return s;
}

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // array data need not be aligned
  return v;
}

// Element i of a numeric GGUF array.
json array_element(const gguf::ArrayValue& a, uint64_t i) {
  switch (a.elem_type) {
    case gguf::ValueType::U8: return load<uint8_t>(a.data + i);
    case gguf::ValueType::I8: return load<int8_t>(a.data + i);
    case gguf::ValueType::U16: return load<uint16_t>(a.data + 2 * i);
    case gguf::ValueType::I16: return load<int16_t>(a.data + 2 * i);
    case gguf::ValueType::U32: return load<uint32_t>(a.data + 4 * i);
    case gguf::ValueType::I32: return load<int32_t>(a.data + 4 * i);
    case gguf::ValueType::F32: return load<float>(a.data + 4 * i);
    case gguf::ValueType::BOOL: return load<uint8_t>(a.data + i) != 0;
    case gguf::ValueType::U64: return load<uint64_t>(a.data + 8 * i);
    case gguf::ValueType::I64: return load<int64_t>(a.data + 8 * i);
    case gguf::ValueType::F64: return load<double>(a.data + 8 * i);
    default: return nullptr;  // nested arrays: not in any model this engine runs
  }
}

// A metadata value as Ollama's model_info shows it; arrays empty unless `arrays` (verbose).
json meta_json(const gguf::MetaValue& m, bool arrays) {
  return std::visit(
      [&](const auto& v) -> json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string_view>) {
          return std::string(v);
        } else if constexpr (std::is_same_v<T, gguf::ArrayValue>) {
          json a = json::array();
          if (!arrays) return a;
          if (v.elem_type == gguf::ValueType::STRING)
            for (std::string_view s : v.strings) a.push_back(std::string(s));
          else
            for (uint64_t i = 0; i < v.count; i++) a.push_back(array_element(v, i));
          return a;
        } else {
          return v;
        }
      },
      m.v);
}

std::shared_ptr<const OllamaFacts> read_facts(const Model& model) {
  const gguf::File& f = model.gguf_file();
  const ModelDescription& d = model.describe();
  auto facts = std::make_shared<OllamaFacts>();
  facts->size = f.size();
  // Read from the file (through the page cache) rather than through the model's mapping, whose
  // pages would then count in the server's resident memory (--max-memory); a model converted in
  // memory (an HF folder) is hashed where it is.
  std::error_code ec;
  if (std::filesystem::is_regular_file(d.path, ec) && std::filesystem::file_size(d.path, ec) == f.size() && !ec) {
    facts->digest = source::sha256_file(d.path);
  } else {
    source::Sha256 h;
    h.update(f.base(), f.size());
    facts->digest = h.hex();
  }
  const auto mtime = std::filesystem::last_write_time(d.path, ec);
  const auto when = ec ? std::chrono::system_clock::now()
                       : std::chrono::time_point_cast<std::chrono::system_clock::duration>(
                             mtime - std::filesystem::file_time_type::clock::now() + std::chrono::system_clock::now());
  facts->modified_at = rfc3339(std::chrono::system_clock::to_time_t(when));
  facts->model_info_short = json::object();
  facts->model_info_verbose = json::object();
  for (const gguf::KeyValue& kv : f.metadata()) {
    facts->model_info_short[kv.key] = meta_json(kv.value, false);
    facts->model_info_verbose[kv.key] = meta_json(kv.value, true);
  }
  facts->license = f.get_or<std::string>("general.license", "");
  // Parameters and the quantization: the tensor type holding the most bytes ("F16", "Q8_0").
  uint64_t params = 0;
  std::map<gguf::TensorType, uint64_t> bytes_by_type;
  facts->tensors = json::array();
  for (const gguf::TensorInfo& t : f.tensors()) {
    params += static_cast<uint64_t>(t.n_elements());
    bytes_by_type[t.type] += t.nbytes;
    json shape = json::array();
    for (uint32_t i = 0; i < t.n_dims; i++) shape.push_back(t.ne[i]);
    facts->tensors.push_back({{"name", t.name}, {"type", gguf::type_name(t.type)}, {"shape", shape}});
  }
  std::string quant;
  uint64_t most = 0;
  for (const auto& [type, n] : bytes_by_type)
    if (n > most) most = n, quant = gguf::type_name(type);
  std::transform(quant.begin(), quant.end(), quant.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  facts->details = {{"parent_model", ""},          {"format", "gguf"},
                    {"family", d.arch},            {"families", json::array({d.arch})},
                    {"parameter_size", parameter_size(params)}, {"quantization_level", quant}};
  return facts;
}

[[noreturn]] void bad(const std::string& message) { throw ApiError{400, "Validation", message, "", -1}; }

// keep_alive: a Go duration string ("5m", "1h30m", "-1s", "0") or a number of seconds. Accepted
// and checked: models stay loaded while the server runs (docs/server.md).
void check_keep_alive(const json& body) {
  const json* v = field(body, "keep_alive");
  if (!v || v->is_number()) return;
  if (!v->is_string()) bad("keep_alive must be a duration string (\"5m\") or a number of seconds");
  const std::string s = v->get<std::string>();
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (s.substr(i) == "0") return;
  bool any = false;
  while (i < s.size()) {
    const size_t digits = i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) i++;
    const size_t unit = i;
    while (i < s.size() && !std::isdigit(static_cast<unsigned char>(s[i])) && s[i] != '.') i++;
    static const char* kUnits[] = {"ns", "us", "\xC2\xB5s", "\xCE\xBCs", "ms", "s", "m", "h"};
    const std::string u = s.substr(unit, i - unit);
    const bool number = unit > digits && s.substr(digits, unit - digits) != ".";
    if (!number || std::none_of(std::begin(kUnits), std::end(kUnits), [&](const char* k) { return u == k; }))
      bad("time: invalid duration \"" + s + "\" (keep_alive: e.g. \"5m\", \"1h30m\", or a number of seconds)");
    any = true;
  }
  if (!any) bad("time: invalid duration \"" + s + "\" (keep_alive: e.g. \"5m\", \"1h30m\", or a number of seconds)");
}

// The inputs of /api/embed: a string or an array of strings; "" or [] asks for nothing (Ollama
// answers that by loading the model and returning no embeddings).
std::vector<std::string> ollama_inputs(const json& body) {
  const json* v = field(body, "input");
  if (!v) return {};
  if (v->is_string()) return v->get<std::string>().empty() ? std::vector<std::string>{} : std::vector<std::string>{v->get<std::string>()};
  if (!v->is_array()) bad("invalid input type");
  for (const json& e : *v)
    if (!e.is_string()) bad("invalid input type");
  return v->get<std::vector<std::string>>();
}

}  // namespace

// Ollama's model names are [namespace/]model[:tag], the tag "latest" when none is written.
std::string ollama_tagged(const std::string& name) {
  const size_t slash = name.rfind('/');
  return name.find(':', slash == std::string::npos ? 0 : slash) == std::string::npos ? name + ":latest" : name;
}

// Names are compared tagged and without regard to case, as Ollama compares them.
std::string ollama_name_key(const std::string& name) {
  std::string n = ollama_tagged(name);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return n;
}

const std::string& Api::ollama_model(const json& body, bool name_accepted) const {
  const json* m = field(body, "model");
  if (!m && name_accepted) m = field(body, "name");  // /api/show's older spelling; Ollama's embed routes read "model" only
  if (!m || !m->is_string() || m->get<std::string>().empty()) throw ApiError{400, "Validation", "model is required", "model", -1};
  const std::string& name = m->get_ref<const std::string&>();
  if (ollama_name_key(name) != ollama_name_key(config_.model_name))
    throw ApiError{404, "NotFound", "model '" + name + "' not found (this server serves '" + ollama_tagged(config_.model_name) + "')", "model", -1};
  return name;
}

std::shared_ptr<const OllamaFacts> Api::ollama_facts() const {
  std::call_once(facts_once_, [this] { facts_ = read_facts(*model_); });
  return facts_;
}

void Api::ollama_embed(const std::shared_ptr<Call>& c, bool legacy) {
  const Clock::time_point start = Clock::now();
  const json& b = c->body;
  const std::string name = ollama_model(b, false);
  const ModelDescription& d = model_->describe();
  if (d.default_pooling == Pooling::Rank) bad("\"" + name + "\" does not support embeddings (it is a reranker: use /rerank or /v1/rerank)");
  check_keep_alive(b);
  Request r = base_request(Task::Embed);
  // Ollama's vectors are floats: /api/embed's L2-normalized, /api/embeddings' as the model makes them.
  r.precision = Precision::Float32;
  r.ranges = nullptr;
  r.normalize = legacy ? -1 : 2;
  if (!legacy) r.truncate = bool_field(b, "truncate").value_or(true);  // Ollama's default
  if (const json* o = field(b, "options")) {
    if (!o->is_object()) bad("options must be an object");
    // num_ctx (the context length, inputs are cut or refused against) is the one option that
    // means something to an embedding here; sampling and GPU options are read by generation.
    if (auto n = int_field(*o, "num_ctx")) {
      if (*n < 1) bad("options.num_ctx must be at least 1");
      r.max_tokens = std::min(*n, config_.max_input_tokens);
    }
  }
  if (!legacy)
    if (auto k = int_field(b, "dimensions")) {
      if (*k < 0) bad("dimensions must not be negative");
      // As Ollama: 0 < k < the model's width cuts the vector to k (then normalizes); otherwise the full width.
      if (*k > 0 && *k < d.embedding_dim) r.dimensions = static_cast<int>(*k);
    }
  ResolvedRequest rr;
  try {
    rr = resolve_request(d, r, Task::Embed);
  } catch (const Error& e) {
    bad(e.what());
  }
  if (rr.pooling == Pooling::None)
    bad("this " + std::string(config_.embed_defaults.pooling ? "server's pooling is none (--pooling none" : "model's pooling is none (") +
        "one vector per token), and " + c->route + " answers one vector per input: use /embed_all or /embedding for per-token vectors");
  Inputs in;
  if (legacy) {
    const json* p = field(b, "prompt");
    if (p && !p->is_string()) bad("prompt must be a string");
    if (p && !p->get_ref<const std::string&>().empty()) in.texts.push_back(p->get<std::string>());
  } else {
    in.texts = ollama_inputs(b);
    if (in.texts.size() > config_.max_client_batch_size)
      bad("input has " + std::to_string(in.texts.size()) + " texts, more than the server's limit of " +
          std::to_string(config_.max_client_batch_size) + " (--max-client-batch-size)");
    for (size_t i = 0; i < in.texts.size(); i++)
      if (in.texts[i].empty()) throw ApiError{400, "Empty", "input[" + std::to_string(i) + "] is an empty string", "input", static_cast<int64_t>(i)};
  }
  if (in.texts.empty()) return c->answer_json(legacy ? R"({"embedding":[]})" : json{{"model", name}, {"embeddings", json::array()}}.dump());
  compute(c, rr, legacy ? "prompt" : "input", "", std::move(in), [legacy, name, start](const Embeddings& e) {
    std::string s;
    if (legacy) {
      s = "{\"embedding\":";
      append_row(s, e, 0);
      s += "}";
    } else {
      s = "{\"model\":" + json_string(name) + ",\"embeddings\":[";
      int64_t tokens = 0;
      for (int64_t i = 0; i < e.rows; i++) {
        if (i) s += ',';
        append_row(s, e, i);
        tokens += e.n_tokens[static_cast<size_t>(i)];
      }
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
      s += "],\"total_duration\":" + std::to_string(ns) + ",\"prompt_eval_count\":" + std::to_string(tokens) + "}";
    }
    HttpResponse res;
    res.body = std::move(s);
    return res;
  });
}

json Api::ollama_entry(bool running) const {
  const std::shared_ptr<const OllamaFacts> f = ollama_facts();
  const std::string name = ollama_tagged(config_.model_name);
  json m = {{"name", name}, {"model", name}, {"size", f->size}, {"digest", f->digest}, {"details", f->details}};
  if (!running) {
    m["modified_at"] = f->modified_at;
    return m;
  }
  // Loaded for as long as the server runs: Ollama's answer for a negative keep_alive.
  m["expires_at"] = "2318-01-01T00:00:00Z";
  m["size_vram"] = model_->describe().kernels == "cuda" ? f->size : 0;
  m["context_length"] = config_.max_input_tokens;
  return m;
}

void Api::ollama_show(const std::shared_ptr<Call>& c) {
  ollama_model(c->body, true);
  const bool verbose = bool_field(c->body, "verbose").value_or(false);
  const std::shared_ptr<const OllamaFacts> f = ollama_facts();
  const ModelDescription& d = model_->describe();
  json out = {{"modelfile", "FROM " + d.path + "\n"},
              {"parameters", ""},
              {"template", ""},
              {"details", f->details},
              {"model_info", verbose ? f->model_info_verbose : f->model_info_short},
              {"capabilities", d.default_pooling == Pooling::Rank ? json::array() : json::array({"embedding"})},
              {"modified_at", f->modified_at}};
  if (!f->license.empty()) out["license"] = f->license;
  if (verbose) out["tensors"] = f->tensors;
  c->answer_json(out.dump(-1, ' ', false, json::error_handler_t::replace));
}

void Api::ollama_version(const std::shared_ptr<Call>& c) { c->answer_json(json{{"version", EMBED_VERSION}}.dump()); }

}  // namespace embed::server
