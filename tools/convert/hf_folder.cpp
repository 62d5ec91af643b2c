// Reading config.json, modules.json and the Pooling config of a HF / sentence-transformers folder.
// Pooling and reranker detection follow llama.cpp's convert_hf_to_gguf.py (see docs/convert.md).
#include "tools/convert/hf_folder.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"

namespace embed::convert {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct ArchEntry {
  const char* hf_name;
  Arch arch;
};
// HF `architectures[0]` -> GGUF architecture. Classification heads other than BERT's are refused
// rather than dropped.
constexpr ArchEntry kArchitectures[] = {
    {"BertModel", Arch::Bert},          {"BertForMaskedLM", Arch::Bert},   {"BertForSequenceClassification", Arch::Bert},
    {"Qwen2Model", Arch::Qwen2},        {"Qwen2ForCausalLM", Arch::Qwen2}, {"Qwen3Model", Arch::Qwen3},
    {"Qwen3ForCausalLM", Arch::Qwen3},  {"LlamaModel", Arch::Llama},       {"LlamaForCausalLM", Arch::Llama},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// sentence-transformers Pooling config -> one llama.cpp pooling type. Several enabled modes are
// concatenated by sentence-transformers, which no GGUF pooling type expresses.
Pooling pooling_from_config(const json& cfg, const std::string& path) {
  struct Mode {
    const char* key;
    const char* name;
    std::optional<Pooling> pooling;  // nullopt: a mode GGUF cannot express
  };
  const Mode modes[] = {
      {"pooling_mode_mean_tokens", "mean", Pooling::Mean},     {"pooling_mode_cls_token", "cls", Pooling::Cls},
      {"pooling_mode_lasttoken", "lasttoken", Pooling::Last},  {"pooling_mode_max_tokens", "max", std::nullopt},
      {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len", std::nullopt},
      {"pooling_mode_weightedmean_tokens", "weightedmean", std::nullopt},
  };
  std::vector<const Mode*> on;
  for (const Mode& m : modes) {
    const auto it = cfg.find(m.key);
    if (it != cfg.end() && it->is_boolean() && it->get<bool>()) on.push_back(&m);
  }
  if (on.empty()) {
    const auto it = cfg.find("pooling_mode");
    if (it != cfg.end() && it->is_string()) {
      for (const Mode& m : modes)
        if (it->get<std::string>() == m.name) on.push_back(&m);
      if (on.empty()) fail(ErrorKind::Unsupported, path + ": pooling_mode '" + it->get<std::string>() + "' is not supported");
    }
  }
  if (on.empty()) fail(ErrorKind::Format, path + ": no pooling mode is enabled");
  if (on.size() > 1)
    fail(ErrorKind::Unsupported, path + ": pooling modes '" + on[0]->name + "' and '" + on[1]->name +
                                     "' are both enabled (concatenated); GGUF holds one pooling type");
  if (!on[0]->pooling)
    fail(ErrorKind::Unsupported, path + ": pooling mode '" + std::string(on[0]->name) +
                                     "' is not supported; supported: mean, cls, lasttoken");
  return *on[0]->pooling;
}

// modules.json: Transformer, Pooling and Normalize are understood. Anything else (Dense, ...)
// would change the vectors, so it is refused instead of being silently dropped.
void read_modules(HfModel& m) {
  const fs::path path = fs::path(m.dir) / "modules.json";
  if (!fs::is_regular_file(path)) return;
  const json modules = read_json_file(path.string());
  if (!modules.is_array()) fail(ErrorKind::Format, path.string() + ": must be a JSON array");
  for (const json& mod : modules) {
    const auto type = mod.is_object() ? mod.find("type") : mod.end();
    if (!mod.is_object() || type == mod.end() || !type->is_string())
      fail(ErrorKind::Format, path.string() + ": every module needs a string 'type'");
    const std::string t = type->get<std::string>();
    const std::string sub = mod.value("path", std::string());
    auto ends_with = [&](const char* s) { return t.size() >= std::strlen(s) && t.compare(t.size() - std::strlen(s), std::string::npos, s) == 0; };
    if (ends_with(".Transformer")) continue;
    if (ends_with(".Normalize")) {
      m.st_normalize = true;
      continue;
    }
    if (ends_with(".Pooling")) {
      if (sub.empty() || sub.find("..") != std::string::npos || sub[0] == '/')
        fail(ErrorKind::Format, path.string() + ": Pooling module path '" + sub + "' is not a sub-folder");
      const fs::path cfg = fs::path(m.dir) / sub / "config.json";
      m.pooling = pooling_from_config(read_json_file(cfg.string()), cfg.string());
      continue;
    }
    fail(ErrorKind::Unsupported, path.string() + ": sentence-transformers module '" + t + "' (" + sub +
                                     ") is not supported; only Transformer, Pooling and Normalize");
  }
}

// llama.cpp's hints for a Qwen3-Reranker: the README heading, or the name in the folder name,
// `_name_or_path`, `model_type` or the architecture.
bool looks_like_qwen3_reranker(const HfModel& m) {
  const fs::path readme = fs::path(m.dir) / "README.md";
  if (fs::is_regular_file(readme)) {
    const std::string text = lower(read_text(readme));
    if (text.find("# qwen3-reranker") != std::string::npos) return true;
  }
  const std::string hints[] = {fs::path(m.dir).filename().string(), m.config.value("_name_or_path", std::string()),
                               m.config.value("model_type", std::string()), m.hf_architecture};
  for (const std::string& h : hints)
    if (lower(h).find("qwen3-reranker") != std::string::npos) return true;
  return false;
}

// Settings that the GGUF architectures cannot express: refuse rather than mis-convert.
void check_supported_settings(const HfModel& m) {
  const json& c = m.config;
  if (m.arch == Arch::Bert) {
    const std::string pos = c.value("position_embedding_type", std::string("absolute"));
    if (pos != "absolute")
      fail(ErrorKind::Unsupported, "config.json: position_embedding_type '" + pos + "' is not supported (bert: absolute)");
    return;
  }
  const std::string act = c.value("hidden_act", std::string("silu"));
  if (act != "silu") fail(ErrorKind::Unsupported, "config.json: hidden_act '" + act + "' is not supported (expected silu)");
  if (c.value("use_sliding_window", false))
    fail(ErrorKind::Unsupported, "config.json: use_sliding_window=true is not supported for " + std::string(arch_name(m.arch)));
}

}  // namespace

const char* arch_name(Arch a) {
  switch (a) {
    case Arch::Bert: return "bert";
    case Arch::Qwen2: return "qwen2";
    case Arch::Qwen3: return "qwen3";
    case Arch::Llama: return "llama";
  }
  return "?";
}

std::vector<std::string> supported_hf_architectures() {
  std::vector<std::string> names;
  for (const ArchEntry& e : kArchitectures) names.emplace_back(e.hf_name);
  return names;
}

json read_json_file(const std::string& path) {
  if (!fs::is_regular_file(path)) fail(ErrorKind::InvalidArgument, path + ": missing");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::Io, path + ": cannot open");
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail(ErrorKind::Format, path + ": not valid JSON");
  return j;
}

HfModel read_hf_folder(const std::string& dir) {
  if (!fs::is_directory(dir)) fail(ErrorKind::InvalidArgument, dir + ": not a directory");
  HfModel m;
  m.dir = dir;
  const fs::path config_path = fs::path(dir) / "config.json";
  if (!fs::is_regular_file(config_path))
    fail(ErrorKind::InvalidArgument, dir + ": config.json missing (not a HuggingFace model folder)");
  if (!fs::is_regular_file(fs::path(dir) / "tokenizer.json"))
    fail(ErrorKind::InvalidArgument, dir + ": tokenizer.json missing (the vocabulary is read from it)");
  m.config = read_json_file(config_path.string());
  if (!m.config.is_object()) fail(ErrorKind::Format, config_path.string() + ": must be a JSON object");
  const auto archs = m.config.find("architectures");
  if (archs == m.config.end() || !archs->is_array() || archs->empty() || !(*archs)[0].is_string())
    fail(ErrorKind::Format, config_path.string() + ": 'architectures' must name the model class");
  m.hf_architecture = (*archs)[0].get<std::string>();
  bool known = false;
  for (const ArchEntry& e : kArchitectures)
    if (m.hf_architecture == e.hf_name) {
      m.arch = e.arch;
      known = true;
    }
  if (!known) {
    std::string list;
    for (const ArchEntry& e : kArchitectures) list += std::string(list.empty() ? "" : ", ") + e.hf_name;
    fail(ErrorKind::Unsupported, "config.json: architecture '" + m.hf_architecture + "' is not supported; supported: " + list);
  }
  check_supported_settings(m);
  read_modules(m);
  if (m.arch == Arch::Qwen3) m.qwen3_reranker = looks_like_qwen3_reranker(m);
  return m;
}

std::optional<uint32_t> config_opt_u32(const HfModel& m, const char* key) {
  const auto it = m.config.find(key);
  if (it == m.config.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_unsigned() || it->get<uint64_t>() > 0xFFFFFFFFull)
    fail(ErrorKind::Format, std::string("config.json: '") + key + "' must be a non-negative 32-bit integer");
  return static_cast<uint32_t>(it->get<uint64_t>());
}

uint32_t config_u32(const HfModel& m, const char* key) {
  const auto v = config_opt_u32(m, key);
  if (!v || *v == 0) fail(ErrorKind::Format, std::string("config.json: '") + key + "' is missing or zero");
  return *v;
}

std::optional<double> config_opt_f64(const HfModel& m, const char* key) {
  const auto it = m.config.find(key);
  if (it == m.config.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) fail(ErrorKind::Format, std::string("config.json: '") + key + "' must be a number");
  return it->get<double>();
}

int64_t tokenizer_json_token_id(const std::string& dir, const std::string& piece) {
  const std::string path = (fs::path(dir) / "tokenizer.json").string();
  const json tok = read_json_file(path);
  const json* vocab = nullptr;
  if (tok.is_object() && tok.contains("model") && tok["model"].is_object() && tok["model"].contains("vocab"))
    vocab = &tok["model"]["vocab"];
  if (vocab && vocab->is_object()) {
    const auto it = vocab->find(piece);
    if (it != vocab->end() && it->is_number_integer()) return it->get<int64_t>();
  }
  if (tok.is_object() && tok.contains("added_tokens") && tok["added_tokens"].is_array())
    for (const json& t : tok["added_tokens"])
      if (t.is_object() && t.value("content", std::string()) == piece && t.contains("id") && t["id"].is_number_integer())
        return t["id"].get<int64_t>();
  fail(ErrorKind::Format, path + ": token '" + piece + "' is not in the vocabulary");
}

}  // namespace embed::convert
