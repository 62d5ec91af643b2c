// `embed MODEL texts --output dense,sparse,colbert`: any subset of BGE-M3's three read-outs from
// one forward pass (Context::encode), one JSON line per input:
//   {"index": i, "dense": [...], "sparse": [{"index": token_id, "value": w[, "token": piece]}, ...],
//    "colbert": [[...], ...]}
// sparse entries by ascending token id (TEI's /embed_sparse shape per input); --sparse-top-k keeps
// the k largest weights; --sparse-tokens adds each id's vocabulary piece.
#include <algorithm>
#include <cstdio>
#include <numeric>

#include <nlohmann/json.hpp>

#include "tools/cli/commands.h"
#include "tools/cli/output.h"
#include "tools/cli/records.h"

namespace embed::cli {
namespace {

void append_row(std::string& s, const float* v, int64_t n) {
  s += '[';
  for (int64_t i = 0; i < n; i++) {
    if (i) s += ", ";
    s += format_float(v[i]);
  }
  s += ']';
}

}  // namespace

Outputs parse_outputs_flag(const std::string& s) {
  Outputs o{false, false, false};
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = std::min(s.find(',', at), s.size());
    const std::string name = s.substr(at, comma - at);
    if (name == "dense") o.dense = true;
    else if (name == "sparse") o.sparse = true;
    else if (name == "colbert") o.colbert = true;
    else usage_fail("unknown --output '" + name + "' (dense, sparse, colbert; any of them, comma-separated)");
    at = comma + 1;
  }
  return o;
}

int run_outputs(const EmbedCommand& o, const Outputs& outputs, const Request& req, const RunSettings& settings, Context& ctx,
                RecordReader& in) {
  const ModelDescription& d = ctx.model().describe();
  if (outputs.sparse && !d.sparse_head)
    usage_fail("--output sparse: " + d.path + " has no sparse head (BGE-M3's sparse_linear.pt, converted as cls.sparse, or a SPLADE model's MLM head, as mlm.*)");
  if (outputs.colbert && d.colbert_dim == 0)
    usage_fail("--output colbert: " + d.path + " has no ColBERT head (BGE-M3's colbert_linear.pt, converted as cls.colbert)");
  std::FILE* out = stdout;
  if (!o.out.empty() && o.out != "-") {
    out = std::fopen(o.out.c_str(), "wb");
    if (!out) fail(ErrorKind::Io, o.out + ": cannot open for writing");
  }
  const tok::Tokenizer& tk = ctx.model().tokenizer();
  Record rec;
  size_t n_inputs = 0;
  for (;;) {
    std::vector<Record> block;
    while (block.size() < static_cast<size_t>(o.block) && in.next(rec)) block.push_back(std::move(rec));
    if (block.empty()) break;
    std::vector<std::string> texts;
    for (const Record& r : block) texts.push_back(r.text);
    auto res = ctx.encode(texts, outputs, req, settings);
    if (!res.ok()) {
      const Status& e = res.error();
      fail(e.kind, e.index >= 0 ? in.name() + ": input " + std::to_string(block[static_cast<size_t>(e.index)].index) + ": " + e.message
                                : e.message);
    }
    const MultiOutput& m = res.value();
    for (size_t i = 0; i < block.size(); i++) {
      std::string line = "{\"index\": " + std::to_string(block[i].index);
      if (!block[i].id_json.empty()) line += ", \"id\": " + block[i].id_json;
      if (outputs.dense) {
        line += ", \"dense\": ";
        append_row(line, m.dense.row(static_cast<int64_t>(i)), m.dense.cols);
      }
      if (outputs.sparse) {
        const SparseRow& sp = m.sparse[i];
        std::vector<size_t> keep(sp.ids.size());
        std::iota(keep.begin(), keep.end(), size_t{0});
        if (o.sparse_top_k > 0 && keep.size() > static_cast<size_t>(o.sparse_top_k)) {
          // The k largest weights (ties: the smaller id), then back in id order.
          std::stable_sort(keep.begin(), keep.end(), [&](size_t a, size_t b) { return sp.weights[a] > sp.weights[b]; });
          keep.resize(static_cast<size_t>(o.sparse_top_k));
          std::sort(keep.begin(), keep.end());
        }
        line += ", \"sparse\": [";
        for (size_t k = 0; k < keep.size(); k++) {
          line += (k ? ", " : "") + std::string("{\"index\": ") + std::to_string(sp.ids[keep[k]]) + ", \"value\": " +
                  format_float(sp.weights[keep[k]]);
          if (o.sparse_tokens) line += ", \"token\": " + nlohmann::json(std::string(tk.piece(sp.ids[keep[k]]))).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
          line += '}';
        }
        line += ']';
      }
      if (outputs.colbert) {
        const MultiVectorRow& c = m.colbert[i];
        line += ", \"colbert\": [";
        for (int64_t r = 0; r < c.rows; r++) {
          if (r) line += ", ";
          append_row(line, c.row(r), c.cols);
        }
        line += ']';
      }
      line += "}\n";
      std::fwrite(line.data(), 1, line.size(), out);
    }
    n_inputs += block.size();
  }
  if (out != stdout && std::fclose(out) != 0) fail(ErrorKind::Io, o.out + ": write failed");
  if (n_inputs == 0) fail(ErrorKind::InvalidArgument, in.name() + ": no text to embed");
  return kExitOk;
}

}  // namespace embed::cli
