// HParamSpec rows evaluated against config.json. Which keys appear, and their types, follow
// llama.cpp's convert_hf_to_gguf.py (TextModel.set_gguf_parameters and the model classes); the
// per-architecture part of that knowledge is in the rows themselves.
#include "tools/convert/hparams.h"

#include <cmath>
#include <variant>

#include "base/error.h"

namespace embed::convert {
namespace {

using nlohmann::json;
using Value = std::variant<int64_t, double, bool, std::string>;

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

const json* find_key(const json& obj, const std::string& key) {
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

// The RoPE settings: rope_parameters (transformers >= 5) or rope_scaling (older); a model with
// per-layer-type settings (Gemma 3) keeps the global ones under "full_attention".
const json& rope_dict(const json& c) {
  static const json empty = json::object();
  for (const char* key : {"rope_parameters", "rope_scaling"})
    if (const json* r = find_key(c, key); r && r->is_object()) return r->contains("full_attention") ? (*r)["full_attention"] : *r;
  return empty;
}

std::string rope_type(const json& c) {
  const json& r = rope_dict(c);
  const std::string type = r.value("rope_type", r.value("type", std::string("default")));
  if (type != "default" && type != "linear" && type != "yarn")
    fail(ErrorKind::Unsupported, "config.json: rope type '" + type + "' is not supported; supported: default, linear, yarn");
  return type;
}

// HF layer_types ("sliding_attention" / "full_attention" per layer) as the GGUF pattern p: layer
// l is sliding iff l % p < p - 1 (p = 0: all sliding). Anything irregular is refused.
std::optional<Value> layer_pattern(const json& c) {
  const json* types = find_key(c, "layer_types");
  if (!types) return std::nullopt;
  if (!types->is_array() || types->empty()) fail(ErrorKind::Format, "config.json: 'layer_types' must be a non-empty list");
  int64_t pattern = 0;
  for (size_t l = 0; l < types->size(); l++)
    if ((*types)[l] == "full_attention") {
      pattern = static_cast<int64_t>(l) + 1;
      break;
    }
  for (size_t l = 0; l < types->size(); l++) {
    const bool sliding = pattern == 0 || static_cast<int64_t>(l) % pattern < pattern - 1;
    if ((*types)[l] != (sliding ? "sliding_attention" : "full_attention"))
      fail(ErrorKind::Unsupported, "config.json: layer_types are not a repeating sliding/full pattern (layer " + std::to_string(l) +
                                       " is " + (*types)[l].dump() + "), which the GGUF cannot express");
  }
  return pattern;
}

std::optional<Value> from_json(const json& v, const arch::HParamSpec& row, const std::string& what) {
  return std::visit(Overloaded{
                        [&](int64_t arch::ArchParams::*) -> std::optional<Value> {
                          if (!v.is_number_integer() && !(v.is_number_float() && v.get<double>() == std::floor(v.get<double>())))
                            fail(ErrorKind::Format, "config.json: " + what + " must be an integer");
                          return Value(v.get<int64_t>());
                        },
                        [&](float arch::ArchParams::*) -> std::optional<Value> {
                          if (!v.is_number()) fail(ErrorKind::Format, "config.json: " + what + " must be a number");
                          return Value(v.get<double>());
                        },
                        [&](bool arch::ArchParams::*) -> std::optional<Value> {
                          if (!v.is_boolean()) fail(ErrorKind::Format, "config.json: " + what + " must be true or false");
                          return Value(v.get<bool>());
                        },
                        [&](std::string arch::ArchParams::*) -> std::optional<Value> {
                          if (!v.is_string()) fail(ErrorKind::Format, "config.json: " + what + " must be a string");
                          return Value(v.get<std::string>());
                        },
                    },
                    row.field);
}

// The row's value according to config.json (before defaults); "@d_head" is filled later.
std::optional<Value> from_config(const json& c, const arch::HParamSpec& row) {
  const std::string src = row.hf;
  if (src.empty() || src == "@d_head") return std::nullopt;
  if (src == "@false") return Value(false);
  if (src == "@layer_pattern") return layer_pattern(c);
  if (src == "@dense_first_pattern") {  // ModernBERT: layer l is global iff l % n == 0
    const json* n = find_key(c, "global_attn_every_n_layers");
    if (n && !n->is_number_integer()) fail(ErrorKind::Format, "config.json: 'global_attn_every_n_layers' must be an integer");
    const json* types = find_key(c, "layer_types");
    if (!types || !types->is_array()) return n ? std::optional<Value>(Value(n->get<int64_t>())) : std::nullopt;
    const int64_t every = n ? n->get<int64_t>() : 3;  // ModernBertConfig's default
    if (every < 1) fail(ErrorKind::Format, "config.json: 'global_attn_every_n_layers' must be at least 1");
    for (size_t l = 0; l < types->size(); l++) {
      const bool global = static_cast<int64_t>(l) % every == 0;
      if ((*types)[l] != (global ? "full_attention" : "sliding_attention"))
        fail(ErrorKind::Unsupported, "config.json: layer_types are not global every " + std::to_string(every) +
                                         " layers from layer 0 (layer " + std::to_string(l) + " is " + (*types)[l].dump() +
                                         "), which the GGUF cannot express");
    }
    return Value(every);
  }
  if (src == "@classifier_pooling") {  // ModernBERT's "cls" | "mean" as llama.cpp's pooling enum
    const json* v = find_key(c, "classifier_pooling");
    if (!v) return std::nullopt;
    if (*v == "cls") return Value(int64_t{2});
    if (*v == "mean") return Value(int64_t{1});
    fail(ErrorKind::Unsupported, "config.json: classifier_pooling " + v->dump() + " is not supported (cls, mean)");
  }
  if (src == "@rope_theta") {
    const json& r = rope_dict(c);
    const json* v = find_key(r, "rope_theta");
    if (!v) v = find_key(c, "rope_theta");
    if (!v) v = find_key(c, "global_rope_theta");  // ModernBERT's configs on the Hub
    return v ? from_json(*v, row, "rope_theta") : std::nullopt;
  }
  if (src == "@rope_theta_swa") {
    const json* sliding = nullptr;
    for (const char* key : {"rope_parameters", "rope_scaling"})
      if (const json* r = find_key(c, key); r && r->is_object() && r->contains("sliding_attention")) sliding = &(*r)["sliding_attention"];
    const json* v = sliding ? find_key(*sliding, "rope_theta") : nullptr;
    if (!v) v = find_key(c, "rope_local_base_freq");
    if (!v) v = find_key(c, "local_rope_theta");  // ModernBERT's configs on the Hub
    return v ? from_json(*v, row, "rope_local_base_freq") : std::nullopt;
  }
  if (src == "@rms_norm_eps") {  // GTE NewModel: layer_norm_eps, when layer_norm_type makes the blocks RMSNorm
    const json* type = find_key(c, "layer_norm_type");
    if (type && *type != "rms_norm" && *type != "layer_norm")
      fail(ErrorKind::Unsupported, "config.json: layer_norm_type " + type->dump() + " is not supported (layer_norm, rms_norm)");
    if (!type || *type != "rms_norm") return std::nullopt;
    const json* eps = find_key(c, "layer_norm_eps");
    return eps ? from_json(*eps, row, "'layer_norm_eps'") : std::optional<Value>(Value(1e-12));  // NewConfig's default
  }
  if (src == "@rope_ntk.type" || src == "@rope_ntk.factor") {  // GTE NewModel: rope_scaling {"type": "ntk", "factor": f}
    const json* r = find_key(c, "rope_scaling");
    if (!r) return std::nullopt;
    if (!r->is_object() || !find_key(*r, "type") || (*r)["type"] != "ntk" || find_key(*r, "mixed_b"))
      fail(ErrorKind::Unsupported, "config.json: rope_scaling " + r->dump() + " is not supported (null, or {\"type\": \"ntk\", \"factor\": f} without mixed_b)");
    const json* f = find_key(*r, "factor");
    if (!f) fail(ErrorKind::Format, "config.json: rope type 'ntk' without 'factor'");
    return src == "@rope_ntk.type" ? Value(std::string("ntk")) : from_json(*f, row, "rope_scaling factor");
  }
  if (src == "@rope.type_or_none") {  // ModernBERT: llama.cpp's converter writes "none" for the default
    const std::string type = rope_type(c);
    return Value(type == "default" ? std::string("none") : type);
  }
  if (src.rfind("@rope.", 0) == 0) {
    const std::string type = rope_type(c), field = src.substr(6);
    if (field == "type") return type == "default" ? std::nullopt : std::optional<Value>(type);
    if (type == "default" || (type == "linear" && field != "factor")) return std::nullopt;
    const json& r = rope_dict(c);
    const json* v = find_key(r, field);
    if (!v && field == "attention_factor") v = find_key(r, "attn_factor");
    if (!v && (field == "factor" || field == "original_max_position_embeddings"))
      fail(ErrorKind::Format, "config.json: rope type '" + type + "' without '" + field + "'");
    return v ? from_json(*v, row, "rope " + field) : std::nullopt;
  }
  size_t at = 0;
  while (at <= src.size()) {
    const size_t bar = std::min(src.find('|', at), src.size());
    const std::string key = src.substr(at, bar - at);
    if (const json* v = find_key(c, key)) return from_json(*v, row, "'" + key + "'");
    at = bar + 1;
  }
  return std::nullopt;
}

struct Evaluated {
  const arch::HParamSpec* row;
  std::optional<Value> value;
};

std::string hf_name(const arch::HParamSpec& row) {
  const std::string src = row.hf;
  if (src.empty() || src[0] == '@') return row.key;
  std::string quoted = "'";
  quoted += src.substr(0, src.find('|'));
  quoted += '\'';
  return quoted;
}

// Every row's value: config.json, else the description's HF default; "@d_head" after the derivation.
std::vector<Evaluated> evaluate(const HfModel& m, arch::ArchParams* params) {
  const arch::ArchSpec& spec = *m.spec;
  std::vector<Evaluated> rows;
  arch::ArchParams p;
  for (const arch::HParamSpec& row : spec.hparams) {
    std::optional<Value> v = from_config(m.config, row);
    if (!v)
      for (const auto& [key, value] : spec.hf_defaults)
        if (key == row.key) v = std::holds_alternative<int64_t arch::ArchParams::*>(row.field) ? Value(static_cast<int64_t>(value)) : Value(value);
    const std::string what = hf_name(row) + " (" + spec.name + "." + row.key + ")";
    // RoBERTa's table holds pad_token_id + 1 rows before position 0, which the converter drops.
    if (v && m.position_offset > 0 && std::holds_alternative<int64_t arch::ArchParams::*>(row.field) &&
        std::get<int64_t arch::ArchParams::*>(row.field) == &arch::ArchParams::n_ctx) {
      const int64_t n = std::get<int64_t>(*v) - m.position_offset;
      if (n < 1)
        fail(ErrorKind::Format, "config.json: " + what + " = " + std::to_string(std::get<int64_t>(*v)) +
                                    " leaves no positions after the " + std::to_string(m.position_offset) +
                                    " rows before pad_token_id + 1");
      v = Value(n);
    }
    const bool plain_key = row.hf[0] != '\0' && row.hf[0] != '@';
    if (!v && (row.required || (row.write == arch::Write::Always && plain_key)))
      fail(ErrorKind::Format, "config.json: " + what + " is missing");
    if (v && std::holds_alternative<int64_t>(*v) && row.hi > 0) {
      const int64_t x = std::get<int64_t>(*v);
      if (x < row.lo || x > row.hi)
        fail(ErrorKind::Format, "config.json: " + what + " = " + std::to_string(x) + " is outside [" + std::to_string(row.lo) + ", " +
                                    std::to_string(row.hi) + "]");
    }
    // Into ArchParams as the engine would read the file: the value, else the engine's fallback.
    const double fallback = std::isnan(row.fallback) ? 0 : row.fallback;
    std::visit(Overloaded{
                   [&](int64_t arch::ArchParams::*f) { p.*f = v ? std::get<int64_t>(*v) : static_cast<int64_t>(fallback); },
                   [&](float arch::ArchParams::*f) { p.*f = static_cast<float>(v ? std::get<double>(*v) : fallback); },
                   [&](bool arch::ArchParams::*f) { p.*f = v ? std::get<bool>(*v) : fallback != 0; },
                   [&](std::string arch::ArchParams::*f) { p.*f = v ? std::get<std::string>(*v) : std::string(); },
               },
               row.field);
    rows.push_back({&row, v});
  }
  arch::finish_params(p, spec, "config.json", hf_name);
  for (Evaluated& e : rows)
    if (std::string(e.row->hf) == "@d_head") e.value = Value(p.d_head);
  if (params) *params = p;
  return rows;
}

// The description's config.json settings that the GGUF cannot express.
void check_settings(const HfModel& m, const arch::ArchParams& p) {
  for (const arch::HfCheck& c : m.spec->hf_checks) {
    const auto it = m.config.find(c.key);
    const std::string want = c.expected;
    const json expected = want == "@d_head" ? json(p.d_head) : json::parse(want);
    if (it == m.config.end()) {
      if (c.absent_ok) continue;
      fail(ErrorKind::Unsupported, "config.json: '" + std::string(c.key) + "' is missing; " + m.spec->name + " needs " + expected.dump());
    }
    if (*it != expected && !(it->is_number() && expected.is_number() && it->get<double>() == expected.get<double>()))
      fail(ErrorKind::Unsupported, "config.json: " + std::string(c.key) + " = " + it->dump() + " is not supported for " + m.spec->name +
                                       " (expected " + expected.dump() + ")");
  }
}

}  // namespace

arch::ArchParams read_hf_params(const HfModel& m) {
  arch::ArchParams p;
  evaluate(m, &p);
  check_settings(m, p);
  return p;
}

void write_hparams(const HfModel& m, gguf::Writer& w) {
  for (const Evaluated& e : evaluate(m, nullptr)) {
    const arch::HParamSpec& row = *e.row;
    if (!e.value || row.write == arch::Write::Never) continue;
    if (row.write == arch::Write::IfNotDefault && std::visit([&](const auto& x) {
          if constexpr (std::is_same_v<std::decay_t<decltype(x)>, std::string>) return x.empty();
          else return static_cast<double>(x) == row.fallback;
        }, *e.value))
      continue;
    const std::string key = m.spec->name + "." + row.key;
    std::visit(Overloaded{
                   [&](int64_t x) { w.set<uint32_t>(key, static_cast<uint32_t>(x)); },
                   [&](double x) { w.set<float>(key, static_cast<float>(x)); },
                   [&](bool x) { w.set<bool>(key, x); },
                   [&](const std::string& x) { w.set_string(key, x); },
               },
               *e.value);
  }
}

}  // namespace embed::convert
