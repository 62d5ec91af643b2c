// The routes of `embed serve`: OpenAI's, TEI's, Jina/Cohere's and llama.cpp's request and answer
// shapes over the engine's one request type and the cross-request scheduler. Validation errors
// answer {"error", "error_type", "field"?, "index"?} with TEI's status codes. No sockets here: the
// transport (tools/server/http.h) hands requests in, so the routes can be driven directly.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "engine/api.h"
#include "engine/scheduler.h"
#include "tools/server/http.h"
#include "tools/server/metrics.h"

namespace embed::server {

struct RouteTable;
struct Inputs;
struct OllamaFacts;

struct ApiConfig {
  std::string model_name;               // the id answered in "model" fields and /v1/models
  size_t max_client_batch_size = 32;    // inputs (or documents) per request
  bool auto_truncate = false;           // truncate when a request does not say
  bool split_special = false;           // special-token text in inputs is plain text (--split-special)
  int64_t max_input_tokens = 0;         // per input; 0 = the model's context length
  int64_t max_request_tokens = 0;       // all inputs of one request after tokenization (more: 413); 0 = no bound beyond inputs x per input
  std::string api_key;                  // empty: no authentication
  std::string cors_origin;              // empty: no CORS headers; "*" or one origin
  size_t payload_limit = 2000000;       // reported by /info (the transport enforces it)
  int tokenization_workers = 2;         // reported by /info: the transport threads, which tokenize
  // Defaults of the embedding routes (--pooling, --precision, --template, --kv-embedding,
  // --kv-layers, --kv-bias): pooling, precision, prompt_template and kv_* of this Request; a
  // request's own fields win (pooling has none: /embed_all alone asks for per-token rows).
  Request embed_defaults;
  std::shared_ptr<const QuantizationRanges> ranges;  // --ranges: for int8 / uint8 rows; null: none
};

class Api : public Handler {
 public:
  // Throws embed::Error(InvalidArgument) when config.embed_defaults do not fit the model (a
  // reranker, pooling rank, an encoder with kv_embedding, a template without {text}, int8
  // without ranges, ...).
  Api(std::shared_ptr<const Model> model, Scheduler& scheduler, Metrics& metrics, const ApiConfig& config);
  void handle(HttpRequest request, Reply reply) override;
  void drain() { draining_ = true; }  // from now on every request answers 503
  size_t in_flight() const { return in_flight_.load(); }
  const ApiConfig& config() const { return config_; }
  // This model's entry in Ollama's /api/tags (running false) or /api/ps (true).
  nlohmann::json ollama_entry(bool running) const;
  void set_connections(std::function<size_t()> f) { connections_ = std::move(f); }
  // Where answers of computed requests are formatted (the transport's threads, not the compute
  // thread); by default inline.
  void set_poster(std::function<void(std::function<void()>)> post) { post_ = std::move(post); }

  struct Call;

 private:
  friend struct RouteTable;
  // Tokenizes and queues one resolved request; `format` turns its rows into the answer.
  // query_first: inputs[0] is the query (BGE-M3 scoring), so errors name the field's items from 1.
  void compute(const std::shared_ptr<Call>& c, const ResolvedRequest& r, const char* field_name, const std::string& query, Inputs inputs,
               std::function<HttpResponse(const Embeddings&)> format, bool query_first = false);
  void dispatch(const std::shared_ptr<Call>& call);
  void embeddings_openai(const std::shared_ptr<Call>& c);
  void embed_tei(const std::shared_ptr<Call>& c, bool all_tokens);
  void embedding_llama(const std::shared_ptr<Call>& c);
  // /embed_sparse (sparse true) and /embed_multi_vector (api_readouts.cpp).
  void embed_readout(const std::shared_ptr<Call>& c, bool sparse);
  void rerank(const std::shared_ptr<Call>& c, bool jina);
  void tokenize(const std::shared_ptr<Call>& c);
  void decode(const std::shared_ptr<Call>& c, bool llama);
  // Ollama's routes (api_ollama.cpp): /api/embed (legacy false) and /api/embeddings (true),
  // /api/show, /api/version (/api/tags and /api/ps are the Router's, from ollama_entry).
  void ollama_embed(const std::shared_ptr<Call>& c, bool legacy);
  void ollama_show(const std::shared_ptr<Call>& c);
  void ollama_version(const std::shared_ptr<Call>& c);
  // The body's "model" (or, where name_accepted (/api/show), "name") when it names the served
  // model; else 400 / 404 as Ollama.
  const std::string& ollama_model(const nlohmann::json& body, bool name_accepted) const;
  std::shared_ptr<const OllamaFacts> ollama_facts() const;  // read from the GGUF on first use
  // GET /info: TEI's fields, and what a request that does not say gets (defaults_).
  std::string info() const;
  // Base request with the server's defaults: length limit, auto-truncate, split-special and, for
  // Task::Embed, config_.embed_defaults (with config_.ranges when their precision needs them).
  Request base_request(Task task) const;

  std::shared_ptr<const Model> model_;
  Scheduler& scheduler_;
  Metrics& metrics_;
  ApiConfig config_;
  ResolvedRequest defaults_;  // base_request resolved: Task::Embed, or Task::Rerank for a reranker
  std::atomic<bool> draining_{false};
  std::atomic<size_t> in_flight_{0};
  std::function<size_t()> connections_;
  std::function<void(std::function<void()>)> post_;
  mutable std::once_flag facts_once_;
  mutable std::shared_ptr<const OllamaFacts> facts_;
};

// The OpenAPI 3 document of every route (GET /openapi.json).
std::string openapi_document(const std::string& model_name);

// The playground page (GET /, tools/server/playground.html compiled in).
std::string_view playground_page();

}  // namespace embed::server
