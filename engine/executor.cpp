// The executor: pass planning for one request, running a pass (whole or in pieces), handing its
// rows to the requests' assemblies.
#include "engine/executor.h"

#include <algorithm>
#include <numeric>

namespace embed {

std::vector<std::vector<size_t>> plan_batches(const std::vector<SequenceInput>& seqs, int64_t budget, int64_t max_seqs) {
  std::vector<size_t> order(seqs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return seqs[a].ids.size() > seqs[b].ids.size(); });
  std::vector<std::vector<size_t>> batches;
  int64_t used = 0;
  for (size_t i : order) {
    const int64_t n = static_cast<int64_t>(seqs[i].ids.size());
    if (batches.empty() || used + n > budget || (max_seqs > 0 && static_cast<int64_t>(batches.back().size()) >= max_seqs)) {
      batches.emplace_back();
      used = 0;
    }
    batches.back().push_back(i);
    used += n;
  }
  return batches;
}

bool Executor::runs_in_pieces(const PassOptions& pass) const {
  // Each layer's last-token state, and the read-outs, are read in the pass that holds the whole sequence.
  return runner_.model().info().causal && !pass.kv.on() && !pass.keep_layer_last && !pass.sparse_readout && !pass.colbert_readout;
}

void Executor::run_pass(std::vector<PassInput>& inputs, const PassOptions& pass, int64_t piece) {
  if (inputs.empty()) return;
  const bool long_one =
      inputs.size() == 1 && runs_in_pieces(pass) && static_cast<int64_t>(inputs[0].input.ids.size()) > piece;
  RunOutput o;
  if (long_one) {
    o = runner_.run_in_pieces(inputs[0].input, pass, piece);
  } else {
    std::vector<SequenceInput> seqs;
    seqs.reserve(inputs.size());
    for (PassInput& in : inputs) seqs.push_back(std::move(in.input));
    o = runner_.run(seqs, pass);
  }
  for (size_t j = 0; j < inputs.size(); j++) inputs[j].rows->add(inputs[j].seq, o, j);
}

Embeddings Executor::run(const ResolvedRequest& r, Tokenized t, const RunSettings& s) {
  RowAssembly rows(r, t, readout_);
  run(std::move(t.seqs), pass_options(r), s, rows);
  return rows.finish(runner_);
}

void Executor::run(std::vector<SequenceInput> seqs, const PassOptions& pass, const RunSettings& s, PassSink& sink) {
  const int64_t piece = s.batch_tokens > 0 ? s.batch_tokens : kDefaultBatchTokens;
  int64_t longest = 0;
  for (const SequenceInput& q : seqs) longest = std::max(longest, static_cast<int64_t>(q.ids.size()));
  const int64_t budget = runs_in_pieces(pass) ? piece : std::max(longest, piece);
  size_t done = 0;
  for (const std::vector<size_t>& batch : plan_batches(seqs, budget, s.batch_inputs)) {
    std::vector<PassInput> inputs;
    inputs.reserve(batch.size());
    for (size_t i : batch) inputs.push_back(PassInput{&sink, i, std::move(seqs[i])});
    run_pass(inputs, pass, piece);
    done += batch.size();
    if (s.progress) s.progress(done, seqs.size());
  }
}

}  // namespace embed
