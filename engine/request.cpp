// resolve_request: every check of a Request against a model, in one place, with one set of
// messages for every front end.
#include "engine/request.h"

#include "engine/api.h"
#include "engine/prompts.h"

namespace embed {
namespace {

[[noreturn]] void invalid(const std::string& message) { fail(ErrorKind::InvalidArgument, message); }

// long_inputs, long_overlap and late chunking (after pooling and max_tokens are resolved).
void resolve_long_inputs(const ModelDescription& d, const Request& r, Task task, ResolvedRequest& out) {
  const bool chunk = r.long_inputs == LongInputs::Chunk;
  if ((chunk || r.late_chunking) && task != Task::Embed)
    invalid(std::string(chunk ? "long_inputs chunk" : "late_chunking") + " applies to embedding, not to reranking");
  if (chunk && r.truncate) invalid("long_inputs chunk keeps all of a long text: give it or truncate, not both");
  if (chunk && r.late_chunking) invalid("long_inputs chunk and late_chunking both split long texts: give one (late_chunking windows long texts itself)");
  if (chunk && (out.pooling == Pooling::None || out.pooling == Pooling::Rank))
    invalid(std::string("long_inputs chunk combines pooled vectors, which pooling ") + pooling_name(out.pooling) + " does not give");
  if (r.late_chunking && r.truncate) invalid("late_chunking encodes whole texts (in windows past max_tokens): truncate does not apply");
  if (r.late_chunking && r.exclude_special) invalid("exclude_special does not apply to late_chunking: chunks never hold special tokens");
  if (r.long_overlap < -1 || r.long_overlap >= out.max_tokens)
    invalid("long_overlap " + std::to_string(r.long_overlap) + " must be at least 0 and less than max_tokens (" +
            std::to_string(out.max_tokens) + ")");
  if (r.late_chunking && r.chunk_rule == ChunkRule::Tokens && r.chunk_tokens < 1)
    invalid("chunk_tokens " + std::to_string(r.chunk_tokens) + " must be positive");
  if (r.late_chunking && r.chunk_rule == ChunkRule::Separator && r.chunk_separator.empty()) invalid("chunk_separator is empty");
  out.long_inputs = r.long_inputs;
  out.long_overlap = r.long_overlap >= 0 ? r.long_overlap : out.max_tokens / 4;
  out.late_chunking = r.late_chunking;
  out.chunk_rule = r.chunk_rule;
  out.chunk_tokens = r.chunk_tokens;
  out.chunk_separator = r.chunk_separator;
  out.causal = d.causal;
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

ResolvedRequest resolve_request(const ModelDescription& d, const Request& r, Task task) {
  ResolvedRequest out;
  out.task = task;
  if (task == Task::Rerank) {
    if (d.n_cls_out == 0) invalid(d.path + " has no classifier head (cls / cls.output): it is not a reranker");
    if (r.pooling && *r.pooling != Pooling::Rank)
      invalid(std::string("pooling ") + pooling_name(*r.pooling) + " does not score pairs: reranking uses rank pooling");
    if (r.prompt || !r.prompt_name.empty()) invalid("prompt and prompt_name apply to embedding, not to reranking");
    out.pooling = Pooling::Rank;
  } else if (r.late_chunking) {
    // A chunk's vector is the mean of its tokens (Jina's late chunking); other poolings have no
    // meaning over a span.
    if (r.pooling && *r.pooling != Pooling::Mean)
      invalid(std::string("pooling ") + pooling_name(*r.pooling) + " does not apply to late_chunking, which mean-pools each chunk's tokens");
    out.pooling = Pooling::Mean;
  } else {
    out.pooling = r.pooling.value_or(d.default_pooling);
  }
  if (out.pooling == Pooling::Rank && d.n_cls_out == 0)
    invalid("pooling rank needs a classifier head (cls / cls.output tensors), which this model does not have");
  if (r.exclude_special && out.pooling != Pooling::Mean)
    invalid(std::string("exclude_special applies to mean pooling only, not ") + pooling_name(out.pooling));
  out.exclude_special = r.exclude_special;
  out.hidden_states = r.hidden_states;

  out.finish.normalize = r.normalize.value_or(out.pooling == Pooling::Rank ? -1 : 2);
  if (out.finish.normalize < -1)
    invalid("normalize " + std::to_string(out.finish.normalize) + " is not -1 (none), 0 (max-abs), 1 (L1), 2 (L2) or a p > 2");
  const int64_t width = pooled_width(d, out.pooling);
  if (r.dimensions < 0 || r.dimensions > width)
    invalid("dimensions " + std::to_string(r.dimensions) + " is outside 1.." + std::to_string(width) + " for this model");
  out.finish.dims = r.dimensions;

  if (r.max_tokens < 0) invalid("max_tokens " + std::to_string(r.max_tokens) + " must be positive");
  if (r.max_tokens > d.n_ctx)
    invalid("max_tokens " + std::to_string(r.max_tokens) + " is larger than the model's context length " + std::to_string(d.n_ctx));
  out.max_tokens = r.max_tokens > 0 ? r.max_tokens : d.n_ctx;
  out.truncate = r.truncate;
  out.truncation_direction = r.truncation_direction;
  out.split_special = r.split_special;
  if (task == Task::Embed) out.prompt = resolve_prompt(d.prompts, r.prompt, r.prompt_name);
  resolve_long_inputs(d, r, task, out);
  return out;
}

}  // namespace embed
