// The computing routes: OpenAI /v1/embeddings, TEI /embed and /embed_all, llama.cpp /embedding,
// TEI /rerank and Jina/Cohere /v1/rerank. Each maps its JSON fields (its API's, and embed's
// extensions: precision, prompt_template, kv_*) onto one embed::Request, hands the inputs to the
// scheduler and formats the rows it gets back (floats, or quantized codes).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/pipeline.h"
#include "engine/readout.h"
#include "tools/server/api_common.h"

namespace embed::server {
namespace {

using Clock = std::chrono::steady_clock;

std::string ms(double seconds) { return std::to_string(static_cast<int64_t>(std::llround(seconds * 1000))); }

int64_t total_tokens(const Embeddings& e) { return std::accumulate(e.n_tokens.begin(), e.n_tokens.end(), int64_t{0}); }

void read_dimensions(const json& body, Request& r) {
  if (auto d = int_field(body, "dimensions")) {
    if (*d < 1) throw ApiError{422, "Validation", "field 'dimensions' must be at least 1", "dimensions"};
    r.dimensions = static_cast<int>(std::min<int64_t>(*d, 1 << 30));
  }
}

bool needs_ranges(Precision p) { return p == Precision::Int8 || p == Precision::Uint8; }

int64_t positive_field(const json& b, const char* name, int64_t least) {
  const std::optional<int64_t> v = int_field(b, name);
  if (*v < least) throw ApiError{422, "Validation", std::string("field '") + name + "' must be at least " + std::to_string(least), name};
  return *v;
}

// Long inputs and late chunking, as the command's --long, --long-overlap, --late-chunking,
// --chunk-by, --chunk-tokens and --chunk-separator (docs/long-inputs.md): long_inputs ("error" /
// "chunk"), long_overlap, late_chunking, chunk_by ("tokens" / "sentences" / "separator"),
// chunk_tokens, chunk_separator.
void read_long_options(const json& b, Request& r) {
  if (auto l = string_field(b, "long_inputs"))
    if (!parse_long_inputs(*l, &r.long_inputs))
      throw ApiError{422, "Validation", "field 'long_inputs' must be \"error\" or \"chunk\", not \"" + *l + "\"", "long_inputs"};
  if (int_field(b, "long_overlap")) r.long_overlap = positive_field(b, "long_overlap", 0);
  if (auto v = bool_field(b, "late_chunking")) r.late_chunking = *v;
  if (auto c = string_field(b, "chunk_by"))
    if (!parse_chunk_rule(*c, &r.chunk_rule))
      throw ApiError{422, "Validation", "field 'chunk_by' must be \"tokens\", \"sentences\" or \"separator\", not \"" + *c + "\"",
                     "chunk_by"};
  if (int_field(b, "chunk_tokens")) r.chunk_tokens = positive_field(b, "chunk_tokens", 1);
  if (auto s = string_field(b, "chunk_separator")) r.chunk_separator = *s;
}

// embed's extensions of the embedding routes over the server's defaults already in `r`:
// precision (int8 / uint8 with the server's --ranges), prompt_template, kv_embedding, kv_layers
// ([first, last]) and kv_bias. A request that names a prompt (prompt_name) leaves the default
// template out; one that turns kv_embedding off, the default band and bias; one that turns it on,
// a default pooling KV-Embedding does not define (none, cls: its own, hybrid, instead).
void read_embed_options(const json& b, Request& r, const std::shared_ptr<const QuantizationRanges>& ranges) {
  read_long_options(b, r);
  if (auto p = string_field(b, "precision")) {
    if (!parse_precision(*p, &r.precision))
      throw ApiError{422, "Validation",
                     "field 'precision' must be \"float32\", \"int8\", \"uint8\", \"binary\" or \"ubinary\", not \"" + *p + "\"", "precision"};
    r.ranges = nullptr;
    if (needs_ranges(r.precision)) {
      if (!ranges)
        throw ApiError{422, "Validation", "precision " + *p + " needs calibration ranges: start the server with --ranges FILE (embed calibrate)",
                       "precision"};
      r.ranges = ranges;
    }
  }
  if (auto t = string_field(b, "prompt_template")) r.prompt_template = *t;
  else if (field(b, "prompt_name")) r.prompt_template.reset();
  if (auto kv = bool_field(b, "kv_embedding")) {
    r.kv_embedding = *kv;
    if (!*kv) r.kv_layers.reset(), r.kv_bias.reset();
    else if (r.pooling == Pooling::None || r.pooling == Pooling::Cls) r.pooling.reset();
  }
  if (const json* v = field(b, "kv_layers")) {
    auto layer = [](const json& x) {
      return x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() <= std::numeric_limits<int>::max();
    };
    if (!v->is_array() || v->size() != 2 || !layer((*v)[0]) || !layer((*v)[1]))
      throw ApiError{422, "Validation", "field 'kv_layers' must be [first, last]: two layer numbers counted from 0", "kv_layers"};
    r.kv_layers = std::make_pair((*v)[0].get<int>(), (*v)[1].get<int>());
  }
  if (const json* v = field(b, "kv_bias")) {
    const double x = v->is_number() ? v->get<double>() : NAN;
    if (!std::isfinite(x) || std::fabs(x) > std::numeric_limits<float>::max())
      throw ApiError{422, "Validation", "field 'kv_bias' must be a finite number", "kv_bias"};
    r.kv_bias = static_cast<float>(x);
  }
}

// The field a resolve_request message is about: its first word (the engine names Request's
// fields, whose names the routes' extensions share), when the body has that field.
std::string field_of(const json& body, const std::string& message) {
  const std::string first = message.substr(0, message.find(' '));
  return field(body, first.c_str()) ? first : "";
}

void refuse_reranker(const ModelDescription& d) {
  if (d.default_pooling == Pooling::Rank)
    throw ApiError{400, "Validation", "this model is a reranker (rank pooling): use /rerank or /v1/rerank", ""};
}

// A Request checked against the model; the engine's message answers 422, naming the field.
ResolvedRequest resolve(const ModelDescription& d, const json& body, const Request& r, Task task) {
  try {
    return resolve_request(d, r, task);
  } catch (const Error& e) {
    throw ApiError{422, "Validation", e.what(), field_of(body, e.what()), -1};
  }
}

// OpenAI's /v1/embeddings and TEI's /embed answer one vector per input; pooling none (the model's,
// or the server's --pooling none: `by_flag`) gives one per token, which would break that mapping
// (llama-server refuses pooling none on its OpenAI route the same way). TEI's /embed_all and
// llama.cpp's /embedding answer per-token vectors.
void refuse_per_token(const ResolvedRequest& r, const std::string& route, bool by_flag) {
  if (r.pooling == Pooling::None)
    throw ApiError{400, "Validation",
                   std::string(by_flag ? "this server's pooling is none (--pooling none: " : "this model's pooling is none (") +
                       "one vector per token), and " + route +
                       " answers one vector per input: use /embed_all (TEI) or /embedding (llama.cpp) for per-token vectors, "
                       "or send kv_embedding: true on a decoder (hybrid pooling)",
                   ""};
}

float sigmoid(float x) { return static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(x)))); }

}  // namespace

void Api::compute(const std::shared_ptr<Call>& c, const ResolvedRequest& rr, const char* field_name, const std::string& query, Inputs in,
                  std::function<HttpResponse(const Embeddings&)> format, bool query_first) {
  const Clock::time_point start = Clock::now();
  Tokenized t;
  try {
    if (rr.task == Task::Rerank) t = tokenize_pairs(*model_, rr, query, in.texts);
    else if (in.are_ids) t = sequences_from_ids(*model_, rr, std::move(in.ids));
    else t = tokenize_texts(*model_, rr, in.texts);
  } catch (const InputError& e) {
    // query_first: input 0 is the query, the field's items are inputs 1..
    const int64_t index = e.index() - (query_first ? 1 : 0);
    const char* field = index < 0 ? "query" : field_name;
    const std::string at = index < 0 ? "query: " : std::string(field_name) + "[" + std::to_string(index) + "]: ";
    if (e.too_long()) throw ApiError{413, "Validation", at + e.what() + " (send truncate: true to cut it)", field, index};
    throw ApiError{422, "Tokenizer", at + e.what(), field, index};
  } catch (const Error& e) {
    throw ApiError{422, "Validation", e.what(), field_name, -1};
  }
  int64_t tokens = 0;
  for (const SequenceInput& s : t.seqs) tokens += static_cast<int64_t>(s.ids.size());
  if (config_.max_request_tokens > 0 && tokens > config_.max_request_tokens)
    throw ApiError{413, "Validation",
                   std::string(field_name) + ": " + std::to_string(tokens) + " tokens in all, more than this server's --max-request-tokens " +
                       std::to_string(config_.max_request_tokens),
                   field_name, -1};
  const int64_t n_inputs = static_cast<int64_t>(t.seqs.size()), n_truncated = static_cast<int64_t>(t.truncated);
  const double tokenize_s = std::chrono::duration<double>(Clock::now() - start).count();
  auto done = [this, c, format = std::move(format), start, tokenize_s](JobOutcome o) {
    auto answer = [this, c, format, start, tokenize_s, o = std::move(o)]() mutable {
      if (o.error) return c->fail(ApiError{500, "Backend", o.error->message, "", -1});
      metrics_.job(config_.model_name, o.queue_seconds, o.compute_seconds);
      HttpResponse r = format(o.rows);
      r.headers.emplace_back("x-compute-tokens", std::to_string(total_tokens(o.rows)));
      r.headers.emplace_back("x-tokenization-time", ms(tokenize_s));
      r.headers.emplace_back("x-queue-time", ms(o.queue_seconds));
      r.headers.emplace_back("x-inference-time", ms(o.compute_seconds));
      r.headers.emplace_back("x-total-time", ms(std::chrono::duration<double>(Clock::now() - start).count()));
      c->answer(std::move(r));
    };
    if (post_) post_(std::move(answer));
    else answer();
  };
  if (std::optional<Status> refused = scheduler_.submit(rr, std::move(t), std::move(done), c->request.gone)) {
    if (refused->kind == ErrorKind::Overloaded) throw ApiError{429, "Overloaded", refused->message, "", -1};
    if (refused->code == StatusCode::ShuttingDown) throw ApiError{503, "Unhealthy", refused->message, "", -1};
    throw ApiError{413, "Validation", refused->message, field_name, refused->index};
  }
  metrics_.inputs(config_.model_name, n_inputs, tokens, n_truncated);
}

void Api::embeddings_openai(const std::shared_ptr<Call>& c) {
  refuse_reranker(model_->describe());
  const json& b = c->body;
  string_field(b, "model");  // accepted (type-checked), one model is served
  string_field(b, "user");
  const std::string encoding = string_field(b, "encoding_format").value_or("float");
  if (encoding != "float" && encoding != "base64")
    throw ApiError{422, "Validation", "field 'encoding_format' must be \"float\" or \"base64\", not \"" + encoding + "\"", "encoding_format"};
  Request r = base_request(Task::Embed);
  read_dimensions(b, r);
  read_embed_options(b, r, config_.ranges);
  const ResolvedRequest rr = resolve(model_->describe(), b, r, Task::Embed);
  refuse_per_token(rr, c->route, config_.embed_defaults.pooling.has_value());
  Inputs in = parse_inputs(b, "input", config_.max_client_batch_size);
  const bool base64 = encoding == "base64";
  compute(c, rr, "input", "", std::move(in), [this, base64](const Embeddings& e) {
    auto append_embedding = [&](std::string& s, int64_t row) {
      if (base64) {
        s += '"';
        s += base64_row(e, row);
        s += '"';
      } else {
        append_row(s, e, row);
      }
    };
    // Late chunking: one item per input, its chunks as {"span": [begin, end], "embedding": ...}
    // (code points of the input), as `embed --late-chunking --format jsonl` writes them.
    const bool chunks = !e.spans.empty();
    const int64_t n = chunks ? static_cast<int64_t>(e.row_offsets.size()) - 1 : e.rows;
    std::string s = "{\"object\":\"list\",\"data\":[";
    for (int64_t i = 0; i < n; i++) {
      if (i) s += ',';
      s += "{\"object\":\"embedding\",\"index\":";
      s += std::to_string(i);
      if (!chunks) {
        s += ",\"embedding\":";
        append_embedding(s, i);
      } else {
        s += ",\"chunks\":[";
        for (int64_t r = e.row_offsets[i]; r < e.row_offsets[i + 1]; r++) {
          s += std::string(r > e.row_offsets[i] ? "," : "") + "{\"span\":[" + std::to_string(e.spans[r].begin) + "," +
               std::to_string(e.spans[r].end) + "],\"embedding\":";
          append_embedding(s, r);
          s += '}';
        }
        s += ']';
      }
      s += "}";
    }
    const std::string tokens = std::to_string(total_tokens(e));
    s += "],\"model\":" + json_string(config_.model_name) + ",\"usage\":{\"prompt_tokens\":" + tokens + ",\"total_tokens\":" + tokens + "}}";
    HttpResponse res;
    res.body = std::move(s);
    return res;
  });
}

void Api::embed_tei(const std::shared_ptr<Call>& c, bool all_tokens) {
  const json& b = c->body;
  Request r = base_request(Task::Embed);
  read_truncation(b, r);
  if (auto p = string_field(b, "prompt_name")) r.prompt_name = *p;
  if (all_tokens) {
    r.normalize = -1;  // the final hidden states as the model computes them
    // The defaults for pooled rows do not apply to them (a request that asks gets the engine's 422).
    r.precision = Precision::Float32;
    r.ranges = nullptr;
    r.kv_embedding = false;
    r.kv_layers.reset();
    r.kv_bias.reset();
  } else {
    refuse_reranker(model_->describe());
    if (!bool_field(b, "normalize").value_or(true)) r.normalize = -1;
    read_dimensions(b, r);
  }
  read_embed_options(b, r, config_.ranges);
  if (all_tokens) r.pooling = Pooling::None;  // whatever the server's --pooling (after kv_embedding read it)
  const ResolvedRequest rr = resolve(model_->describe(), b, r, Task::Embed);
  if (!all_tokens) refuse_per_token(rr, "/embed", config_.embed_defaults.pooling.has_value());
  Inputs in = parse_inputs(b, "inputs", config_.max_client_batch_size);
  compute(c, rr, "inputs", "", std::move(in), [](const Embeddings& e) {
    // One vector per input, or a list per input: its tokens' (/embed_all) or its chunks' (late
    // chunking) vectors.
    std::string s = "[";
    const bool nested = !e.row_offsets.empty();
    const int64_t n = nested ? static_cast<int64_t>(e.row_offsets.size()) - 1 : e.rows;
    for (int64_t i = 0; i < n; i++) {
      if (i) s += ',';
      if (!nested) {
        append_row(s, e, i);
        continue;
      }
      s += '[';
      for (int64_t t = e.row_offsets[i]; t < e.row_offsets[i + 1]; t++) {
        if (t > e.row_offsets[i]) s += ',';
        append_row(s, e, t);
      }
      s += ']';
    }
    HttpResponse res;
    res.body = s + "]";
    return res;
  });
}

void Api::embedding_llama(const std::shared_ptr<Call>& c) {
  refuse_reranker(model_->describe());
  const json& b = c->body;
  Request r = base_request(Task::Embed);
  if (auto p = int_field(b, "embd_normalize")) {
    if (*p < -1) throw ApiError{422, "Validation", "field 'embd_normalize' must be -1 (none), 0 (max-abs), 1, 2 or a p > 2", "embd_normalize"};
    r.normalize = static_cast<int>(std::min<int64_t>(*p, 1 << 30));
  }
  read_embed_options(b, r, config_.ranges);
  ResolvedRequest rr = resolve(model_->describe(), b, r, Task::Embed);
  // llama-server applies embd_normalize to pooled vectors only: per-token rows are the final
  // hidden states as the model computes them (server.cpp send_embedding, "normalize only when
  // there is pooling"), whatever embd_normalize says (which was still checked above).
  if (rr.pooling == Pooling::None) rr.finish.normalize = -1;
  Inputs in = parse_inputs(b, "content", config_.max_client_batch_size);
  compute(c, rr, "content", "", std::move(in), [](const Embeddings& e) {
    // llama-server's shape: one object per input, its vectors as a list (one, or one per token).
    const bool per_token = !e.row_offsets.empty();
    const int64_t n = per_token ? static_cast<int64_t>(e.row_offsets.size()) - 1 : e.rows;
    std::string s = "[";
    for (int64_t i = 0; i < n; i++) {
      s += std::string(i ? "," : "") + "{\"index\":" + std::to_string(i) + ",\"embedding\":[";
      const int64_t first = per_token ? e.row_offsets[i] : i, last = per_token ? e.row_offsets[i + 1] : i + 1;
      for (int64_t t = first; t < last; t++) {
        if (t > first) s += ',';
        append_row(s, e, t);
      }
      s += "]}";
    }
    HttpResponse res;
    res.body = s + "]";
    return res;
  });
}

void Api::rerank(const std::shared_ptr<Call>& c, bool jina) {
  const ModelDescription& d = model_->describe();
  const bool by_readouts = d.n_cls_out == 0 && d.sparse_head && d.colbert_dim > 0;  // BGE-M3: compute_score
  if (d.n_cls_out == 0 && !by_readouts)
    throw ApiError{400, "Validation",
                   "this model is not a reranker (it has no classifier head, nor BGE-M3's sparse and ColBERT heads): use /embed or "
                   "/v1/embeddings",
                   ""};
  const json& b = c->body;
  const std::optional<std::string> query = string_field(b, "query");
  if (!query) throw ApiError{422, "Validation", "missing field 'query'", "query"};
  if (query->empty()) throw ApiError{400, "Empty", "field 'query' is empty", "query"};
  Request r = base_request(by_readouts ? Task::Embed : Task::Rerank);
  read_truncation(b, r);
  // BGE-M3: compute_score's score named by "score" (default colbert+sparse+dense) with "weights"
  // [dense, sparse, colbert] (default [1, 1, 1]), from one pass over the query and the documents.
  std::string score_name = "colbert+sparse+dense";
  std::array<double, 3> weights{1, 1, 1};
  if (by_readouts) {
    if (auto sn = string_field(b, "score")) score_name = *sn;
    double probe = 0;
    if (!m3_score_by_name(M3Scores{}, score_name, &probe))
      throw ApiError{422, "Validation",
                     "field 'score' must be \"dense\", \"sparse\", \"colbert\", \"sparse+dense\" or \"colbert+sparse+dense\", not \"" +
                         score_name + "\"",
                     "score"};
    if (const json* w = field(b, "weights")) {
      bool good = w->is_array() && w->size() == 3;
      for (size_t k = 0; good && k < 3; k++) {
        good = (*w)[k].is_number() && (*w)[k].get<double>() >= 0 && (*w)[k].get<double>() <= 1e6;
        if (good) weights[k] = (*w)[k].get<double>();
      }
      if (!good || !(weights[0] + weights[1] > 0))
        throw ApiError{422, "Validation", "field 'weights' must be [dense, sparse, colbert]: three numbers >= 0, dense + sparse > 0", "weights"};
    }
    r.outputs = Outputs{true, true, true};
    drop_pooled_row_defaults(r);
    r.dimensions.reset();
    r.normalize = 2;
  }
  const char* docs_field = jina ? "documents" : "texts";
  Inputs in;
  if (jina) {
    // Jina accepts {"text": ...} objects as documents as well as strings.
    json docs = b.contains("documents") ? b["documents"] : json(nullptr);
    if (docs.is_array())
      for (json& doc : docs)
        if (doc.is_object() && doc.contains("text")) doc = doc["text"];
    in.texts = parse_strings(json{{"documents", docs}}, "documents", config_.max_client_batch_size);
  } else {
    in.texts = parse_strings(b, "texts", config_.max_client_batch_size);
  }
  const bool raw = !jina && bool_field(b, "raw_scores").value_or(false);
  const bool with_text = jina ? bool_field(b, "return_documents").value_or(false) : bool_field(b, "return_text").value_or(false);
  const int64_t top_n = jina ? int_field(b, "top_n").value_or(static_cast<int64_t>(in.texts.size())) : static_cast<int64_t>(in.texts.size());
  if (top_n < 1) throw ApiError{422, "Validation", "field 'top_n' must be at least 1", "top_n"};
  if (jina) string_field(b, "model");
  const bool probability = d.rank_probability;
  std::vector<std::string> texts = with_text ? in.texts : std::vector<std::string>{};
  if (by_readouts) in.texts.insert(in.texts.begin(), *query);  // one pass: the query is input 0
  compute(c, resolve(d, b, r, by_readouts ? Task::Embed : Task::Rerank), docs_field, *query, std::move(in),
          [this, jina, raw, probability, top_n, texts = std::move(texts), by_readouts, score_name, weights](const Embeddings& e) {
            std::vector<float> score;
            if (by_readouts) {
              // compute_score's similarity as it is (no sigmoid: it is not a logit).
              for (const M3Scores& s : m3_scores(e, weights.data())) {
                double v = 0;
                m3_score_by_name(s, score_name, &v);
                score.push_back(static_cast<float>(v));
              }
            } else {
              // The head's first output: a logit (sigmoid unless raw_scores), or P(yes) already.
              for (int64_t i = 0; i < e.rows; i++) score.push_back(raw || probability ? e.row(i)[0] : sigmoid(e.row(i)[0]));
            }
            std::vector<size_t> order(score.size());
            std::iota(order.begin(), order.end(), size_t{0});
            std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] > score[b]; });
            order.resize(std::min<size_t>(order.size(), static_cast<size_t>(top_n)));
            json results = json::array();
            for (size_t i : order) {
              json item = {{"index", i}, {jina ? "relevance_score" : "score", score[i]}};
              if (!texts.empty()) item[jina ? "document" : "text"] = jina ? json{{"text", texts[i]}} : json(texts[i]);
              results.push_back(std::move(item));
            }
            HttpResponse res;
            const json out = jina ? json{{"model", config_.model_name}, {"results", results}, {"usage", {{"total_tokens", total_tokens(e)}}}}
                                  : results;
            res.body = out.dump(-1, ' ', false, json::error_handler_t::replace);
            return res;
          },
          by_readouts);
}

}  // namespace embed::server
