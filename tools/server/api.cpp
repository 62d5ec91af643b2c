// Dispatch (routes, methods, API key, CORS, draining), the reply wrapper (metrics, in-flight
// count), and the routes that do not compute: health, info, OpenAPI, tokenize, decode. The
// server-wide listings (/v1/models, /api/tags, /api/ps, /metrics) are the Router's (router.cpp). The computing routes are in api_compute.cpp.
#include "tools/server/api.h"

#include <set>

#include "tokenizer/tokenizer.h"
#include "tools/server/api_common.h"

namespace embed::server {

enum class Method { Get, Post };

struct Route {
  const char* path;
  Method method;
  void (*run)(Api& api, const std::shared_ptr<Api::Call>& c);
};

// The route table (a friend of Api, so entries can forward to its members).
struct RouteTable {
  static const std::vector<Route>& routes();
};

bool authorized(const std::string& header, const std::string& key) {
  const std::string want = "Bearer " + key;
  if (header.size() != want.size()) return false;
  unsigned char diff = 0;  // no early exit: the time does not tell how much of the key matched
  for (size_t i = 0; i < want.size(); i++) diff |= static_cast<unsigned char>(header[i] ^ want[i]);
  return diff == 0;
}


Api::Api(std::shared_ptr<const Model> model, Scheduler& scheduler, Metrics& metrics, const ApiConfig& config)
    : model_(std::move(model)), scheduler_(scheduler), metrics_(metrics), config_(config) {
  const ModelDescription& d = model_->describe();
  if (config_.max_input_tokens <= 0) config_.max_input_tokens = d.n_ctx;
  // The embedding defaults are checked once here, so a request that does not say gets no error
  // of the server's making.
  const Request& e = config_.embed_defaults;
  std::string given;  // the flags that set them
  auto flag = [&given](bool set, const char* name) {
    if (set) given += (given.empty() ? "" : ", ") + std::string(name);
  };
  flag(e.pooling.has_value(), "--pooling");
  flag(e.precision != Precision::Float32, "--precision");
  flag(e.prompt_template.has_value(), "--template");
  flag(e.kv_embedding || e.kv_layers || e.kv_bias, "--kv-*");
  if (d.default_pooling == Pooling::Rank) {
    if (!given.empty())
      fail(ErrorKind::InvalidArgument,
           given + ": the embedding routes' defaults, and this model is a reranker (rank pooling): it answers /rerank and /v1/rerank only");
    defaults_ = resolve_request(d, base_request(Task::Rerank), Task::Rerank);
    return;
  }
  // Rank pooling scores (query, document) pairs: the rerank routes use it on a model with a
  // classifier head whatever --pooling says, and an embedding route has no pair to score.
  if (e.pooling == Pooling::Rank)
    fail(ErrorKind::InvalidArgument, "--pooling rank: rank pooling scores (query, document) pairs, which the rerank routes (/rerank, "
                                     "/v1/rerank) do on a model with a classifier head; --pooling sets the embedding routes' pooling: "
                                     "none, mean, cls, last or hybrid");
  // Checked as `embed serve`'s flags: the messages name them as typed.
  static const FieldNames serve_flags{{{"pooling", "--pooling"},
                                       {"precision", "--precision"},
                                       {"ranges", "--ranges"},
                                       {"prompt_template", "--template"},
                                       {"kv_embedding", "--kv-embedding"},
                                       {"kv_layers", "--kv-layers"},
                                       {"kv_bias", "--kv-bias"},
                                       {"max_tokens", "--max-input-tokens"}}};
  try {
    defaults_ = resolve_request(d, base_request(Task::Embed), Task::Embed, serve_flags);
  } catch (const Error& err) {
    fail(err.kind(), std::string("the embedding routes' defaults: ") + err.what());
  }
}

Request Api::base_request(Task task) const {
  Request r;
  r.max_tokens = config_.max_input_tokens;
  r.truncate = config_.auto_truncate;
  r.split_special = config_.split_special;
  if (task != Task::Embed) return r;
  const Request& e = config_.embed_defaults;
  r.pooling = e.pooling;
  r.precision = e.precision;
  if (r.precision == Precision::Int8 || r.precision == Precision::Uint8) r.ranges = config_.ranges;
  r.prompt_template = e.prompt_template;
  r.kv_embedding = e.kv_embedding;
  r.kv_layers = e.kv_layers;
  r.kv_bias = e.kv_bias;
  r.long_inputs = e.long_inputs;
  r.long_overlap = e.long_overlap;
  return r;
}

void Api::handle(HttpRequest request, Reply reply) {
  in_flight_++;
  auto call = std::make_shared<Call>();
  call->request = std::move(request);
  call->route = "other";
  // The one reply: metrics by route and status, CORS headers, the in-flight count.
  call->reply = [this, call_route = std::weak_ptr<Call>(call), reply = std::move(reply),
                 origin = call->request.origin](HttpResponse r) {
    const auto c = call_route.lock();
    metrics_.request(config_.model_name, c ? c->route : "other", r.status);
    if (!config_.cors_origin.empty() && (config_.cors_origin == "*" || config_.cors_origin == origin)) {
      r.headers.emplace_back("Access-Control-Allow-Origin", config_.cors_origin);
      if (config_.cors_origin != "*") r.headers.emplace_back("Vary", "Origin");
    }
    reply(std::move(r));
    in_flight_--;
  };
  try {
    dispatch(call);
  } catch (const ApiError& e) {
    call->fail(e);
  } catch (const std::exception& e) {
    call->fail(ApiError{500, "Backend", std::string("internal error: ") + e.what(), "", -1});
  }
}

void Api::dispatch(const std::shared_ptr<Call>& c) {
  const HttpRequest& q = c->request;
  c->error_shape = error_shape_of(q.path);  // Ollama's and OpenAI's routes answer errors in their APIs' shapes
  if (draining_) throw ApiError{503, "Unhealthy", "the server is shutting down", "", -1};
  if (q.method == "OPTIONS" && !config_.cors_origin.empty()) {
    HttpResponse r;
    r.status = 204;
    r.content_type = "text/plain";
    r.headers = {{"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
                 {"Access-Control-Allow-Headers", "authorization, content-type"},
                 {"Access-Control-Max-Age", "600"}};
    return c->answer(std::move(r));
  }
  const Route* route = nullptr;
  std::string allowed;
  for (const Route& r : RouteTable::routes()) {
    if (q.path != r.path) continue;
    const char* m = r.method == Method::Get ? "GET" : "POST";
    allowed += (allowed.empty() ? "" : ", ") + std::string(m);
    if (q.method == m || (q.method == "HEAD" && r.method == Method::Get)) route = &r;
  }
  if (allowed.empty()) throw ApiError{404, "NotFound", "no route " + q.path + " (see GET /openapi.json)", "", -1};
  if (!route) {
    HttpResponse r = error_response(ApiError{405, "MethodNotAllowed", q.method + " is not allowed on " + q.path + " (allowed: " + allowed + ")", "", -1},
                                    c->error_shape);
    r.headers.emplace_back("Allow", allowed);
    return c->answer(std::move(r));
  }
  c->route = route->path;
  if (!config_.api_key.empty() && q.path != "/health" && q.path != "/metrics" && q.path != "/" && !authorized(q.authorization, config_.api_key))
    throw ApiError{401, "Unauthorized", "missing or wrong API key (Authorization: Bearer KEY)", "", -1};
  if (route->method == Method::Post) {
    try {
      c->body = json::parse(q.body);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for a number beyond a double (found by request_tei_fuzz)
      throw ApiError{400, "InvalidJson", std::string("the body is not valid JSON (UTF-8): ") + e.what(), "", -1};
    }
    if (!c->body.is_object()) throw ApiError{422, "Validation", "the body must be a JSON object", "", -1};
  }
  route->run(*this, c);
}

// ---- routes without computing ----

std::string Api::info() const {
  const ModelDescription& d = model_->describe();
  const bool reranker = d.default_pooling == Pooling::Rank;
  const ResolvedRequest& e = defaults_;
  json type;
  // TEI reports the pooling it serves with (its --pooling, else the model's): here --pooling, else
  // the model's, or hybrid under --kv-embedding.
  if (reranker) type["reranker"] = {{"id2label", d.cls_labels}};
  else type["embedding"] = {{"pooling", pooling_name(e.pooling)}};
  json prompts = json::object();
  for (const auto& [name, text] : d.prompts.texts) prompts[name] = text;
  // What a request that does not say gets: the server's flags over the model's defaults, each
  // named as the request field that overrides it (pooling and split_special have none); null: not set.
  json defaults = {{"pooling", pooling_name(e.pooling)},
                   {"truncate", e.truncate},
                   {"truncation_direction", e.truncation_direction == TruncationDirection::Left ? "Left" : "Right"},
                   {"split_special", e.split_special}};
  if (!reranker) {
    const Request& f = config_.embed_defaults;
    defaults["precision"] = precision_name(e.finish.precision);
    defaults["ranges_dimensions"] = config_.ranges ? json(config_.ranges->dims()) : json(nullptr);
    defaults["prompt_template"] = f.prompt_template ? json(*f.prompt_template) : json(nullptr);
    defaults["kv_embedding"] = e.kv.on();
    defaults["kv_layers"] = e.kv.on() ? json::array({e.kv.layer_begin, e.kv.layer_end}) : json(nullptr);
    defaults["kv_bias"] = e.kv.on() ? json(e.kv.bias) : json(nullptr);
  }
  const SchedulerOptions& s = scheduler_.options();
  const char* dtype = d.compute_type == ComputeType::BF16 ? "bfloat16" : d.compute_type == ComputeType::Int8 ? "int8" : "float32";
  return json{{"model_id", config_.model_name},
              {"model_path", d.path},
              {"model_dtype", dtype},
              {"model_type", type},
              {"architecture", d.arch},
              {"embedding_dim", d.embedding_dim},
              // embed's: the read-outs besides the pooled row (/embed_sparse, /embed_multi_vector).
              {"sparse_head", d.sparse_head},
              {"colbert_dim", d.colbert_dim},
              {"max_input_length", config_.max_input_tokens},
              {"max_concurrent_requests", s.max_requests},
              {"max_batch_tokens", s.max_batch_tokens},
              {"max_batch_requests", nullptr},
              {"max_client_batch_size", config_.max_client_batch_size},
              {"payload_limit", config_.payload_limit},
              {"auto_truncate", config_.auto_truncate},
              {"tokenization_workers", config_.tokenization_workers},
              {"prompts", prompts},
              {"default_prompt_name", d.prompts.default_name.empty() ? json(nullptr) : json(d.prompts.default_name)},
              {"defaults", defaults},
              {"version", "embed 0.1.0"}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

void Api::tokenize(const std::shared_ptr<Call>& c) {
  if (!model_->has_tokenizer()) throw ApiError{422, "Tokenizer", "this model has no tokenizer", "", -1};
  const tok::Tokenizer& tk = model_->tokenizer();
  const bool llama = field(c->body, "content") != nullptr;  // llama.cpp's shape
  tok::EncodeOptions eo;
  if (llama) {
    const std::string content = string_field(c->body, "content").value_or("");
    eo.add_special = bool_field(c->body, "add_special").value_or(false);
    // llama.cpp's field (default true); a server run with --split-special defaults to false.
    eo.split_special = !bool_field(c->body, "parse_special").value_or(!config_.split_special);
    const bool pieces = bool_field(c->body, "with_pieces").value_or(false);
    const tok::Encoding e = tk.encode(content, eo);
    json tokens = json::array();
    for (int32_t id : e.ids) tokens.push_back(pieces ? json{{"id", id}, {"piece", std::string(tk.piece(id))}} : json(id));
    return c->answer_json(json{{"tokens", tokens}}.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  eo.add_special = bool_field(c->body, "add_special_tokens").value_or(true);
  eo.split_special = config_.split_special;
  const std::vector<std::string> texts = parse_strings(c->body, "inputs", config_.max_client_batch_size);
  // The text around each input, as the embedding routes put it: the prompt_template (the
  // request's, else the server's --template unless the request names a prompt), else the prompt.
  Request r;
  r.prompt_name = string_field(c->body, "prompt_name").value_or("");
  r.prompt_template = string_field(c->body, "prompt_template");
  if (!r.prompt_template && r.prompt_name.empty()) r.prompt_template = config_.embed_defaults.prompt_template;
  ResolvedRequest rr;
  try {
    rr = resolve_request(model_->describe(), r, Task::Embed);
  } catch (const Error& e) {
    throw ApiError{422, "Validation", e.what(), field(c->body, "prompt_template") ? "prompt_template" : "prompt_name", -1};
  }
  json out = json::array();
  for (const std::string& text : texts) {
    const std::string full = rr.prompt + text + rr.prompt_suffix;
    const tok::Encoding e = tk.encode_template(full, {{rr.prompt.size(), rr.prompt.size() + text.size()}}, eo);  // as the engine reads it
    json row = json::array();
    for (size_t i = 0; i < e.size(); i++) {
      const bool special = e.special[i] != 0;
      const std::string t = special || e.end[i] <= e.begin[i] ? std::string(tk.piece(e.ids[i])) : full.substr(e.begin[i], e.end[i] - e.begin[i]);
      row.push_back({{"id", e.ids[i]}, {"text", t}, {"special", special}, {"start", special ? json(nullptr) : json(e.begin[i])},
                     {"stop", special ? json(nullptr) : json(e.end[i])}});
    }
    out.push_back(row);
  }
  c->answer_json(out.dump(-1, ' ', false, json::error_handler_t::replace));
}

void Api::decode(const std::shared_ptr<Call>& c, bool llama) {
  if (!model_->has_tokenizer()) throw ApiError{422, "Tokenizer", "this model has no tokenizer", "", -1};
  const tok::Tokenizer& tk = model_->tokenizer();
  const char* name = llama ? "tokens" : "ids";
  const Inputs in = parse_inputs(c->body, name, llama ? 1 : config_.max_client_batch_size);
  if (!in.are_ids) throw ApiError{422, "Validation", std::string("field '") + name + "' must hold token ids", name, -1};
  const bool skip = !llama && bool_field(c->body, "skip_special_tokens").value_or(true);
  std::set<int32_t> specials;
  for (int32_t id : {tk.bos(), tk.eos(), tk.sep(), tk.cls(), tk.pad(), tk.unk(), tk.mask()})
    if (id >= 0) specials.insert(id);
  json out = json::array();
  for (size_t i = 0; i < in.ids.size(); i++) {
    std::vector<int32_t> ids;
    for (int32_t id : in.ids[i]) {
      if (static_cast<size_t>(id) >= tk.vocab_size())
        throw ApiError{422, "Tokenizer", "token id " + std::to_string(id) + " is outside the vocabulary", name, static_cast<int64_t>(i)};
      if (!skip || !specials.count(id)) ids.push_back(id);
    }
    out.push_back(tk.decode(ids));
  }
  if (llama) return c->answer_json(json{{"content", out[0]}}.dump(-1, ' ', false, json::error_handler_t::replace));
  c->answer_json(out.dump(-1, ' ', false, json::error_handler_t::replace));
}

const std::vector<Route>& RouteTable::routes() {
  using C = const std::shared_ptr<Api::Call>&;
  static const std::vector<Route> routes = {
      {"/v1/embeddings", Method::Post, [](Api& a, C c) { a.embeddings_openai(c); }},
      {"/embeddings", Method::Post, [](Api& a, C c) { a.embeddings_openai(c); }},
      {"/embed", Method::Post, [](Api& a, C c) { a.embed_tei(c, false); }},
      {"/embed_all", Method::Post, [](Api& a, C c) { a.embed_tei(c, true); }},
      {"/embed_sparse", Method::Post, [](Api& a, C c) { a.embed_readout(c, true); }},
      {"/embed_multi_vector", Method::Post, [](Api& a, C c) { a.embed_readout(c, false); }},
      {"/embedding", Method::Post, [](Api& a, C c) { a.embedding_llama(c); }},
      {"/rerank", Method::Post, [](Api& a, C c) { a.rerank(c, field(c->body, "documents") != nullptr); }},
      {"/v1/rerank", Method::Post, [](Api& a, C c) { a.rerank(c, true); }},
      {"/tokenize", Method::Post, [](Api& a, C c) { a.tokenize(c); }},
      {"/decode", Method::Post, [](Api& a, C c) { a.decode(c, false); }},
      {"/detokenize", Method::Post, [](Api& a, C c) { a.decode(c, true); }},
      {"/info", Method::Get, [](Api& a, C c) { c->answer_json(a.info()); }},
      {"/health", Method::Get, [](Api&, C c) { c->answer_json(""); }},
      {"/openapi.json", Method::Get, [](Api& a, C c) { c->answer_json(openapi_document(a.config_.model_name)); }},
      // Ollama's (api_ollama.cpp).
      {"/api/embed", Method::Post, [](Api& a, C c) { a.ollama_embed(c, false); }},
      {"/api/embeddings", Method::Post, [](Api& a, C c) { a.ollama_embed(c, true); }},
      {"/api/show", Method::Post, [](Api& a, C c) { a.ollama_show(c); }},
      {"/api/version", Method::Get, [](Api& a, C c) { a.ollama_version(c); }},
      {"/", Method::Get, [](Api&, C c) {
         HttpResponse r;
         r.content_type = "text/html; charset=utf-8";
         r.body = std::string(playground_page());
         c->answer(std::move(r));
       }},
  };
  return routes;
}

}  // namespace embed::server
