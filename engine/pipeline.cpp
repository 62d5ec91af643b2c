// Tokenization and limits per request: texts, token ids and pairs into sequences.
#include "engine/pipeline.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/api.h"
#include "engine/long_text.h"
#include "tokenizer/tokenizer.h"

namespace embed {
namespace {

void add_warning(std::vector<std::string>& out, const std::string& w) {
  if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
}

// The template with every {query} and {document} filled in, and the byte ranges the caller's text
// occupies in the result (for split_special, which applies to those ranges only).
std::string fill_template(const std::string& tmpl, const std::string& query, const std::string& doc, std::vector<tok::TextRange>* user) {
  std::string out;
  for (size_t at = 0; at < tmpl.size();) {
    const size_t q = tmpl.find("{query}", at), d = tmpl.find("{document}", at);
    const size_t next = std::min(q, d);
    if (next == std::string::npos) {
      out.append(tmpl, at, std::string::npos);
      break;
    }
    out.append(tmpl, at, next - at);
    const std::string& text = next == q ? query : doc;
    user->push_back({out.size(), out.size() + text.size()});
    out += text;
    at = next + (next == q ? 7 : 10);
  }
  return out;
}

const tok::Tokenizer& tokenizer_of(const Model& m) {
  if (!m.has_tokenizer()) fail(ErrorKind::Unsupported, m.describe().path + " has no tokenizer metadata: give token ids instead of text");
  return m.tokenizer();
}

// Runs `body` for input i, turning any error into an InputError naming i.
template <class F>
void for_input(size_t i, F&& body) {
  try {
    body();
  } catch (const InputError&) {
    throw;
  } catch (const Error& e) {
    throw InputError(e.kind(), static_cast<int64_t>(i), e.what());
  }
}

// The one rule of every front end (the command, the server, Python, the C++ API): an empty text
// is an error naming it, never the vector of the special tokens alone.
void refuse_empty(size_t i, const std::string& text, const char* what) {
  if (text.empty())
    throw InputError(ErrorKind::InvalidArgument, static_cast<int64_t>(i), std::string(what) + " " + std::to_string(i) + " is empty");
}

[[noreturn]] void too_long(size_t i, const char* what, size_t n, int64_t limit) {
  throw InputError(ErrorKind::InvalidArgument, static_cast<int64_t>(i),
                   std::string(what) + " has " + std::to_string(n) + " tokens, more than the limit of " + std::to_string(limit) + " tokens",
                   StatusCode::InputTooLong);
}

void summarize_truncation(Tokenized& t, size_t n_inputs, int64_t limit, const char* what) {
  if (t.truncated)
    t.warnings.push_back(std::to_string(t.truncated) + " of " + std::to_string(n_inputs) + " " + what + " were longer than " +
                         std::to_string(limit) + " tokens and were truncated");
}

// The template prompt of a yes/no reranker (Qwen3-Reranker), its document shortened until the
// prompt fits when truncating: the template's special-token text is always parsed; the query's
// and document's follow split_special.
tok::Encoding encode_rerank_template(const Model& m, const ResolvedRequest& r, const std::string& query, std::string doc, size_t i,
                                     bool* truncated) {
  const tok::Tokenizer& tk = m.tokenizer();
  tok::EncodeOptions eo;
  eo.add_special = false;
  eo.split_special = r.split_special;
  for (;;) {
    std::vector<tok::TextRange> user;
    const std::string prompt = fill_template(m.rerank_template(), query, doc, &user);
    tok::Encoding e = tk.encode_template(prompt, user, eo);
    const int64_t n = static_cast<int64_t>(e.ids.size());
    if (n <= r.max_tokens) return e;
    if (!r.truncate || doc.empty()) too_long(i, "query + document", e.ids.size(), r.max_tokens);
    *truncated = true;
    // Drop as many document tokens as the prompt is over the limit, at the request's side.
    const tok::Encoding de = tk.encode(doc, tok::EncodeOptions{false, r.split_special, 0, tok::Overflow::Truncate});
    const int64_t nd = static_cast<int64_t>(de.ids.size());
    const int64_t keep = std::max<int64_t>(0, nd - (n - r.max_tokens));
    if (keep == 0) doc.clear();
    else if (r.truncation_direction == TruncationDirection::Right) doc = doc.substr(0, de.end[static_cast<size_t>(keep - 1)]);
    else doc = doc.substr(de.begin[static_cast<size_t>(nd - keep)]);
  }
}

}  // namespace

Tokenized tokenize_texts(const Model& m, const ResolvedRequest& r, const std::vector<std::string>& texts,
                         const std::vector<std::vector<CharSpan>>* chunk_spans) {
  const tok::Tokenizer& tk = tokenizer_of(m);
  if (chunk_spans && !r.late_chunking) fail(ErrorKind::InvalidArgument, "chunk spans apply to late_chunking only");
  if (chunk_spans && chunk_spans->size() != texts.size())
    fail(ErrorKind::InvalidArgument, "chunk spans are given for " + std::to_string(chunk_spans->size()) + " texts, not " + std::to_string(texts.size()));
  Tokenized out;
  out.seqs.reserve(texts.size());
  const bool parts = r.late_chunking || r.long_inputs == LongInputs::Chunk;
  if (r.long_inputs == LongInputs::Chunk) out.n_rows = static_cast<int64_t>(texts.size());
  for (size_t i = 0; i < texts.size(); i++)
    for_input(i, [&] {
      refuse_empty(i, texts[i], "text");
      // The prompt (or template) is the model's or the caller's own: split_special applies to the text only.
      tok::EncodeOptions eo;
      eo.split_special = r.split_special;
      if (r.late_chunking) {
        const TextChunks c = plan_chunks(texts[i], r, chunk_spans ? &(*chunk_spans)[i] : nullptr);
        const size_t text_end = r.prompt.size() + c.text.size();
        const tok::Encoding e = tk.encode_template(r.prompt + c.text + r.prompt_suffix, {{r.prompt.size(), text_end}}, eo);
        for (const std::string& w : e.warnings) add_warning(out.warnings, w);
        add_late_chunks(r, i, e, {r.prompt.size(), text_end}, c, out);
        out.input_tokens.push_back(static_cast<int32_t>(e.ids.size()));
        return;
      }
      const size_t text_end = r.prompt.size() + texts[i].size();
      tok::Encoding e = tk.encode_template(r.prompt + texts[i] + r.prompt_suffix, {{r.prompt.size(), text_end}}, eo);
      if (e.ids.empty()) throw InputError(ErrorKind::InvalidArgument, static_cast<int64_t>(i), "text " + std::to_string(i) + " gives no tokens");
      if (parts) out.input_tokens.push_back(static_cast<int32_t>(e.ids.size()));
      if (r.long_inputs == LongInputs::Chunk && static_cast<int64_t>(e.ids.size()) > r.max_tokens) {
        for (const std::string& w : e.warnings) add_warning(out.warnings, w);
        add_windows(r, i, e, {r.prompt.size(), text_end}, out);
        return;
      }
      if (parts) out.parts.push_back({RowPart{static_cast<int64_t>(i), 0, 1, 1.0f}});
      if (static_cast<int64_t>(e.ids.size()) > r.max_tokens) {
        if (!r.truncate) too_long(i, "text", e.ids.size(), r.max_tokens);
        // Asked for: one summary warning rather than the tokenizer's note per text.
        const size_t notes = e.warnings.size();
        tk.truncate(e, static_cast<size_t>(r.max_tokens), r.truncation_direction);
        e.warnings.resize(notes);
        out.truncated++;
      }
      for (const std::string& w : e.warnings) add_warning(out.warnings, w);
      out.seqs.push_back(SequenceInput{std::move(e.ids), std::move(e.type_ids), std::move(e.special)});
    });
  summarize_truncation(out, texts.size(), r.max_tokens, "texts");
  return out;
}

Tokenized sequences_from_ids(const Model& m, const ResolvedRequest& r, std::vector<std::vector<int32_t>> ids) {
  if (r.exclude_special) fail(ErrorKind::InvalidArgument, "exclude_special needs text input (token ids carry no special-token mask)");
  if (r.late_chunking || r.long_inputs == LongInputs::Chunk)
    fail(ErrorKind::InvalidArgument, std::string(r.late_chunking ? "late_chunking" : "long_inputs chunk") +
                                         " needs text input (token ids carry no text to cut or special tokens to repeat)");
  const int64_t n_vocab = m.describe().n_vocab;
  Tokenized out;
  out.seqs.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); i++) {
    std::vector<int32_t>& v = ids[i];
    const auto at = static_cast<int64_t>(i);
    if (v.empty()) throw InputError(ErrorKind::InvalidArgument, at, "token list " + std::to_string(i) + " is empty");
    for (int32_t id : v)
      if (id < 0 || id >= n_vocab)
        throw InputError(ErrorKind::InvalidArgument, at, "token id " + std::to_string(id) + " is outside the vocabulary (size " +
                                                             std::to_string(n_vocab) + ")");
    const int64_t n = static_cast<int64_t>(v.size());
    if (n > r.max_tokens) {
      if (!r.truncate) too_long(i, "token list", v.size(), r.max_tokens);
      if (r.truncation_direction == TruncationDirection::Right) v.resize(static_cast<size_t>(r.max_tokens));
      else v.erase(v.begin(), v.begin() + (n - r.max_tokens));
      out.truncated++;
    }
    out.seqs.push_back(SequenceInput{std::move(v), {}, {}});
  }
  summarize_truncation(out, ids.size(), r.max_tokens, "token lists");
  return out;
}

Tokenized tokenize_pairs(const Model& m, const ResolvedRequest& r, const std::string& query, const std::vector<std::string>& docs) {
  const tok::Tokenizer& tk = tokenizer_of(m);
  if (query.empty()) fail(ErrorKind::InvalidArgument, "the query is empty");
  Tokenized out;
  out.seqs.reserve(docs.size());
  for (size_t i = 0; i < docs.size(); i++)
    for_input(i, [&] {
      refuse_empty(i, docs[i], "document");
      tok::Encoding e;
      bool truncated = false;
      if (!m.rerank_template().empty()) {
        e = encode_rerank_template(m, r, query, docs[i], i, &truncated);
      } else {
        tok::EncodeOptions eo;
        eo.split_special = r.split_special;
        e = tk.encode_pair(query, docs[i], eo);
        if (static_cast<int64_t>(e.ids.size()) > r.max_tokens) {
          if (!r.truncate) too_long(i, "query + document", e.ids.size(), r.max_tokens);
          tk.truncate(e, static_cast<size_t>(r.max_tokens), r.truncation_direction);
          truncated = true;
        }
      }
      out.truncated += truncated;
      // A model without a token-type table (ModernBERT) reads both segments alike: its HF pair
      // template gives every token type 0, which is what the forward sees anyway.
      if (!m.gguf_file().find_tensor("token_types.weight")) std::fill(e.type_ids.begin(), e.type_ids.end(), 0);
      out.seqs.push_back(SequenceInput{std::move(e.ids), std::move(e.type_ids), std::move(e.special)});
    });
  summarize_truncation(out, docs.size(), r.max_tokens, "query + document pairs");
  return out;
}

PassOptions pass_options(const ResolvedRequest& r) {
  PassOptions p;
  p.pooling = r.late_chunking ? Pooling::None : r.pooling;  // late chunking pools spans of the token rows
  p.exclude_special = r.exclude_special;
  p.keep_hidden = r.hidden_states;
  // The heads run in the pass, on the backend (ReadoutHeads::compute); RowAssembly finishes the rows.
  p.sparse_readout = r.outputs.sparse;
  p.colbert_readout = r.outputs.colbert;
  p.kv = r.kv;
  return p;
}

}  // namespace embed
