// Row assembly: direct rows, weighted means of parts, the row finish and quantization.
#include "engine/row_assembly.h"

#include <algorithm>
#include <cmath>

#include "engine/quantize.h"

namespace embed {

void finish_rows(const float* in, int64_t rows, int64_t cols, const RowFinish& f, float* out) {
  const int64_t dims = finished_width(cols, f);
  EMBED_CHECK(dims > 0 && dims <= cols, "finish_rows: dims outside 1..cols");
  const int p = f.normalize;
  for (int64_t r = 0; r < rows; r++) {
    const float* x = in + r * cols;
    float* y = out + r * dims;
    double norm = 1.0;
    if (p == 0) {
      double m = 0;
      for (int64_t i = 0; i < dims; i++) m = std::max(m, std::fabs(static_cast<double>(x[i])));
      norm = m / 32760.0;
    } else if (p == 2) {
      double s = 0;
      for (int64_t i = 0; i < dims; i++) s += static_cast<double>(x[i]) * x[i];
      norm = std::sqrt(s);
    } else if (p > 0) {
      double s = 0;
      for (int64_t i = 0; i < dims; i++) s += std::pow(std::fabs(static_cast<double>(x[i])), p);
      norm = std::pow(s, 1.0 / p);
    }
    const double inv = norm > 0 ? 1.0 / norm : 0.0;
    // Forward in place is safe: y[i] is written after x[i] is read, and y <= x.
    for (int64_t i = 0; i < dims; i++) y[i] = static_cast<float>(x[i] * inv);
  }
}

void quantize_output(Embeddings& e, const RowFinish& f) {
  e.precision = f.precision;
  if (f.precision == Precision::Float32) return;
  e.code_bytes = code_bytes(f.precision, e.cols);
  e.codes.resize(static_cast<size_t>(e.rows * e.code_bytes));
  quantize_rows(e.data.data(), e.rows, e.cols, f.precision, f.ranges.get(), e.codes.data());
  std::vector<float>().swap(e.data);
}

RowAssembly::RowAssembly(const ResolvedRequest& r, const Tokenized& t, const Readout* readout)
    : request_(r),
      readout_(readout),
      n_seqs_(t.seqs.size()),
      combined_(!t.parts.empty()),
      per_token_(pass_options(r).pooling == Pooling::None) {
  out_.warnings = t.warnings;
  out_.truncated = t.truncated;
  const Outputs& want = r.outputs;
  if (want.sparse || want.colbert) {
    // resolve_request refuses these outputs with windows (parts) and on a model without the heads.
    EMBED_CHECK(!combined_ && readout_, "RowAssembly: sparse / colbert outputs need whole texts and the model's heads");
    if (want.sparse) {
      out_.sparse.resize(n_seqs_);
      for (const SequenceInput& q : t.seqs) ids_.push_back(q.ids);
    }
    if (want.colbert) out_.colbert.resize(n_seqs_);
  }
  if (combined_) {
    parts_ = t.parts;
    part_rows_.resize(n_seqs_);
    out_.rows = t.n_rows;
    out_.n_tokens = t.input_tokens;
    out_.row_offsets = t.row_offsets;
    out_.spans = t.spans;
    return;
  }
  if (per_token_) out_.row_offsets.push_back(0);
  for (const SequenceInput& q : t.seqs) {
    const int64_t n = static_cast<int64_t>(q.ids.size());
    out_.n_tokens.push_back(static_cast<int32_t>(n));
    if (per_token_) out_.row_offsets.push_back(out_.row_offsets.back() + n);
  }
  out_.rows = per_token_ ? out_.row_offsets.back() : static_cast<int64_t>(n_seqs_);
}

void RowAssembly::add(size_t seq, const RunOutput& o, size_t j) {
  EMBED_CHECK(seq < n_seqs_, "RowAssembly::add: sequence out of range");
  for (const std::string& w : o.warnings)
    if (std::find(out_.warnings.begin(), out_.warnings.end(), w) == out_.warnings.end()) out_.warnings.push_back(w);
  if (combined_) return add_combined(seq, o, j);
  add_readouts(seq, o, j);
  if (out_.data.empty()) {
    out_.cols = finished_width(o.cols, request_.finish);
    out_.data.resize(static_cast<size_t>(out_.rows * out_.cols));
  }
  const int64_t dst = per_token_ ? out_.row_offsets[seq] : static_cast<int64_t>(seq);
  const int64_t src = per_token_ ? o.cu_seqlens[j] : static_cast<int64_t>(j);
  const int64_t n = per_token_ ? o.cu_seqlens[j + 1] - o.cu_seqlens[j] : 1;
  finish_rows(o.pooled.data() + src * o.cols, n, o.cols, request_.finish, out_.data.data() + dst * out_.cols);
}

// The sparse weights and ColBERT vectors of this sequence from what its pass's heads computed.
void RowAssembly::add_readouts(size_t seq, const RunOutput& o, size_t j) {
  const Outputs& want = request_.outputs;
  if (!want.sparse && !want.colbert) return;
  const int64_t first = o.cu_seqlens[j], len = o.cu_seqlens[j + 1] - o.cu_seqlens[j];
  if (want.sparse)
    out_.sparse[seq] = sparse_row(o.readout, static_cast<int64_t>(j), first, ids_[seq].data(), len, readout_->sparse_dropped);
  if (want.colbert) out_.colbert[seq] = colbert_row(o.readout, first, len);
}

// Keeps the pooled rows this sequence's parts read, [0, last part's end), for finish().
void RowAssembly::add_combined(size_t seq, const RunOutput& o, size_t j) {
  if (out_.cols == 0) out_.cols = o.cols;  // pooled width until finish()
  int32_t end = 0;
  for (const RowPart& p : parts_[seq]) end = std::max(end, p.to);
  const int64_t base = per_token_ ? o.cu_seqlens[j] : static_cast<int64_t>(j);
  const float* x = o.pooled.data() + base * o.cols;
  part_rows_[seq].assign(x, x + static_cast<int64_t>(end) * o.cols);
}

Embeddings RowAssembly::finish(Runner& runner) {
  if (combined_ && n_seqs_ > 0) {
    int64_t cols = out_.cols;
    RowMeans means(out_.rows, cols);
    for (size_t s = 0; s < n_seqs_; s++)
      for (const RowPart& p : parts_[s])
        for (int32_t k = p.from; k < p.to; k++) means.add(p.row, part_rows_[s].data() + static_cast<int64_t>(k) * cols, p.weight);
    part_rows_.clear();
    std::vector<float> rows = means.means();
    if (request_.late_chunking) rows = runner.project(rows, out_.rows, &cols);  // late chunking pooled token rows itself
    out_.cols = finished_width(cols, request_.finish);
    out_.data.resize(static_cast<size_t>(out_.rows * out_.cols));
    finish_rows(rows.data(), out_.rows, cols, request_.finish, out_.data.data());
  }
  quantize_output(out_, request_.finish);
  return std::move(out_);
}

}  // namespace embed
