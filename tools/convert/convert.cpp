// The conversion pipeline: read the folder, route every safetensors tensor to its GGUF name
// through the architecture's description, add the LM-head classifier and Dense layers, check
// the result against the description's weight table, apply its folds, encode, and write
// metadata and vocabulary.
#include "tools/convert/convert.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "engine/weights.h"
#include "tokenizer/hf_import.h"
#include "tools/convert/hf_folder.h"
#include "tools/convert/hparams.h"
#include "tools/convert/metadata.h"
#include "tools/convert/safetensors.h"
#include "tools/convert/tensor_map.h"
#include "tools/convert/torch_state.h"

namespace embed::convert {
namespace {

namespace fs = std::filesystem;

// A tensor on its way into the GGUF: its f32 values, produced on demand so that only one
// tensor is decoded at a time.
struct PendingTensor {
  TensorShape shape;                       // GGUF name, HF source, ggml ne
  const StTensor* st = nullptr;
  std::vector<float> values;               // synthesized tensors (an LM-head classifier)
  arch::Fold fold = arch::Fold::None;
  int64_t drop_rows = 0;                   // leading rows not written (RoBERTa's positions before pad_token_id + 1)
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
std::vector<float> permute_for_norm_rope(const std::vector<float>& x, int64_t rows, int64_t cols, int64_t n_heads,
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

// The description's classifier output entry (rows = the labels).
const arch::WeightSpec* classifier_output(const arch::ArchSpec& spec) {
  for (const arch::WeightSpec& w : spec.weights)
    if (w.head && w.rows == arch::Dim::Labels && w.form == arch::Form::Matrix) return &w;
  return nullptr;
}

// An LM-head classifier (Qwen3-Reranker): the LM head's rows of the description's tokens (from
// the tied embedding table when there is no separate head).
PendingTensor token_head_tensor(const HfModel& m, const WeightSet& weights, const arch::ArchParams& p) {
  const arch::TokenHead& head = *m.spec->token_head;
  const arch::WeightSpec* out = classifier_output(*m.spec);
  EMBED_CHECK(out != nullptr, m.spec->name + ": a TokenHead needs a classifier output entry");
  std::vector<std::string> sources = {head.lm_head};
  for (const std::string& prefix : m.spec->hf_prefixes) sources.push_back(prefix + head.tied);
  sources.push_back(head.tied);
  const StTensor* src = nullptr;
  for (const std::string& s : sources)
    if (!src) src = weights.find(s);
  if (!src) fail(ErrorKind::Format, m.spec->name + " reranker: none of " + head.lm_head + ", " + head.tied + " is present");
  if (src->shape.size() != 2 || src->shape[1] != p.d_model)
    fail(ErrorKind::Format, src->name + ": shape " + src->shape_string() + " is not [vocab, hidden_size]");
  const std::vector<float> all = read_as_f32(*src);
  PendingTensor t;
  t.shape.name = out->name;
  t.shape.ne = {p.d_model, static_cast<int64_t>(head.tokens.size())};
  t.shape.source = src->name + " rows";
  for (const std::string& token : head.tokens) {
    const int64_t r = tokenizer_json_token_id(m.dir, token);
    if (r < 0 || r >= src->shape[0])
      fail(ErrorKind::Format, src->name + ": token id " + std::to_string(r) + " is outside its " + std::to_string(src->shape[0]) + " rows");
    t.shape.source += " " + token + "=" + std::to_string(r);
    t.values.insert(t.values.end(), all.begin() + r * p.d_model, all.begin() + (r + 1) * p.d_model);
  }
  return t;
}

// Globals first, then blocks in numeric order, then the final norm, heads and Dense layers: the
// order llama.cpp's own files use, which keeps `embed info` readable.
std::tuple<int, long, std::string> order_key(const std::string& name) {
  if (name.rfind("blk.", 0) == 0) return {1, std::stol(name.substr(4)), name};
  const bool tail = name.rfind("output", 0) == 0 || name.rfind("cls", 0) == 0 || name.rfind("dense_", 0) == 0 ||
                    name.rfind(std::string(arch::kMlmHead) + ".", 0) == 0;
  return {tail ? 2 : 0, 0, name};
}

struct Collected {
  std::vector<PendingTensor> tensors;
  int64_t n_labels = 0;  // classifier outputs (0: none)
};

Collected collect_tensors(const HfModel& m, const WeightSet& weights, const arch::ArchParams& p, ConvertSummary& s) {
  std::vector<std::pair<TensorRoute, const StTensor*>> routed;
  bool has_classifier = false;
  size_t skipped = 0;
  for (const StTensor* st : weights.tensors()) {
    auto route = route_tensor(*m.spec, st->name);
    if (!route)
      fail(ErrorKind::Unsupported, st->file + ": tensor '" + st->name + "' has no GGUF name for " + m.spec->name +
                                       " (refused rather than silently dropped)");
    if (route->action == TensorRoute::Skip) {
      skipped++;
      continue;
    }
    // An LM-head classifier keeps only its rows of the LM head.
    if (m.token_head && st->name == m.spec->token_head->lm_head) continue;
    has_classifier = has_classifier || (route->spec->head && route->spec == classifier_output(*m.spec));
    routed.emplace_back(*route, st);
  }
  Collected c;
  for (const auto& [route, st] : routed) {
    // Classifier pieces (BERT's pooler) mean nothing without the classifier itself.
    if (route.spec->head && !has_classifier) {
      skipped++;
      continue;
    }
    PendingTensor t;
    t.shape = {route.gguf_name, st->name, ggml_shape(*st)};
    t.st = st;
    t.fold = route.spec->fold;
    if (route.spec->global == &arch::ModelTensors::position_embd && m.position_offset > 0) {
      if (t.shape.ne.size() != 2 || t.shape.ne[1] <= m.position_offset)
        fail(ErrorKind::Format, st->file + ": tensor '" + st->name + "' has shape " + st->shape_string() + "; " + m.hf_architecture +
                                    " needs more than pad_token_id + 1 = " + std::to_string(m.position_offset) + " rows");
      t.drop_rows = m.position_offset;
      t.shape.ne[1] -= m.position_offset;
      t.shape.source += " rows " + std::to_string(m.position_offset) + "..";
    }
    if (route.spec == classifier_output(*m.spec)) c.n_labels = t.shape.ne.size() == 2 ? t.shape.ne[1] : 0;
    c.tensors.push_back(std::move(t));
  }
  if (m.token_head) {
    c.tensors.push_back(token_head_tensor(m, weights, p));
    c.n_labels = static_cast<int64_t>(m.spec->token_head->tokens.size());
  }
  if (skipped)
    s.notes.push_back(std::to_string(skipped) + " tensors not used by llama.cpp's graph were skipped (position_ids, pretraining heads, unused pooler)");
  return c;
}

// The sentence-transformers Dense modules: <path>/model.safetensors "linear.weight" [out, in]
// (+ "linear.bias") -> dense_<n>.weight / .bias.
void collect_dense(const HfModel& m, const arch::ArchParams& p, std::vector<SafetensorsFile>& files, Collected& c) {
  int64_t width = p.d_model;
  for (size_t i = 0; i < m.dense.size(); i++) {
    const DenseModule& d = m.dense[i];
    const fs::path dir = fs::path(m.dir) / d.path;
    if (d.in != width)
      fail(ErrorKind::Format, (dir / "config.json").string() + ": in_features " + std::to_string(d.in) + " does not match the " +
                                  std::to_string(width) + " values coming in");
    const fs::path st = dir / "model.safetensors";
    if (!fs::is_regular_file(st))
      fail(ErrorKind::InvalidArgument, st.string() + ": missing" +
                                           (fs::is_regular_file(dir / "pytorch_model.bin") ? " (pytorch_model.bin is not read: no pickle parsing)" : ""));
    files.push_back(SafetensorsFile::open(st.string()));
    const std::string name = arch::dense_name(arch::kFirstDense + static_cast<int>(i));
    for (const auto& [hf, suffix, ne] : {std::tuple{"linear.weight", ".weight", std::vector<int64_t>{d.in, d.out}},
                                         std::tuple{"linear.bias", ".bias", std::vector<int64_t>{d.out}}}) {
      const StTensor* t = files.back().find(hf);
      if (!t && std::string(suffix) == ".bias" && !d.bias) continue;
      if (!t) fail(ErrorKind::Format, st.string() + ": tensor '" + hf + "' missing");
      PendingTensor pt;
      pt.shape = {name + suffix, st.string() + ":" + hf, ggml_shape(*t)};
      pt.st = t;
      if (pt.shape.ne != ne)
        fail(ErrorKind::Format, st.string() + ": tensor '" + hf + "' has shape " + t->shape_string() + ", config.json implies " +
                                    std::to_string(d.out) + (ne.size() == 2 ? " x " + std::to_string(d.in) : std::string()));
      c.tensors.push_back(std::move(pt));
    }
    width = d.out;
  }
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); i++) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// FlagEmbedding's BGE-M3 heads beside the checkpoint: sparse_linear.pt (d_model -> 1) and
// colbert_linear.pt (d_model -> dim), each torch.save of a Linear's state dict, as
// cls.sparse.* / cls.colbert.* (engine/arch/spec.h). Returns the heads found.
std::vector<std::string> collect_m3_heads(const HfModel& m, const arch::ArchParams& p, Collected& c) {
  std::vector<std::string> found;
  for (const auto& [file, head] : {std::pair{"sparse_linear.pt", arch::kSparseHead}, std::pair{"colbert_linear.pt", arch::kColbertHead}}) {
    const fs::path path = fs::path(m.dir) / file;
    if (!fs::exists(path)) continue;
    std::vector<TorchTensor> tensors = read_torch_state_dict_file(path.string());
    const bool sparse = std::string(head) == arch::kSparseHead;
    int64_t rows = -1;
    for (const char* key : {"weight", "bias"}) {
      auto it = std::find_if(tensors.begin(), tensors.end(), [&](const TorchTensor& t) { return t.name == key; });
      if (it == tensors.end()) fail(ErrorKind::Format, path.string() + ": no '" + key + "' tensor (a Linear layer's state dict)");
      const bool weight = std::string(key) == "weight";
      if (weight) {
        if (it->shape.size() != 2 || it->shape[1] != p.d_model || (sparse && it->shape[0] != 1) || it->shape[0] < 1 ||
            it->shape[0] > kMaxModelDim)
          fail(ErrorKind::Format, path.string() + ": weight has shape " + shape_string(it->shape) + "; expected [" +
                                      (sparse ? std::string("1") : std::string("dim")) + ", " + std::to_string(p.d_model) + "]");
        rows = it->shape[0];
      } else if (it->shape != std::vector<int64_t>{rows}) {
        fail(ErrorKind::Format, path.string() + ": bias has shape " + shape_string(it->shape) + "; expected [" + std::to_string(rows) + "]");
      }
      PendingTensor t;
      t.shape.name = std::string(head) + "." + key;
      t.shape.source = path.string() + ":" + key;
      t.shape.ne = weight ? std::vector<int64_t>{p.d_model, rows} : std::vector<int64_t>{rows};
      t.values = std::move(it->values);
      c.tensors.push_back(std::move(t));
    }
    if (tensors.size() != 2) fail(ErrorKind::Format, path.string() + ": holds " + std::to_string(tensors.size()) + " tensors; expected weight and bias");
    found.push_back(sparse ? arch::kSparseFormulaKey : arch::kColbertFormulaKey);
  }
  return found;
}

// The MLM head of a BertForMaskedLM (mlm.*, engine/arch/spec.h): all of it but the decoder matrix
// (tied to the word embeddings when absent), or none. A SparseEncoder folder (SpladePooling) needs
// it. Returns whether the file carries it (and then gets {arch}.sparse_formula = splade).
bool check_mlm_head(const HfModel& m, const Collected& c) {
  const std::string mlm = std::string(arch::kMlmHead) + ".";
  std::vector<std::string> have;
  for (const PendingTensor& t : c.tensors)
    if (t.shape.name.rfind(mlm, 0) == 0) have.push_back(t.shape.name);
  if (have.empty()) {
    if (m.splade_pooling)
      fail(ErrorKind::Format, m.dir + ": modules.json has SpladePooling but the weights have no MLM head (cls.predictions.*)");
    return false;
  }
  for (const char* part : {"dense.weight", "dense.bias", "norm.weight", "norm.bias", "output.bias"})
    if (std::find(have.begin(), have.end(), mlm + part) == have.end())
      fail(ErrorKind::Format, m.dir + ": the MLM head (cls.predictions.*) lacks the tensor that becomes '" + mlm + part +
                                  "'; a partial head cannot give SPLADE's logits");
  return true;
}

// What llama.cpp will not do with these Dense layers, for the notes.
std::optional<std::string> dense_note(const HfModel& m, int64_t d_model) {
  if (m.dense.empty()) return std::nullopt;
  bool plain = m.spec->llama_cpp_dense && m.dense.size() <= 2 && m.dense.front().in == d_model && m.dense.back().out == d_model;
  for (const DenseModule& d : m.dense) plain = plain && !d.bias && d.activation == "identity";
  if (plain) return std::nullopt;
  return std::to_string(m.dense.size()) + " Dense layer(s) written with their bias and activation; llama.cpp applies "
         "Dense layers only for gemma-embedding (at most two, no bias, identity) and will not load or apply these";
}

uint64_t encode_into(PendingTensor& t, const arch::ArchParams& p, int64_t vocab_rows, OutType type, gguf::Writer& w) {
  std::vector<float> values = t.st ? read_as_f32(*t.st) : std::move(t.values);
  std::vector<int64_t>& ne = t.shape.ne;
  const int64_t ne0 = ne[0], rows = ne.size() > 1 ? ne[1] : 1;
  if (t.drop_rows > 0) values.erase(values.begin(), values.begin() + t.drop_rows * ne0);
  switch (t.fold) {
    case arch::Fold::None: break;
    case arch::Fold::AddOne:
      for (float& v : values) v += 1.0f;
      break;
    case arch::Fold::RopeNormQ:
    case arch::Fold::RopeNormK: {
      const int64_t heads = t.fold == arch::Fold::RopeNormQ ? p.n_heads : p.n_kv_heads;
      const bool bias = ne.size() == 1;  // a bias permutes like a weight with one column
      values = permute_for_norm_rope(values, bias ? ne0 : rows, bias ? 1 : ne0, heads, t.shape.name);
      break;
    }
    case arch::Fold::VocabRows:
      if (ne.size() == 2 && rows > vocab_rows && vocab_rows > 0) {
        values.resize(static_cast<size_t>(vocab_rows * ne0));
        ne[1] = vocab_rows;
      }
      break;
  }
  const gguf::TensorType tt = tensor_type_for(t.shape.name, ne, type);
  w.add_tensor(t.shape.name, tt, ne, encode_tensor(values, ne0, tt));
  return values.size();
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
  const arch::ArchParams p = read_hf_params(m);
  const WeightSet weights = WeightSet::open_folder(o.model_dir);
  std::vector<SafetensorsFile> dense_files;
  dense_files.reserve(m.dense.size());  // the Dense tensors point into these
  Collected c = collect_tensors(m, weights, p, s);
  {
    std::vector<TensorShape> shapes;
    for (const PendingTensor& t : c.tensors) shapes.push_back(t.shape);
    check_against_table(shapes, *m.spec, p);
  }
  collect_dense(m, p, dense_files, c);
  const std::vector<std::string> m3_heads = collect_m3_heads(m, p, c);
  const bool mlm_head = check_mlm_head(m, c);
  if (mlm_head && !m3_heads.empty())
    fail(ErrorKind::Unsupported, o.model_dir + ": an MLM head (SPLADE) and BGE-M3's sparse_linear.pt in one folder: two sparse read-outs");
  std::sort(c.tensors.begin(), c.tensors.end(),
            [](const PendingTensor& a, const PendingTensor& b) { return order_key(a.shape.name) < order_key(b.shape.name); });

  gguf::Writer w;
  MetadataInputs meta;
  meta.model = &m;
  meta.type = o.type;
  meta.name = o.name.empty() ? folder_name(o.model_dir) : o.name;
  if (m.token_head) meta.classifier_labels = m.spec->token_head->tokens;
  else if (c.n_labels > 0) meta.classifier_labels = classifier_labels(m, c.n_labels);
  write_model_metadata(meta, w);
  for (const std::string& key : m3_heads) w.set_string(m.spec->name + "." + key, arch::kM3Formula);
  if (mlm_head) w.set_string(m.spec->name + "." + arch::kSparseFormulaKey, arch::kSpladeFormula);
  s.tokenizer = tok::import_hf_tokenizer(o.model_dir, w);  // tokenizer.ggml.* (tokenizer/hf_import.h)
  const int64_t n_tokens = static_cast<int64_t>(w.array_count("tokenizer.ggml.tokens").value_or(0));
  for (PendingTensor& t : c.tensors) s.n_params += encode_into(t, p, n_tokens, o.type, w);
  w.set_string("general.size_label", size_label(s.n_params));

  s.architecture = m.spec->name;
  s.hf_architecture = m.hf_architecture;
  if (auto pooling = effective_pooling(m, !meta.classifier_labels.empty())) s.pooling = pooling_name(*pooling);
  s.n_tensors = c.tensors.size();
  if (auto note = dense_note(m, p.d_model)) s.notes.push_back(*note);
  if (!m3_heads.empty())
    s.notes.push_back("BGE-M3 heads (sparse_linear.pt / colbert_linear.pt) written as cls.sparse / cls.colbert with formula '" +
                      std::string(arch::kM3Formula) + "'; llama.cpp's converter drops them");
  if (mlm_head)
    s.notes.push_back("MLM head kept as mlm.* with sparse formula '" + std::string(arch::kSpladeFormula) +
                      "' (SPLADE: embed --output sparse); llama.cpp's converter drops it");
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
