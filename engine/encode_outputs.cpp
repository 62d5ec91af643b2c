// Context::encode: the dense row and the sparse / ColBERT read-outs of the same forward pass,
// through the executor like every request (Request::outputs; RowAssembly reads the heads).
#include <array>

#include "engine/api.h"
#include "engine/executor.h"
#include "engine/pipeline.h"

namespace embed {

Result<MultiOutput> Context::encode(const std::vector<std::string>& texts, const Outputs& outputs, const Request& r,
                                    const RunSettings& s) {
  if (r.hidden_states) return Status{ErrorKind::InvalidArgument, "hidden_states applies to Context::run, not to encode", -1};
  Request with_outputs = r;
  with_outputs.outputs = outputs;
  Result<Embeddings> e = embed(texts, with_outputs, s);
  if (!e) return e.error();
  MultiOutput out;
  out.sparse = std::move(e.value().sparse);
  out.colbert = std::move(e.value().colbert);
  out.dense = std::move(e).value();
  if (!outputs.dense) {  // the pooled rows were computed with the pass; not asked for, not returned
    out.dense.rows = out.dense.cols = 0;
    std::vector<float>().swap(out.dense.data);
  }
  return out;
}

Result<std::vector<M3Scores>> Context::score_readouts(const std::string& query, const std::vector<std::string>& documents,
                                                      const std::array<double, 3>& weights, const Request& r, const RunSettings& s) {
  if (!(weights[0] >= 0 && weights[1] >= 0 && weights[2] >= 0 && weights[0] + weights[1] > 0 && weights[0] + weights[1] + weights[2] > 0))
    return Status{ErrorKind::InvalidArgument, "score weights (dense, sparse, colbert) must be >= 0, with dense + sparse > 0", -1};
  if (r.normalize && *r.normalize != 2)
    return Status{ErrorKind::InvalidArgument, "scores read L2-normalized dense rows (compute_score's): leave out normalize", -1};
  std::vector<std::string> texts;
  texts.reserve(documents.size() + 1);
  texts.push_back(query);
  texts.insert(texts.end(), documents.begin(), documents.end());
  Request all = r;
  all.outputs = Outputs{true, true, true};
  Result<Embeddings> e = embed(texts, all, s);
  if (!e) {
    Status st = e.error();
    if (st.index >= 0) st.index -= 1;  // -1: the query; documents from 0
    return st;
  }
  return m3_scores(e.value(), weights.data());
}

}  // namespace embed
