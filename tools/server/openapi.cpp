// GET /openapi.json: an OpenAPI 3.0 description of every route of `embed serve`, written from
// the same field names the routes read (tools/server/api*.cpp).
#include <nlohmann/json.hpp>

#include "tools/server/api.h"

namespace embed::server {
namespace {

using nlohmann::json;

json inputs_schema() {
  return {{"oneOf",
           {{{"type", "string"}},
            {{"type", "array"}, {"items", {{"type", "string"}}}},
            {{"type", "array"}, {"items", {{"type", "integer"}}}},
            {{"type", "array"}, {"items", {{"type", "array"}, {"items", {{"type", "integer"}}}}}}}}};
}

// embed's extensions of the embedding routes, over the server's defaults (docs/server.md).
json embed_extensions() {
  return {{"precision",
           {{"type", "string"},
            {"enum", {"float32", "int8", "uint8", "binary", "ubinary"}},
            {"description",
             "embed extension: output precision (sentence-transformers' quantize_embeddings; default: the server's --precision). "
             "Quantized rows are integers (int8, binary signed; uint8, ubinary unsigned; binary/ubinary ceil(dim/8) bytes), "
             "base64 their bytes; int8/uint8 need the server's --ranges"}}},
          {"prompt_template",
           {{"type", "string"},
            {"description", "embed extension: a template with one {text} slot, e.g. 'This sentence: \"{text}\" means in one word: \"' "
                            "(default: the server's --template; not with prompt_name)"}}},
          {"kv_embedding",
           {{"type", "boolean"}, {"description", "embed extension: KV-Embedding on a decoder (default: the server's --kv-embedding)"}}},
          {"kv_layers",
           {{"type", "array"},
            {"items", {{"type", "integer"}}},
            {"minItems", 2},
            {"maxItems", 2},
            {"description", "embed extension: KV-Embedding layers [first, last], counted from 0 (default: --kv-layers, else the middle third)"}}},
          {"kv_bias", {{"type", "number"}, {"description", "embed extension: KV-Embedding logit bias (default: --kv-bias, else 1.0)"}}}};
}

json with_extensions(json properties) {
  properties.update(embed_extensions());
  return properties;
}

// TEI's error body, or (openai) OpenAI's {error: {message, type, param, code}}.
json error_responses(bool openai) {
  const json string = {{"type", "string"}};
  const json tei = {{"type", "object"},
                    {"properties", {{"error", string}, {"error_type", string}, {"field", string}, {"index", {{"type", "integer"}}}}}};
  const json openai_error = {
      {"type", "object"},
      {"properties",
       {{"error",
         {{"type", "object"},
          {"properties", {{"message", string}, {"type", string}, {"param", {{"type", "string"}, {"nullable", true}}}, {"code", string}}}}}}}};
  json r;
  const std::pair<const char*, const char*> codes[] = {
      {"400", "invalid JSON or UTF-8, empty input, wrong model kind (or pooling none where one vector per input is answered)"},
      {"401", "missing or wrong API key"},
      {"413", "too many inputs, body too large, or an input too long without truncate"},
      {"422", "a field of the wrong type or value, or a tokenizer error"},
      {"429", "overloaded: retry after the Retry-After header's seconds"},
      {"503", "shutting down"}};
  for (const auto& [code, what] : codes)
    r[code] = {{"description", what}, {"content", {{"application/json", {{"schema", openai ? openai_error : tei}}}}}};
  return r;
}

json post(const char* summary, json properties, std::vector<std::string> required, const char* answer, bool openai_errors = false) {
  json responses = error_responses(openai_errors);
  responses["200"] = {{"description", answer}};
  return {{"post",
           {{"summary", summary},
            {"requestBody",
             {{"required", true},
              {"content", {{"application/json", {{"schema", {{"type", "object"}, {"properties", properties}, {"required", required}}}}}}}}},
            {"responses", responses}}}};
}

json get(const char* summary, const char* answer) {
  return {{"get", {{"summary", summary}, {"responses", {{"200", {{"description", answer}}}}}}}};
}

}  // namespace

std::string openapi_document(const std::string& model_name) {
  const json str = {{"type", "string"}}, boolean = {{"type", "boolean"}}, integer = {{"type", "integer"}};
  const json direction = {{"type", "string"}, {"enum", {"Left", "Right"}}};
  const json openai = post("OpenAI embeddings",
                           with_extensions({{"input", inputs_schema()}, {"model", str}, {"user", str},
                                            {"encoding_format", {{"type", "string"}, {"enum", {"float", "base64"}}}}, {"dimensions", integer}}),
                           {"input"}, "{object: list, data: [{object: embedding, index, embedding}], model, usage}", true);
  json paths;
  paths["/v1/embeddings"] = openai;
  paths["/embeddings"] = openai;
  paths["/embed"] = post("TEI embed",
                         with_extensions({{"inputs", inputs_schema()}, {"normalize", boolean}, {"truncate", boolean},
                                          {"truncation_direction", direction}, {"prompt_name", str}, {"dimensions", integer}}),
                         {"inputs"}, "[[float]] (quantized precision: [[integer]]): one vector per input");
  paths["/embed_all"] = post("TEI per-token vectors (final hidden states, no pooling or normalization)",
                             {{"inputs", inputs_schema()}, {"truncate", boolean}, {"truncation_direction", direction}, {"prompt_name", str},
                              {"prompt_template", str}},
                             {"inputs"}, "[[[float]]]: per input, one vector per token");
  paths["/embed_sparse"] = post("TEI sparse embedding (BGE-M3's sparse head): per input its non-zero token weights, ascending token id",
                                {{"inputs", inputs_schema()}, {"truncate", boolean}, {"truncation_direction", direction}, {"prompt_name", str},
                                 {"model", str}},
                                {"inputs"}, "[[{index, value}]]: per input, token ids with their weights");
  paths["/embed_multi_vector"] = post("ColBERT multi-vectors (BGE-M3's colbert head): per input one unit vector per token after CLS",
                                      {{"inputs", inputs_schema()}, {"truncate", boolean}, {"truncation_direction", direction},
                                       {"prompt_name", str}, {"model", str}},
                                      {"inputs"}, "[[[float]]]: per input, one vector per token after the first");
  paths["/embedding"] = post("llama.cpp embedding", with_extensions({{"content", inputs_schema()}, {"embd_normalize", integer}}),
                             {"content"}, "[{index, embedding: [[float]]}] (quantized precision: integers); pooling none: one un-normalized vector per token");
  paths["/rerank"] = post("TEI rerank (Jina/Cohere shape when the body has documents)",
                          {{"query", str}, {"texts", {{"type", "array"}, {"items", str}}}, {"truncate", boolean},
                           {"truncation_direction", direction}, {"raw_scores", boolean}, {"return_text", boolean}},
                          {"query", "texts"}, "[{index, score, text?}] best first");
  paths["/v1/rerank"] = post("Jina/Cohere rerank",
                             {{"query", str}, {"documents", {{"type", "array"}, {"items", str}}}, {"top_n", integer},
                              {"return_documents", boolean}, {"model", str}, {"truncate", boolean}, {"truncation_direction", direction}},
                             {"query", "documents"}, "{model, results: [{index, relevance_score, document?}], usage} best first");
  paths["/tokenize"] = post("TEI tokenize (llama.cpp shape when the body has content)",
                            {{"inputs", inputs_schema()}, {"add_special_tokens", boolean}, {"prompt_name", str}, {"prompt_template", str}, {"content", str},
                             {"add_special", boolean}, {"with_pieces", boolean}},
                            {}, "[[{id, text, special, start, stop}]] (llama.cpp: {tokens})");
  paths["/decode"] = post("TEI decode", {{"ids", inputs_schema()}, {"skip_special_tokens", boolean}}, {"ids"}, "[string]");
  paths["/detokenize"] = post("llama.cpp detokenize", {{"tokens", {{"type", "array"}, {"items", integer}}}}, {"tokens"}, "{content}");
  paths["/info"] = get("model, limits and the server's defaults",
                       "{model_id, model_dtype, model_type, max_input_length, max_batch_tokens, ..., defaults: {pooling, truncate, "
                       "truncation_direction, split_special, precision, ranges_dimensions, prompt_template, kv_embedding, kv_layers, "
                       "kv_bias}}");
  paths["/health"] = get("200 while serving, 503 while shutting down", "empty");
  paths["/v1/models"] = get("OpenAI model list", "{object: list, data: [{id, object: model}]}");
  paths["/metrics"] = get("Prometheus metrics", "text/plain exposition format");
  paths["/openapi.json"] = get("this document", "OpenAPI 3.0");
  // Ollama's (api_ollama.cpp); errors answer {error} with 400, 404 or 503.
  const json ollama_options = {{"type", "object"}, {"description", "Ollama's options: num_ctx is read, the others are accepted"}};
  const json keep_alive = {{"description", "a Go duration (\"5m\") or seconds; checked, models stay loaded"}};
  const json ollama_input = {{"oneOf", {str, {{"type", "array"}, {"items", str}}}}};
  paths["/api/embed"] = post("Ollama embed (L2-normalized float vectors)",
                             {{"model", str}, {"input", ollama_input}, {"truncate", boolean}, {"dimensions", integer},
                              {"options", ollama_options}, {"keep_alive", keep_alive}},
                             {"model"}, "{model, embeddings: [[float]], total_duration, prompt_eval_count}");
  paths["/api/embeddings"] = post("Ollama's older embeddings route (one unnormalized vector)",
                                  {{"model", str}, {"prompt", str}, {"options", ollama_options}, {"keep_alive", keep_alive}}, {"model"},
                                  "{embedding: [float]}");
  paths["/api/show"] = post("Ollama show", {{"model", str}, {"name", str}, {"verbose", boolean}}, {},
                            "{modelfile, parameters, template, details, model_info, capabilities, modified_at, license?, tensors?}");
  paths["/api/tags"] = get("Ollama model list", "{models: [{name, model, modified_at, size, digest, details}]}");
  paths["/api/ps"] = get("Ollama loaded models", "{models: [{name, model, size, digest, details, expires_at, size_vram, context_length}]}");
  paths["/api/version"] = get("Ollama version route: embed's version", "{version}");
  paths["/"] = get("the playground page (HTML; open without --api-key, its calls send the key typed in)", "text/html");
  return json{{"openapi", "3.0.3"},
              {"info", {{"title", "embed serve"}, {"version", "0.1.0"}, {"description", "Embeddings and reranking with " + model_name}}},
              {"paths", paths},
              {"components", {{"securitySchemes", {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}}}}}}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace embed::server
