// Reading config.json, modules.json (+ Pooling and Dense configs) and
// config_sentence_transformers.json of a HF / sentence-transformers folder. Pooling and
// reranker detection follow llama.cpp's convert_hf_to_gguf.py (see docs/convert.md).
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

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool ends_with(const std::string& s, const char* p) {
  const size_t n = std::strlen(p);
  return s.size() >= n && s.compare(s.size() - n, n, p) == 0;
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

// A sentence-transformers Dense config: in/out features, bias, and the activation as a torch
// class name ("torch.nn.modules.activation.Tanh"; sentence-transformers' default is Tanh).
DenseModule dense_from_config(const std::string& sub, const fs::path& cfg_path) {
  const json cfg = read_json_file(cfg_path.string());
  DenseModule d;
  d.path = sub;
  for (auto [key, dst] : {std::pair{"in_features", &d.in}, std::pair{"out_features", &d.out}}) {
    const auto it = cfg.find(key);
    if (it == cfg.end() || !it->is_number_unsigned() || it->get<uint64_t>() == 0 || it->get<uint64_t>() > (1u << 20))
      fail(ErrorKind::Format, cfg_path.string() + ": '" + key + "' must be a positive integer");
    *dst = it->get<int64_t>();
  }
  d.bias = cfg.value("bias", true);
  const std::string cls = cfg.value("activation_function", std::string("torch.nn.modules.activation.Tanh"));
  const std::string name = lower(cls.substr(cls.rfind('.') + 1));
  bool known = name == "identity";
  std::string list = "Identity";
  for (const arch::DenseActivation& a : arch::kDenseActivations) {
    known = known || name == a.name;
    list += std::string(", ") + a.name;
  }
  if (!known) fail(ErrorKind::Unsupported, cfg_path.string() + ": activation_function '" + cls + "' is not supported (" + list + ")");
  d.activation = name;
  return d;
}

// A module's sub-folder, which must stay inside the model folder.
std::string module_dir(const json& mod, const std::string& type, const fs::path& modules_path) {
  const std::string sub = mod.value("path", std::string());
  if (sub.empty() || sub.find("..") != std::string::npos || sub[0] == '/')
    fail(ErrorKind::Format, modules_path.string() + ": " + type + " module path '" + sub + "' is not a sub-folder");
  return sub;
}

// modules.json: Transformer, Pooling, Dense (after pooling) and Normalize (last) are understood,
// and a SparseEncoder's MLMTransformer + SpladePooling (max over tokens of log(1 + relu(logits)),
// the SPLADE read-out the engine computes from the kept MLM head). Anything else would change the
// vectors, so it is refused instead of being silently dropped.
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
    if (m.st_normalize) fail(ErrorKind::Unsupported, path.string() + ": module '" + t + "' after Normalize is not supported");
    if (ends_with(t, ".Transformer") || ends_with(t, ".MLMTransformer")) continue;
    if (ends_with(t, ".SpladePooling")) {
      const fs::path cfg_path = fs::path(m.dir) / module_dir(mod, "SpladePooling", path) / "config.json";
      const json cfg = read_json_file(cfg_path.string());
      const std::string strategy = cfg.value("pooling_strategy", std::string("max"));
      const std::string activation = cfg.value("activation_function", std::string("relu"));
      if (strategy != "max" || activation != "relu")
        fail(ErrorKind::Unsupported, cfg_path.string() + ": SpladePooling pooling_strategy '" + strategy + "' / activation_function '" +
                                         activation + "' is not supported (only max / relu: SPLADE's log(1 + relu) max over tokens)");
      if (cfg.contains("chunk_size") && !cfg["chunk_size"].is_null() && !cfg["chunk_size"].is_number_integer())
        fail(ErrorKind::Format, cfg_path.string() + ": chunk_size must be an integer or null");
      m.splade_pooling = true;
      continue;
    }
    if (ends_with(t, ".Normalize")) {
      m.st_normalize = true;
    } else if (ends_with(t, ".Pooling")) {
      const fs::path cfg = fs::path(m.dir) / module_dir(mod, "Pooling", path) / "config.json";
      m.pooling = pooling_from_config(read_json_file(cfg.string()), cfg.string());
    } else if (ends_with(t, ".Dense")) {
      const std::string sub = module_dir(mod, "Dense", path);
      if (!m.pooling)
        fail(ErrorKind::Unsupported, path.string() + ": Dense module '" + sub + "' before pooling (per token) is not supported");
      m.dense.push_back(dense_from_config(sub, fs::path(m.dir) / sub / "config.json"));
    } else {
      fail(ErrorKind::Unsupported, path.string() + ": sentence-transformers module '" + t + "' (" + mod.value("path", std::string()) +
                                       ") is not supported; only Transformer, Pooling, Dense and Normalize");
    }
  }
}

// config_sentence_transformers.json: "prompts" {name: text} in file order, "default_prompt_name".
void read_prompts(HfModel& m) {
  const fs::path path = fs::path(m.dir) / "config_sentence_transformers.json";
  if (!fs::is_regular_file(path)) return;
  std::ifstream in(path, std::ios::binary);
  const nlohmann::ordered_json cfg = nlohmann::ordered_json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (cfg.is_discarded() || !cfg.is_object()) fail(ErrorKind::Format, path.string() + ": not a JSON object");
  if (const auto it = cfg.find("prompts"); it != cfg.end() && !it->is_null()) {
    if (!it->is_object()) fail(ErrorKind::Format, path.string() + ": 'prompts' must map names to texts");
    for (const auto& [name, text] : it->items()) {
      if (!text.is_string()) fail(ErrorKind::Format, path.string() + ": prompt '" + name + "' is not a string");
      m.prompts.push_back({name, text.get<std::string>()});
    }
  }
  if (const auto it = cfg.find("default_prompt_name"); it != cfg.end() && !it->is_null()) {
    if (!it->is_string()) fail(ErrorKind::Format, path.string() + ": 'default_prompt_name' must be a string or null");
    const std::string name = it->get<std::string>();
    if (std::none_of(m.prompts.begin(), m.prompts.end(), [&](const Prompt& p) { return p.name == name; }))
      fail(ErrorKind::Format, path.string() + ": default_prompt_name '" + name + "' is not one of its prompts");
    m.default_prompt = name;
  }
}

// llama.cpp's hints for a classifier made of LM-head rows (Qwen3-Reranker): the README heading,
// or the hint in the folder name, `_name_or_path`, `model_type` or the architecture.
bool token_head_applies(const HfModel& m, const std::string& hint) {
  const fs::path readme = fs::path(m.dir) / "README.md";
  if (fs::is_regular_file(readme) && lower(read_text(readme)).find("# " + hint) != std::string::npos) return true;
  const std::string names[] = {fs::path(m.dir).filename().string(), m.config.value("_name_or_path", std::string()),
                               m.config.value("model_type", std::string()), m.hf_architecture};
  return std::any_of(std::begin(names), std::end(names), [&](const std::string& n) { return lower(n).find(hint) != std::string::npos; });
}

}  // namespace

std::vector<std::string> supported_hf_architectures() {
  std::vector<std::string> names;
  for (const arch::ArchSpec* s : arch::architecture_specs()) names.insert(names.end(), s->hf_classes.begin(), s->hf_classes.end());
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
  for (const arch::ArchSpec* s : arch::architecture_specs())
    if (std::find(s->hf_classes.begin(), s->hf_classes.end(), m.hf_architecture) != s->hf_classes.end()) m.spec = s;
  if (!m.spec) {
    std::string list;
    for (const std::string& n : supported_hf_architectures()) list += (list.empty() ? "" : ", ") + n;
    fail(ErrorKind::Unsupported, "config.json: architecture '" + m.hf_architecture + "' is not supported; supported: " + list);
  }
  if (std::find(m.spec->hf_offset_positions.begin(), m.spec->hf_offset_positions.end(), m.hf_architecture) !=
      m.spec->hf_offset_positions.end()) {
    const auto pad = m.config.find("pad_token_id");
    if (pad == m.config.end() || !pad->is_number_integer() || pad->get<int64_t>() < 0 || pad->get<int64_t>() > 1000000)
      fail(ErrorKind::Format, config_path.string() + ": " + m.hf_architecture +
                                  " needs 'pad_token_id' (a non-negative integer): its positions count from pad_token_id + 1");
    m.position_offset = pad->get<int64_t>() + 1;
  }
  read_modules(m);
  read_prompts(m);
  if (m.spec->token_head) m.token_head = token_head_applies(m, m.spec->token_head->hint);
  return m;
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
