// The conversion pipeline: read the folder, route every safetensors tensor to its GGUF name,
// apply the architecture's weight transforms, check the result against the weight table,
// encode, and write metadata and vocabulary.
#include "tools/convert/convert.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "base/error.h"
#include "tokenizer/hf_import.h"
#include "tools/convert/hf_folder.h"
#include "tools/convert/metadata.h"
#include "tools/convert/safetensors.h"
#include "tools/convert/tensor_map.h"


namespace embed::convert {
namespace {

// A tensor on its way into the GGUF: its f32 values, produced on demand so that only one
// tensor is decoded at a time.
struct PendingTensor {
  std::string name;
  std::vector<int64_t> ne;  // ggml order
  std::string source;       // HF name, for messages
  const StTensor* st = nullptr;
  std::vector<float> values;  // synthesized tensors (cls.output of a reranker)
  int permute_heads = 0;      // llama Q/K: undo HF's rotate-half layout for NORM RoPE
};

std::vector<int64_t> ggml_shape(const StTensor& t) {
  if (t.shape.empty() || t.shape.size() > 2)
    fail(ErrorKind::Format, t.file + ": tensor '" + t.name + "' has shape " + t.shape_string() + "; expected 1 or 2 dimensions");
  if (t.shape.size() == 1) return {t.shape[0]};
  return {t.shape[1], t.shape[0]};
}

// llama.cpp's NORM RoPE rotates adjacent pairs (2i, 2i+1); HF's rotate-half pairs (i, i + d/2).
// Reordering the output rows of Q and K within each head turns one into the other:
// new row h*d + 2i + j = old row h*d + j*d/2 + i.
std::vector<float> permute_for_norm_rope(const std::vector<float>& x, int64_t rows, int64_t cols, int n_heads,
                                         const std::string& name) {
  if (n_heads <= 0 || rows % n_heads != 0 || (rows / n_heads) % 2 != 0)
    fail(ErrorKind::Format, name + ": " + std::to_string(rows) + " rows do not split into " + std::to_string(n_heads) +
                                " heads of even size");
  const int64_t d = rows / n_heads, half = d / 2;
  std::vector<float> out(x.size());
  for (int64_t h = 0; h < n_heads; h++)
    for (int64_t i = 0; i < half; i++)
      for (int64_t j = 0; j < 2; j++) {
        const float* src = x.data() + (h * d + j * half + i) * cols;
        std::copy(src, src + cols, out.data() + (h * d + 2 * i + j) * cols);
      }
  return out;
}

// Qwen3-Reranker: llama.cpp scores with the lm_head rows of "yes" and "no" (cls.output, 2 x E),
// softmax over the two; the rows come from embed_tokens when the head is tied.
PendingTensor reranker_head(const HfModel& m, const WeightSet& weights, const ArchParams& p) {
  const StTensor* head = weights.find("lm_head.weight");
  if (!head) head = weights.find("model.embed_tokens.weight");
  if (!head) head = weights.find("embed_tokens.weight");
  if (!head) fail(ErrorKind::Format, "Qwen3-Reranker: neither lm_head.weight nor embed_tokens.weight is present");
  if (head->shape.size() != 2 || head->shape[1] != p.d_model)
    fail(ErrorKind::Format, head->name + ": shape " + head->shape_string() + " is not [vocab, hidden_size]");
  const int64_t rows[2] = {tokenizer_json_token_id(m.dir, "yes"), tokenizer_json_token_id(m.dir, "no")};
  const std::vector<float> all = read_as_f32(*head);
  PendingTensor t;
  t.name = "cls.output.weight";
  t.ne = {p.d_model, 2};
  t.source = head->name + " rows yes=" + std::to_string(rows[0]) + ", no=" + std::to_string(rows[1]);
  for (int64_t r : rows) {
    if (r < 0 || r >= head->shape[0])
      fail(ErrorKind::Format, head->name + ": token id " + std::to_string(r) + " is outside its " + std::to_string(head->shape[0]) + " rows");
    t.values.insert(t.values.end(), all.begin() + r * p.d_model, all.begin() + (r + 1) * p.d_model);
  }
  return t;
}

// Every tensor present must be expected, with its shape; every required one must be present.
void check_against_table(const std::vector<PendingTensor>& tensors, const std::vector<WeightSpec>& table, const std::string& arch) {
  std::map<std::string, const WeightSpec*> spec;
  for (const WeightSpec& s : table) spec[s.name] = &s;
  std::map<std::string, const PendingTensor*> have;
  for (const PendingTensor& t : tensors) {
    const auto it = spec.find(t.name);
    if (it == spec.end())
      fail(ErrorKind::Format, "tensor '" + t.source + "' maps to '" + t.name + "', which " + arch + " does not have");
    const std::vector<int64_t>& want = it->second->ne;
    bool ok = want.size() == t.ne.size();
    for (size_t i = 0; ok && i < want.size(); i++) ok = want[i] == 0 || want[i] == t.ne[i];
    if (!ok) {
      auto str = [](const std::vector<int64_t>& v) {
        std::string s = "{";
        for (size_t i = 0; i < v.size(); i++) s += (i ? ", " : "") + (v[i] ? std::to_string(v[i]) : std::string("*"));
        return s + "}";
      };
      fail(ErrorKind::Format, "tensor '" + t.source + "' (" + t.name + ") has ggml shape " + str(t.ne) + ", config.json implies " + str(want));
    }
    if (!have.emplace(t.name, &t).second) fail(ErrorKind::Format, "two tensors map to '" + t.name + "'");
  }
  for (const WeightSpec& s : table)
    if (s.required && !have.count(s.name)) fail(ErrorKind::Format, "the weights lack '" + s.name + "' (required for " + arch + ")");
}

// Globals first, then blocks in numeric order, then the final norm and heads: the order
// llama.cpp's own files use, which keeps `embed info` readable.
std::tuple<int, long, std::string> order_key(const std::string& name) {
  if (name.rfind("blk.", 0) == 0) return {1, std::stol(name.substr(4)), name};
  const bool tail = name.rfind("output", 0) == 0 || name.rfind("cls", 0) == 0;
  return {tail ? 2 : 0, 0, name};
}

std::vector<PendingTensor> collect_tensors(const HfModel& m, const WeightSet& weights, const ArchParams& p,
                                           bool has_classifier, ConvertSummary& s) {
  std::vector<PendingTensor> out;
  size_t skipped = 0;
  for (const StTensor* st : weights.tensors()) {
    const auto route = route_tensor(m, st->name, has_classifier);
    if (!route)
      fail(ErrorKind::Unsupported, st->file + ": tensor '" + st->name + "' has no GGUF name for " + arch_name(m.arch) +
                                       " (refused rather than silently dropped)");
    if (route->action == TensorRoute::Skip) {
      skipped++;
      continue;
    }
    if (m.qwen3_reranker && st->name == "lm_head.weight") continue;  // only its yes/no rows are kept
    PendingTensor t;
    t.name = route->gguf_name;
    t.ne = ggml_shape(*st);
    t.source = st->name;
    t.st = st;
    if (m.arch == Arch::Llama && (t.name.find(".attn_q.") != std::string::npos || t.name.find(".attn_k.") != std::string::npos))
      t.permute_heads = static_cast<int>(t.name.find(".attn_q.") != std::string::npos ? p.n_heads : p.n_kv_heads);
    out.push_back(std::move(t));
  }
  if (m.qwen3_reranker) out.push_back(reranker_head(m, weights, p));
  if (skipped) s.notes.push_back(std::to_string(skipped) + " tensors not used by llama.cpp's graph were skipped (position_ids, pretraining heads, unused pooler)");
  return out;
}

void encode_into(PendingTensor& t, OutType type, gguf::Writer& w, uint64_t& n_params) {
  std::vector<float> values = t.st ? read_as_f32(*t.st) : std::move(t.values);
  const int64_t ne0 = t.ne[0], rows = t.ne.size() > 1 ? t.ne[1] : 1;
  if (t.permute_heads) {
    const bool bias = t.ne.size() == 1;  // a bias permutes like a weight with one column
    values = permute_for_norm_rope(values, bias ? ne0 : rows, bias ? 1 : ne0, t.permute_heads, t.name);
  }
  const gguf::TensorType tt = tensor_type_for(t.name, t.ne, type);
  w.add_tensor(t.name, tt, t.ne, encode_tensor(values, ne0, tt));
  n_params += values.size();
}

// general.name default: the folder's own name, as llama.cpp's converter falls back to.
std::string folder_name(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return std::filesystem::absolute(dir).lexically_normal().filename().string();
}

}  // namespace

std::string size_label(uint64_t n) {
  double scaled;
  const char* suffix;
  if (n > 1e12) scaled = n * 1e-12, suffix = "T";
  else if (n > 1e9) scaled = n * 1e-9, suffix = "B";
  else if (n > 1e6) scaled = n * 1e-6, suffix = "M";
  else scaled = n * 1e-3, suffix = "K";
  // Python: fix = max(2 - len(str(round(x)).lstrip('0')), 0); round() ties to even.
  std::string digits = std::to_string(static_cast<long long>(std::nearbyint(scaled)));
  digits.erase(0, digits.find_first_not_of('0') == std::string::npos ? digits.size() : digits.find_first_not_of('0'));
  const int fix = std::max(2 - static_cast<int>(digits.size()), 0);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f%s", fix, scaled, suffix);
  return buf;
}

gguf::Writer build_gguf(const ConvertOptions& o, ConvertSummary* summary) {
  ConvertSummary s;
  const HfModel m = read_hf_folder(o.model_dir);
  const ArchParams p = read_arch_params(m);
  const WeightSet weights = WeightSet::open_folder(o.model_dir);
  const StTensor* classifier = m.arch == Arch::Bert ? weights.find("classifier.weight") : nullptr;
  if (classifier && classifier->shape.size() != 2)
    fail(ErrorKind::Format, "classifier.weight: shape " + classifier->shape_string() + " is not [labels, hidden_size]");
  const int64_t n_labels = classifier ? classifier->shape[0] : 0;

  std::vector<PendingTensor> tensors = collect_tensors(m, weights, p, classifier != nullptr, s);
  check_against_table(tensors, weight_table(m, p, classifier != nullptr, n_labels), arch_name(m.arch));
  std::sort(tensors.begin(), tensors.end(), [](const PendingTensor& a, const PendingTensor& b) { return order_key(a.name) < order_key(b.name); });

  gguf::Writer w;
  MetadataInputs meta;
  meta.model = &m;
  meta.params = &p;
  meta.type = o.type;
  meta.name = o.name.empty() ? folder_name(o.model_dir) : o.name;
  if (classifier) meta.classifier_labels = classifier_labels(m, n_labels);
  write_model_metadata(meta, w);
  s.tokenizer = tok::import_hf_tokenizer(o.model_dir, w);  // tokenizer.ggml.* (tokenizer/hf_import.h)
  for (PendingTensor& t : tensors) encode_into(t, o.type, w, s.n_params);
  w.set_string("general.size_label", size_label(s.n_params));

  s.architecture = arch_name(m.arch);
  s.hf_architecture = m.hf_architecture;
  if (auto pooling = effective_pooling(m, classifier != nullptr)) s.pooling = pooling_name(*pooling);
  s.n_tensors = tensors.size();
  if (m.st_normalize) s.notes.push_back("modules.json has Normalize: GGUF has no key for it; L2-normalize the pooled vectors (llama.cpp's server does by default)");
  if (summary) *summary = std::move(s);
  return w;
}

ConvertSummary convert_hf_to_gguf(const ConvertOptions& o) {
  ConvertSummary s;
  const gguf::Writer w = build_gguf(o, &s);
  w.write_file(o.out_path);
  return s;
}

}  // namespace embed::convert
