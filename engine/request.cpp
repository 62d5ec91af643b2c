// resolve_request: every check of a Request against a model, in one place, with one set of
// messages for every front end.
#include "engine/request.h"

#include <algorithm>
#include <cmath>

#include "engine/prompts.h"
#include "engine/types.h"

namespace embed {
namespace {

[[noreturn]] void invalid(const std::string& message) { fail(ErrorKind::InvalidArgument, message); }

// long_inputs, long_overlap and late chunking (after pooling and max_tokens are resolved).
void resolve_long_inputs(const ModelDescription& d, const Request& r, Task task, ResolvedRequest& out, const FieldNames& n) {
  const bool chunk = r.long_inputs == LongInputs::Chunk;
  if ((chunk || r.late_chunking) && task != Task::Embed)
    invalid((chunk ? n("long_inputs") + " chunk" : n("late_chunking")) + " applies to embedding, not to reranking");
  if (chunk && r.truncate) invalid(n("long_inputs") + " chunk keeps all of a long text: give it or " + n("truncate") + ", not both");
  if (chunk && r.late_chunking)
    invalid(n("long_inputs") + " chunk and " + n("late_chunking") + " both split long texts: give one (" + n("late_chunking") +
            " windows long texts itself)");
  if (chunk && (out.pooling == Pooling::None || out.pooling == Pooling::Rank))
    invalid(n("long_inputs") + " chunk combines pooled vectors, which " + n("pooling") + " " + pooling_name(out.pooling) + " does not give");
  if (r.late_chunking && r.truncate)
    invalid(n("late_chunking") + " encodes whole texts (in windows past " + n("max_tokens") + "): " + n("truncate") + " does not apply");
  if (r.late_chunking && r.exclude_special)
    invalid(n("exclude_special") + " does not apply to " + n("late_chunking") + ": chunks never hold special tokens");
  // KV-Embedding re-routes each sequence's last token and pools the whole sequence; late chunking
  // pools spans of windows, each window a sequence with its own last token.
  if (r.late_chunking && r.kv_embedding)
    invalid(n("kv_embedding") + " does not apply to " + n("late_chunking") + ": it pools whole texts, late chunking pools chunks");
  if (r.long_overlap < -1 || r.long_overlap >= out.max_tokens)
    invalid(n("long_overlap") + " " + std::to_string(r.long_overlap) + " must be at least 0 and less than " + n("max_tokens") + " (" +
            std::to_string(out.max_tokens) + ")");
  if (r.late_chunking && r.chunk_rule == ChunkRule::Tokens && r.chunk_tokens < 1)
    invalid(n("chunk_tokens") + " " + std::to_string(r.chunk_tokens) + " must be positive");
  if (r.late_chunking && r.chunk_rule == ChunkRule::Separator && r.chunk_separator.empty()) invalid(n("chunk_separator") + " is empty");
  out.long_inputs = r.long_inputs;
  out.long_overlap = r.long_overlap >= 0 ? r.long_overlap : out.max_tokens / 4;
  out.late_chunking = r.late_chunking;
  out.chunk_rule = r.chunk_rule;
  out.chunk_tokens = r.chunk_tokens;
  out.chunk_separator = r.chunk_separator;
  out.causal = d.causal;
}

void check_precision(const Request& r, ResolvedRequest& out, int64_t width, Task task, const FieldNames& n) {
  const std::string name = n("precision") + " " + precision_name(r.precision);
  if (r.precision != Precision::Float32 && task == Task::Rerank) invalid(name + " applies to embeddings, not to rerank scores");
  if (r.precision != Precision::Float32 && out.pooling == Pooling::None)
    invalid(name + " applies to pooled vectors, not to " + n("pooling") + " none");
  const bool ranged = r.precision == Precision::Int8 || r.precision == Precision::Uint8;
  if (ranged && !r.ranges)
    invalid(name + " needs calibration ranges: give " + n("ranges") + " (written by `embed calibrate MODEL texts.txt -o ranges.json`)");
  if (!ranged && r.ranges) invalid(n("ranges") + " apply to " + n("precision") + " int8 and uint8, not " + precision_name(r.precision));
  if (ranged && r.ranges->dims() != width)
    invalid(n("ranges") + " have " + std::to_string(r.ranges->dims()) + " dimensions but the output has " + std::to_string(width) +
            " (calibrate with the same " + n("dimensions") + ")");
  out.finish.precision = r.precision;
  out.finish.ranges = r.ranges;
}

// The default KV-Embedding band: the middle third of the layers (at least one layer).
std::pair<int, int> middle_third(int64_t n_layers) {
  const int begin = static_cast<int>(n_layers / 3);
  return {begin, std::max(begin, static_cast<int>(2 * n_layers / 3) - 1)};
}

void check_kv(const ModelDescription& d, const Request& r, ResolvedRequest& out, Task task, const FieldNames& n) {
  if (!r.kv_embedding) {
    if (r.kv_layers || r.kv_bias) invalid(n("kv_layers") + " and " + n("kv_bias") + " apply with " + n("kv_embedding"));
    return;
  }
  if (task == Task::Rerank) invalid(n("kv_embedding") + " applies to embeddings, not to reranking");
  if (!d.causal) invalid(n("kv_embedding") + " needs a decoder (causal attention); this " + d.arch + " model is bidirectional already");
  if (out.pooling != Pooling::Hybrid && out.pooling != Pooling::Mean && out.pooling != Pooling::Last)
    invalid(n("pooling") + " " + pooling_name(out.pooling) + " is not defined for " + n("kv_embedding") + " (hybrid, mean or last)");
  const auto [first, last] = r.kv_layers.value_or(d.kv_layers.value_or(middle_third(d.n_layers)));
  if (first < 0 || first > last || last >= d.n_layers)
    invalid(n("kv_layers") + " " + std::to_string(first) + "-" + std::to_string(last) + " is not a band inside 0-" + std::to_string(d.n_layers - 1) +
            " for this model");
  const float bias = r.kv_bias.value_or(1.0f);
  if (!std::isfinite(bias)) invalid(n("kv_bias") + " must be a finite number");
  out.kv = KvRouting{first, last, bias};
}

}  // namespace

int64_t pooled_width(const ModelDescription& d, Pooling p) {
  if (p == Pooling::Rank) return d.n_cls_out;
  if (p == Pooling::None) return d.d_model;
  return d.embedding_dim;
}

bool parse_truncation_direction(const std::string& s, TruncationDirection* out) {
  std::string l;
  for (char c : s) l += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  if (l == "right") *out = TruncationDirection::Right;
  else if (l == "left") *out = TruncationDirection::Left;
  else return false;
  return true;
}

bool parse_long_inputs(const std::string& s, LongInputs* out) {
  if (s == "error") *out = LongInputs::Refuse;
  else if (s == "chunk") *out = LongInputs::Chunk;
  else return false;
  return true;
}

bool parse_chunk_rule(const std::string& s, ChunkRule* out) {
  if (s == "tokens") *out = ChunkRule::Tokens;
  else if (s == "sentences") *out = ChunkRule::Sentences;
  else if (s == "separator") *out = ChunkRule::Separator;
  else return false;
  return true;
}

std::string FieldNames::operator()(const std::string& field) const {
  for (const auto& [f, name] : spelled)
    if (f == field) return name;
  return field;
}

// The read-outs besides the pooled row need the model's heads and whole texts in one pass each
// (a sequence's sparse weights and ColBERT vectors are its own tokens' rows, not a mean of windows).
static void check_outputs(const ModelDescription& d, const Request& r, ResolvedRequest& out, Task task, const FieldNames& n) {
  const Outputs& o = r.outputs;
  out.outputs = o;
  if (!o.sparse && !o.colbert) {
    if (!o.dense) invalid(n("outputs") + ": none asked for (dense, sparse, colbert)");
    return;
  }
  if (task == Task::Rerank) invalid(n("outputs") + " sparse and colbert apply to embedding, not to reranking");
  if (o.sparse && !d.sparse_head)
    invalid(d.path + " has no sparse head (BGE-M3's sparse_linear.pt as cls.sparse, or a SPLADE model's MLM head as mlm.*), so no sparse output");
  if (o.colbert && d.colbert_dim == 0)
    invalid(d.path + " has no ColBERT head (cls.colbert: BGE-M3's colbert_linear.pt), so no colbert output");
  if (r.long_inputs != LongInputs::Refuse || r.late_chunking || r.kv_embedding)
    invalid("sparse and colbert outputs take whole texts: leave out " + n("long_inputs") + ", " + n("late_chunking") + " and " +
            n("kv_embedding"));
  if (r.precision != Precision::Float32) invalid("sparse and colbert outputs are float: leave out " + n("precision"));
}

ResolvedRequest resolve_request(const ModelDescription& d, const Request& r, Task task, const FieldNames& n) {
  ResolvedRequest out;
  out.task = task;
  if (task == Task::Rerank) {
    if (d.n_cls_out == 0) invalid(d.path + " has no classifier head (cls / cls.output): it is not a reranker");
    if (r.pooling && *r.pooling != Pooling::Rank)
      invalid(n("pooling") + " " + pooling_name(*r.pooling) + " does not score pairs: reranking uses rank pooling");
    if (r.prompt || !r.prompt_name.empty() || r.prompt_template)
      invalid(n("prompt") + ", " + n("prompt_name") + " and " + n("prompt_template") + " apply to embedding, not to reranking");
    out.pooling = Pooling::Rank;
  } else if (r.late_chunking) {
    // A chunk's vector is the mean of its tokens (Jina's late chunking); other poolings have no
    // meaning over a span.
    if (r.pooling && *r.pooling != Pooling::Mean)
      invalid(n("pooling") + " " + pooling_name(*r.pooling) + " does not apply to " + n("late_chunking") + ", which mean-pools each chunk's tokens");
    out.pooling = Pooling::Mean;
  } else {
    out.pooling = r.pooling.value_or(r.kv_embedding ? Pooling::Hybrid : d.default_pooling);
  }
  check_kv(d, r, out, task, n);
  if (out.pooling == Pooling::Rank && d.n_cls_out == 0)
    invalid(n("pooling") + " rank needs a classifier head (cls / cls.output tensors), which this model does not have");
  if (r.exclude_special && out.pooling != Pooling::Mean)
    invalid(n("exclude_special") + " applies to mean pooling only, not " + pooling_name(out.pooling));
  out.exclude_special = r.exclude_special;
  out.hidden_states = r.hidden_states;

  out.finish.normalize = r.normalize.value_or(out.pooling == Pooling::Rank ? -1 : 2);
  if (out.finish.normalize < -1)
    invalid(n("normalize") + " " + std::to_string(out.finish.normalize) + " is not -1 (none), 0 (max-abs), 1 (L1), 2 (L2) or a p > 2");
  const int64_t width = pooled_width(d, out.pooling);
  if (r.dimensions && (*r.dimensions < 1 || *r.dimensions > width))
    invalid(n("dimensions") + " " + std::to_string(*r.dimensions) + " is outside 1.." + std::to_string(width) + " for this model");
  out.finish.dims = r.dimensions.value_or(0);
  check_precision(r, out, r.dimensions.value_or(width), task, n);

  if (r.max_tokens < 0) invalid(n("max_tokens") + " " + std::to_string(r.max_tokens) + " must be positive");
  if (r.max_tokens > d.n_ctx)
    invalid(n("max_tokens") + " " + std::to_string(r.max_tokens) + " is larger than the model's context length " + std::to_string(d.n_ctx));
  out.max_tokens = r.max_tokens > 0 ? r.max_tokens : d.n_ctx;
  out.truncate = r.truncate;
  out.truncation_direction = r.truncation_direction;
  out.split_special = r.split_special;
  if (task == Task::Embed && r.prompt_template) {
    const std::string& t = *r.prompt_template;
    if (r.prompt || !r.prompt_name.empty())
      invalid("give either " + n("prompt_template") + " or a prompt (" + n("prompt") + ", " + n("prompt_name") + "), not both");
    const size_t slot = t.find("{text}");
    if (slot == std::string::npos || t.find("{text}", slot + 1) != std::string::npos)
      invalid(n("prompt_template") + " must contain {text} exactly once: '" + t + "'");
    out.prompt = t.substr(0, slot);
    out.prompt_suffix = t.substr(slot + 6);
  } else if (task == Task::Embed) {
    out.prompt = resolve_prompt(d.prompts, r.prompt, r.prompt_name);
  }
  resolve_long_inputs(d, r, task, out, n);
  check_outputs(d, r, out, task, n);
  return out;
}

}  // namespace embed
