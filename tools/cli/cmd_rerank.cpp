// `embed rerank MODEL --query Q DOCS.txt`: one score per document line, printed best first.
#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstdio>
#include <numeric>

#include "engine/api.h"
#include "tools/cli/commands.h"
#include "tools/cli/input.h"
#include "tools/cli/output.h"

namespace embed::cli {
namespace {

// --score NAME [--weights D,S,C]: compute_score's NAME score of each document (Context::score_readouts).
Result<std::vector<float>> score_by_readouts(Context& ctx, const RerankCommand& o, const std::vector<std::string>& documents, Request req) {
  const ModelDescription& d = ctx.model().describe();
  M3Scores probe;
  double unused;
  if (!m3_score_by_name(probe, o.score, &unused))
    usage_fail("unknown --score '" + o.score + "' (dense, sparse, colbert, sparse+dense, colbert+sparse+dense)");
  if (!d.sparse_head || d.colbert_dim == 0)
    usage_fail("--score: " + d.path + " lacks " + (d.sparse_head ? "a ColBERT head" : "a sparse head") +
               " (BGE-M3's sparse_linear.pt and colbert_linear.pt); a cross-encoder ranks without --score");
  std::array<double, 3> w{};
  {
    size_t at = 0;
    for (int k = 0; k < 3; k++) {
      const size_t comma = k < 2 ? o.weights.find(',', at) : o.weights.size();
      const std::string part = comma == std::string::npos ? "" : o.weights.substr(at, comma - at);
      char* end = nullptr;
      w[k] = part.empty() ? -1 : std::strtod(part.c_str(), &end);
      if (part.empty() || end != part.c_str() + part.size() || !(w[k] >= 0) || w[k] > 1e6)
        usage_fail("--weights '" + o.weights + "' must be three numbers >= 0: dense,sparse,colbert");
      at = comma + 1;
    }
  }
  check_request_flags(ctx.model(), req, Task::Embed);
  Result<std::vector<M3Scores>> all = ctx.score_readouts(o.query, documents, w, req);
  if (!all) return all.error();
  std::vector<float> out;
  for (const M3Scores& s : all.value()) {
    double v = 0;
    m3_score_by_name(s, o.score, &v);
    out.push_back(static_cast<float>(v));
  }
  return out;
}

}  // namespace

int run_rerank(const RerankCommand& o) {
  if (o.query.empty()) usage_fail("--query must not be empty");
  if (o.top_n < 0) usage_fail("--top-n must be positive");
  if (!o.format.empty() && o.format != "json" && o.format != "jsonl" && o.format != "text")
    usage_fail("unknown --format '" + o.format + "' for rerank (text, json, jsonl)");
  const InputLines in = read_lines(o.documents, o.skip_empty);
  if (in.texts.empty()) fail(ErrorKind::InvalidArgument, o.documents + ": no documents to rank");
  const std::shared_ptr<const Model> model = load_model(o.model, {o.device, o.threads, o.compat, o.compute_type, o.source});
  Request req;
  req.max_tokens = o.max_tokens;
  req.truncate = true;  // documents longer than the limit are cut (the longer text first)
  req.truncation_direction = parse_direction_flag(o.truncate_direction);
  req.split_special = o.split_special;
  Context ctx(model, o.threads);
  Result<std::vector<float>> scores = Status{};
  if (o.score.empty()) {
    check_request_flags(*model, req, Task::Rerank);
    scores = ctx.rerank(o.query, in.texts, req);
  } else {
    scores = score_by_readouts(ctx, o, in.texts, req);
  }
  if (!scores) {
    const Status& s = scores.error();
    if (s.index >= 0) fail(s.kind, "line " + std::to_string(in.line_numbers[s.index]) + ": " + s.message);
    fail(s.kind, s.message);
  }
  const std::vector<float>& sc = scores.value();
  std::vector<size_t> order(sc.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sc[a] > sc[b]; });
  if (o.top_n > 0 && static_cast<size_t>(o.top_n) < order.size()) order.resize(static_cast<size_t>(o.top_n));
  std::string s;
  if (o.format == "json") s += "{\"object\":\"list\",\"results\":[";
  if (o.format.empty() || o.format == "text") s += "rank  score       index  document\n";
  for (size_t r = 0; r < order.size(); r++) {
    const size_t i = order[r];
    const size_t index = in.line_numbers[i] - 1;
    if (o.format == "json" || o.format == "jsonl") {
      std::string doc;
      for (char c : in.texts[i]) doc += c == '"' ? std::string("\\\"") : c == '\\' ? std::string("\\\\") : c == '\t' ? std::string("\\t") : std::string(1, c);
      s += std::string(o.format == "json" && r ? "," : "") + "{\"index\":" + std::to_string(index) + ",\"relevance_score\":" +
           format_float(sc[i]) + ",\"document\":\"" + doc + "\"}" + (o.format == "jsonl" ? "\n" : "");
    } else {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%-5zu %-11.6g %-6zu ", r + 1, sc[i], index);
      s += buf + in.texts[i] + "\n";
    }
  }
  if (o.format == "json") s += "]}\n";
  if (std::fwrite(s.data(), 1, s.size(), stdout) != s.size()) fail(ErrorKind::Io, "cannot write the output");
  return kExitOk;
}

}  // namespace embed::cli
