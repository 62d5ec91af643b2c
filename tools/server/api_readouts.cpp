// The routes of read-outs besides the pooled row, on a model with BGE-M3's heads (engine/readout.h):
// TEI's POST /embed_sparse (per input, its non-zero token weights as [{"index": id, "value": w}]:
// BGE-M3's sparse head or a SPLADE model's MLM head,
// ascending id) and POST /embed_multi_vector (per input, one ColBERT vector per token after CLS).
// Both take TEI's /embed body (inputs, truncate, truncation_direction, prompt_name; with several
// models served, "model" picks one) and go through
// the scheduler and executor like every request: the read-outs of the same pass as /embed's row.
#include <charconv>

#include "tools/server/api_common.h"

namespace embed::server {
void Api::embed_readout(const std::shared_ptr<Call>& c, bool sparse) {
  const json& b = c->body;
  string_field(b, "model");  // type-checked; the Router chose this model by it
  const ModelDescription& d = model_->describe();
  // TEI answers a model without SPLADE pooling with 424 (a backend that cannot do it), not a
  // validation error: the request is well formed, the model is the wrong kind.
  if (sparse && !d.sparse_head)
    throw ApiError{424, "Backend", "this model has no sparse head (BGE-M3's sparse_linear.pt as cls.sparse, or a SPLADE model's MLM head as mlm.*): no /embed_sparse", ""};
  if (!sparse && d.colbert_dim == 0)
    throw ApiError{424, "Backend", "this model has no ColBERT head (BGE-M3's colbert_linear.pt, converted as cls.colbert): no /embed_multi_vector",
                   ""};
  Request r = base_request(Task::Embed);
  drop_pooled_row_defaults(r);  // only the read-out is answered
  read_truncation(b, r);
  if (auto p = string_field(b, "prompt_name")) r.prompt_name = *p;
  r.outputs = Outputs{false, sparse, !sparse};
  ResolvedRequest rr;
  try {
    rr = resolve_request(d, r, Task::Embed);
  } catch (const Error& e) {
    throw ApiError{422, "Validation", e.what(), "", -1};
  }
  Inputs in = parse_inputs(b, "inputs", config_.max_client_batch_size);
  compute(c, rr, "inputs", "", std::move(in), [sparse](const Embeddings& e) {
    std::string s = "[";
    const size_t n = sparse ? e.sparse.size() : e.colbert.size();
    char buf[32];
    for (size_t i = 0; i < n; i++) {
      if (i) s += ',';
      s += '[';
      if (sparse) {
        const SparseRow& row = e.sparse[i];
        for (size_t k = 0; k < row.ids.size(); k++) {
          if (k) s += ',';
          s += "{\"index\":" + std::to_string(row.ids[k]) + ",\"value\":";
          s.append(buf, std::to_chars(buf, buf + sizeof buf, row.weights[k]).ptr);
          s += '}';
        }
      } else {
        const MultiVectorRow& row = e.colbert[i];
        for (int64_t t = 0; t < row.rows; t++) {
          if (t) s += ',';
          append_floats(s, row.row(t), row.cols);
        }
      }
      s += ']';
    }
    HttpResponse res;
    res.body = s + "]";
    return res;
  });
}

}  // namespace embed::server
