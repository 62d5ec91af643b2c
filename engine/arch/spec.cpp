// Reading a model through its ArchSpec: hyperparameters from the GGUF keys the spec names,
// tensors from its weight table; plus what the engine and the converter share (derived
// hyperparameters and their checks, dimension sizes, names).
#include "engine/arch/spec.h"

#include "engine/arch/arch_common.h"

namespace embed::arch {
namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

// `dst` is a slot of ModelTensors (globals) or of LayerTensors (blocks).
template <class Slot>
WeightSpec make(std::string name, Form form, Dim rows, Dim cols, Slot dst, std::string hf) {
  WeightSpec s;
  s.name = std::move(name);
  s.form = form;
  s.rows = rows;
  s.cols = cols;
  s.hf = std::move(hf);
  if constexpr (std::is_same_v<Slot, Tensor ModelTensors::*>) s.global = dst;
  else s.layer = dst;
  return s;
}

bool is_qkv_slot(Tensor LayerTensors::*m) {
  using A = blocks::AttentionWeights;
  for (Tensor A::*q : {&A::q, &A::k, &A::v, &A::q_b, &A::k_b, &A::v_b})
    if (m == static_cast<Tensor LayerTensors::*>(q)) return true;
  return false;
}

}  // namespace

std::string dense_name(int n) { return "dense_" + std::to_string(n); }
std::string dense_key(int n, const char* what) { return dense_name(n) + "_" + what; }

WeightSpec matrix(std::string name, Dim rows, Dim cols, Tensor ModelTensors::*dst, std::string hf) {
  return make(std::move(name), Form::Matrix, rows, cols, dst, std::move(hf));
}
WeightSpec matrix(std::string name, Dim rows, Dim cols, Tensor LayerTensors::*dst, std::string hf) {
  return make(std::move(name), Form::Matrix, rows, cols, dst, std::move(hf));
}
WeightSpec vector(std::string name, Dim n, Tensor ModelTensors::*dst, std::string hf) {
  return make(std::move(name), Form::Vector, Dim::One, n, dst, std::move(hf));
}
WeightSpec vector(std::string name, Dim n, Tensor LayerTensors::*dst, std::string hf) {
  return make(std::move(name), Form::Vector, Dim::One, n, dst, std::move(hf));
}
WeightSpec table(std::string name, Dim rows, Dim cols, Tensor ModelTensors::*dst, std::string hf) {
  return make(std::move(name), Form::Table, rows, cols, dst, std::move(hf));
}
WeightSpec bias_table(std::string name, Tensor ModelTensors::*dst, std::string hf) {
  return make(std::move(name), Form::BiasTable, Dim::Buckets, Dim::Heads, dst, std::move(hf));
}
WeightSpec bias_table(std::string name, Tensor LayerTensors::*dst, std::string hf) {
  return make(std::move(name), Form::BiasTable, Dim::Buckets, Dim::Heads, dst, std::move(hf));
}

const HParamSpec* ArchSpec::find_hparam(const std::string& key) const {
  for (const HParamSpec& h : hparams)
    if (key == h.key) return &h;
  return nullptr;
}

const ArchSpec* find_architecture(const std::string& name) {
  for (const ArchSpec* s : architecture_specs())
    if (s->name == name) return s;
  return nullptr;
}

std::string layer_name(const std::string& pattern, int64_t layer) {
  std::string out = pattern;
  const size_t at = out.find("{L}");
  if (at != std::string::npos) out.replace(at, 3, std::to_string(layer));
  return out;
}

int64_t dim_size(Dim d, const ArchParams& p) {
  switch (d) {
    case Dim::One: return 1;
    case Dim::DModel: return p.d_model;
    case Dim::DFF: return p.d_ff;
    case Dim::QRows: return p.q_rows();
    case Dim::KVRows: return p.kv_rows();
    case Dim::QkvRows: return p.q_rows() + 2 * p.kv_rows();
    case Dim::GluRows: return 2 * p.d_ff;
    case Dim::DHead: return p.d_head;
    case Dim::Ctx: return p.n_ctx;
    case Dim::Heads: return p.n_heads;
    case Dim::Buckets: return p.n_rel_buckets;
    case Dim::Vocab:
    case Dim::Free:
    case Dim::Types:
    case Dim::Labels:
    case Dim::ClsWidth: return 0;
  }
  return 0;
}

void finish_params(ArchParams& p, const ArchSpec& spec, const std::string& where,
                   const std::function<std::string(const HParamSpec&)>& describe) {
  auto name = [&](const char* key) {
    const HParamSpec* h = spec.find_hparam(key);
    return h ? describe(*h) : describe(HParamSpec{.key = key, .field = &ArchParams::n_layers});
  };
  auto fail = [&](ErrorKind kind, const std::string& what) { embed::fail(kind, where + ": " + what); };
  auto num = [](int64_t v) { return " (" + std::to_string(v) + ")"; };
  if (spec.find_hparam("attention.head_count_kv")) {
    if (p.n_kv_heads == 0) p.n_kv_heads = p.n_heads;
    if (p.n_heads % p.n_kv_heads)
      fail(ErrorKind::Format, name("attention.head_count") + num(p.n_heads) + " is not a multiple of " +
                                  name("attention.head_count_kv") + num(p.n_kv_heads));
  } else {
    p.n_kv_heads = p.n_heads;
  }
  if (p.d_head == 0) {
    if (p.d_model % p.n_heads)
      fail(ErrorKind::Format, name("embedding_length") + num(p.d_model) + " is not a multiple of " + name("attention.head_count") +
                                  num(p.n_heads));
    p.d_head = p.d_model / p.n_heads;
  }
  if (p.d_value == 0) p.d_value = p.d_head;
  if (p.d_value != p.d_head)
    fail(ErrorKind::Unsupported, name("attention.value_length") + num(p.d_value) + " differs from " +
                                     name("attention.key_length") + num(p.d_head));
  if (spec.find_hparam("rope.dimension_count")) {
    if (p.n_rot == 0) p.n_rot = p.d_head;
    if (p.n_rot < 2 || p.n_rot > p.d_head || p.n_rot % 2)
      fail(ErrorKind::Format, name("rope.dimension_count") + num(p.n_rot) + " must be even and within the head size" + num(p.d_head));
  }
}

ArchParams read_params(const gguf::File& f, const ArchSpec& spec) {
  HParams hp(f, spec.name);
  ArchParams p;
  for (const HParamSpec& h : spec.hparams) {
    const bool derived = std::isnan(h.fallback);
    std::visit(Overloaded{
                   [&](int64_t ArchParams::*m) {
                     p.*m = h.required ? hp.count(h.key, h.lo, h.hi)
                                       : hp.count_or(h.key, derived ? 0 : static_cast<int64_t>(h.fallback), h.lo, h.hi);
                   },
                   [&](float ArchParams::*m) {
                     p.*m = h.required ? hp.real(h.key) : hp.real_or(h.key, derived ? 0.0f : static_cast<float>(h.fallback));
                   },
                   [&](bool ArchParams::*m) { p.*m = hp.flag_or(h.key, !derived && h.fallback != 0); },
                   [&](std::string ArchParams::*m) { p.*m = f.get_or<std::string>(hp.key(h.key), ""); },
               },
               h.field);
  }
  finish_params(p, spec, f.path(), [&](const HParamSpec& h) { return hp.key(h.key); });
  return p;
}

ModelTensors load_tensors(WeightLoader& w, const ArchSpec& spec, const ArchParams& p) {
  const gguf::File& f = w.file();
  ModelTensors t;
  t.layers.resize(static_cast<size_t>(p.n_layers));
  // Sizes only the file knows: read from the tensor itself (range-clamped; a mismatch then fails
  // the shape check naming the tensor) or from a tensor loaded before it.
  auto file_dim = [&](const std::string& name, int axis, int64_t hi) {
    const gguf::TensorInfo* ti = f.find_tensor(name);
    return ti ? std::clamp<int64_t>(ti->ne[axis], 1, hi) : 1;
  };
  auto size = [&](Dim d, const std::string& name, int axis) -> int64_t {
    switch (d) {
      case Dim::Vocab: return vocab_rows(f, name, p.d_model);
      case Dim::Free: return file_dim(name, axis, kMaxModelDim);
      case Dim::Types: return file_dim(name, axis, 16);
      case Dim::Labels: return t.cls_output.empty() ? file_dim(name, axis, 1 << 16) : t.cls_output.rows;
      case Dim::ClsWidth: return t.cls.empty() ? p.d_model : t.cls.rows;
      default: return dim_size(d, p);
    }
  };
  auto load = [&](const WeightSpec& e, const std::string& name) -> Tensor {
    if (!e.required && !w.has(name)) return Tensor{};
    const int64_t cols = size(e.cols, name, 0);
    switch (e.form) {
      case Form::Vector: return w.vector(name, cols);
      case Form::Matrix: return w.matrix(name, size(e.rows, name, 1), cols);
      case Form::Table: return w.table(name, size(e.rows, name, 1), cols);
      case Form::BiasTable: return w.bias_table(name, size(e.rows, name, 1), cols);
    }
    return Tensor{};
  };
  // A required entry without a slot is read by the code around this (a fused attn_qkv, split
  // below): it must still be in the file.
  for (const WeightSpec& e : spec.weights)
    if (e.required && !e.global && !e.layer)
      for (int64_t l = 0; l < (e.per_layer() ? p.n_layers : 1); l++)
        if (const std::string name = layer_name(e.name, l); !w.has(name))
          fail(ErrorKind::Format, f.path() + ": missing tensor '" + name + "'");
  for (const WeightSpec& e : spec.weights)
    if (e.global) t.*e.global = load(e, e.name);
  for (int64_t l = 0; l < p.n_layers; l++) {
    LayerTensors& L = t.layers[static_cast<size_t>(l)];
    // llama.cpp files may fuse q/k/v into attn_qkv (rows Q | K | V): split into the same slots.
    const bool fused = w.has(layer_name("blk.{L}.attn_qkv.weight", l));
    if (fused)
      static_cast<blocks::AttentionWeights&>(L) = load_qkv(w, layer_name("blk.{L}.", l), p.q_rows(), p.kv_rows(), p.d_model, false);
    for (const WeightSpec& e : spec.weights)
      if (e.layer && !(fused && is_qkv_slot(e.layer))) L.*e.layer = load(e, layer_name(e.name, l));
  }
  return t;
}

}  // namespace embed::arch
