// Routing HF names through the description's `hf` patterns and checking shapes against its
// `{name, shape}` entries.
#include "tools/convert/tensor_map.h"

#include <cctype>
#include <map>

#include "base/error.h"

namespace embed::convert {
namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

// `pattern` with at most one '*', at its start or end.
bool glob(const std::string& pattern, const std::string& name) {
  if (!pattern.empty() && pattern.back() == '*') return starts_with(name, pattern.substr(0, pattern.size() - 1));
  if (!pattern.empty() && pattern.front() == '*') return ends_with(name, pattern.substr(1));
  return name == pattern;
}

// Matches `name` against a pattern with an optional "{L}"; returns the layer (-1 without one).
std::optional<int64_t> match(const std::string& pattern, const std::string& name) {
  const size_t at = pattern.find("{L}");
  if (at == std::string::npos) return name == pattern ? std::optional<int64_t>(-1) : std::nullopt;
  const std::string pre = pattern.substr(0, at), post = pattern.substr(at + 3);
  if (name.size() <= pre.size() + post.size() || !starts_with(name, pre) || !ends_with(name, post)) return std::nullopt;
  const std::string layer = name.substr(pre.size(), name.size() - pre.size() - post.size());
  if (layer.size() > 6) return std::nullopt;
  for (char c : layer)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  return std::stol(layer);
}

std::string shape_str(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); i++) s += (i ? ", " : "") + (v[i] ? std::to_string(v[i]) : std::string("*"));
  return s + "}";
}

}  // namespace

std::optional<TensorRoute> route_tensor(const arch::ArchSpec& spec, const std::string& hf_name) {
  std::string name = hf_name;
  for (const std::string& prefix : spec.hf_prefixes)
    if (starts_with(name, prefix)) {
      name = name.substr(prefix.size());
      break;
    }
  // Old TF-era checkpoints name LayerNorm parameters gamma / beta.
  if (ends_with(name, ".gamma")) name = name.substr(0, name.size() - 6) + ".weight";
  if (ends_with(name, ".beta")) name = name.substr(0, name.size() - 5) + ".bias";
  for (const auto& [from, to] : spec.hf_renames)
    if (starts_with(name, from)) {
      name = to + name.substr(from.size());
      break;
    }
  for (const std::string& skip : spec.hf_skip)
    if (glob(skip, name)) return TensorRoute{TensorRoute::Skip, {}, nullptr};
  for (const arch::WeightSpec& w : spec.weights) {
    if (w.hf.empty()) continue;
    if (const auto layer = match(w.hf, name))
      return TensorRoute{TensorRoute::Write, *layer < 0 ? w.name : arch::layer_name(w.name, *layer), &w};
  }
  return std::nullopt;
}

void check_against_table(const std::vector<TensorShape>& tensors, const arch::ArchSpec& spec, const arch::ArchParams& p) {
  struct Want {
    const arch::WeightSpec* spec;
    std::vector<int64_t> ne;
  };
  std::map<std::string, Want> want;
  for (const arch::WeightSpec& w : spec.weights) {
    const int64_t cols = arch::dim_size(w.cols, p), rows = arch::dim_size(w.rows, p);
    const std::vector<int64_t> ne = w.form == arch::Form::Vector ? std::vector<int64_t>{cols} : std::vector<int64_t>{cols, rows};
    if (!w.per_layer()) want[w.name] = {&w, ne};
    else
      for (int64_t l = 0; l < p.n_layers; l++) want[arch::layer_name(w.name, l)] = {&w, ne};
  }
  std::map<std::string, const TensorShape*> have;
  for (const TensorShape& t : tensors) {
    const auto it = want.find(t.name);
    if (it == want.end())
      fail(ErrorKind::Format, "tensor '" + t.source + "' maps to '" + t.name + "', which " + spec.name + " does not have");
    const std::vector<int64_t>& ne = it->second.ne;
    bool ok = ne.size() == t.ne.size();
    for (size_t i = 0; ok && i < ne.size(); i++) ok = ne[i] == 0 || ne[i] == t.ne[i];
    if (!ok)
      fail(ErrorKind::Format, "tensor '" + t.source + "' (" + t.name + ") has ggml shape " + shape_str(t.ne) + ", config.json implies " +
                                  shape_str(ne));
    if (!have.emplace(t.name, &t).second) fail(ErrorKind::Format, "two tensors map to '" + t.name + "'");
  }
  for (const auto& [name, w] : want)
    if (w.spec->required && !have.count(name)) fail(ErrorKind::Format, "the weights lack '" + name + "' (required for " + spec.name + ")");
}

}  // namespace embed::convert
