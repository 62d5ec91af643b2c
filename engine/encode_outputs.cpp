// Context::encode: the dense row and the sparse / ColBERT read-outs of the same forward pass.
// Tokenization, batching and the dense row's finish are embed()'s (engine/pipeline.h); the pass
// also keeps the final hidden states, from which engine/readout.h computes the other two.
#include <algorithm>

#include "engine/api.h"
#include "engine/executor.h"
#include "engine/pipeline.h"
#include "engine/row_assembly.h"

namespace embed {

Result<MultiOutput> Context::encode(const std::vector<std::string>& texts, const Outputs& outputs, const Request& r,
                                    const RunSettings& s) {
  try {
    const ModelDescription& d = model_->describe();
    const ReadoutHeads* heads = model_->readout_heads();
    if (!outputs.dense && !outputs.sparse && !outputs.colbert) fail(ErrorKind::InvalidArgument, "no output asked for (dense, sparse, colbert)");
    if (outputs.sparse && !(heads && heads->has_sparse()))
      fail(ErrorKind::InvalidArgument, d.path + " has no sparse head (cls.sparse: BGE-M3's sparse_linear.pt), so no sparse output");
    if (outputs.colbert && !(heads && heads->has_colbert()))
      fail(ErrorKind::InvalidArgument, d.path + " has no ColBERT head (cls.colbert: BGE-M3's colbert_linear.pt), so no colbert output");
    if (r.hidden_states) fail(ErrorKind::InvalidArgument, "hidden_states applies to Context::run, not to encode");
    if (r.long_inputs != LongInputs::Refuse || r.late_chunking || r.kv_embedding)
      fail(ErrorKind::InvalidArgument, "sparse and colbert outputs take whole texts: leave out long_inputs, late_chunking and kv_embedding");
    if (r.precision != Precision::Float32) fail(ErrorKind::InvalidArgument, "sparse and colbert outputs are float: leave out precision");
    const ResolvedRequest rr = resolve_request(d, r, Task::Embed);
    Tokenized t = tokenize_texts(*model_, rr, texts);
    const tok::Tokenizer& tk = model_->tokenizer();
    // FlagEmbedding's unused_tokens: CLS, EOS, PAD, UNK (XLM-R: <s>, </s>, <pad>, <unk>).
    std::vector<int32_t> dropped;
    for (int32_t id : {tk.cls() >= 0 ? tk.cls() : tk.bos(), tk.eos() >= 0 ? tk.eos() : tk.sep(), tk.pad(), tk.unk()})
      if (id >= 0) dropped.push_back(id);

    MultiOutput out;
    const size_t n = t.seqs.size();
    if (outputs.sparse) out.sparse.resize(n);
    if (outputs.colbert) out.colbert.resize(n);
    Embeddings& e = out.dense;
    e.truncated = t.truncated;
    e.warnings = t.warnings;
    for (const SequenceInput& q : t.seqs) e.n_tokens.push_back(static_cast<int32_t>(q.ids.size()));
    PassOptions pass = pass_options(rr);
    pass.keep_hidden = outputs.sparse || outputs.colbert;
    const int64_t budget = s.batch_tokens > 0 ? s.batch_tokens : kDefaultBatchTokens;
    int64_t longest = 0;
    for (const SequenceInput& q : t.seqs) longest = std::max(longest, static_cast<int64_t>(q.ids.size()));
    size_t done = 0;
    std::vector<float> pooled;
    for (const std::vector<size_t>& batch : plan_batches(t.seqs, std::max(longest, budget), s.batch_inputs)) {
      std::vector<SequenceInput> part;
      for (size_t i : batch) part.push_back(t.seqs[i]);
      const RunOutput o = runner_->run(part, pass);
      if (outputs.dense) {
        if (pooled.empty()) {
          e.cols = finished_width(o.cols, rr.finish);
          e.rows = static_cast<int64_t>(n);
          e.data.resize(static_cast<size_t>(e.rows * e.cols));
        }
        pooled.resize(static_cast<size_t>(e.cols));
        for (size_t j = 0; j < batch.size(); j++) {
          finish_rows(o.pooled.data() + static_cast<int64_t>(j) * o.cols, 1, o.cols, rr.finish, pooled.data());
          std::copy(pooled.begin(), pooled.end(), e.data.begin() + static_cast<int64_t>(batch[j]) * e.cols);
        }
      }
      for (size_t j = 0; j < batch.size(); j++) {
        const float* h = o.hidden.data() + static_cast<int64_t>(o.cu_seqlens[j]) * d.d_model;
        const int64_t len = o.cu_seqlens[j + 1] - o.cu_seqlens[j];
        const size_t i = batch[j];
        if (outputs.sparse) out.sparse[i] = heads->sparse(h, t.seqs[i].ids.data(), len, dropped);
        if (outputs.colbert) out.colbert[i] = heads->colbert(h, len);
      }
      for (const std::string& w : o.warnings)
        if (std::find(e.warnings.begin(), e.warnings.end(), w) == e.warnings.end()) e.warnings.push_back(w);
      done += batch.size();
      if (s.progress) s.progress(done, n);
    }
    return out;
  } catch (const InputError& x) {
    return Status{x.kind(), x.what(), x.index()};
  } catch (const Error& x) {
    return Status{x.kind(), x.what(), -1};
  } catch (const std::bad_alloc&) {
    return Status{ErrorKind::OutOfMemory, "out of memory", -1};
  }
}

}  // namespace embed
