// Synthetic benchmark models: llama.cpp tensor names and metadata keys for bert and qwen3.
#include "tools/bench/synthetic_models.h"

#include <cstring>

#include "gguf/fp16.h"
#include "gguf/writer.h"

namespace embed::bench {
namespace {

// xorshift64*: fast enough for a billion values, and reproducible.
class Random {
 public:
  float uniform() {  // [-1, 1)
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return static_cast<float>((state_ * 2685821657736338717ull) >> 40) / static_cast<float>(1 << 23) - 1.0f;
  }

 private:
  uint64_t state_ = 88172645463325252ull;
};

class ModelWriter {
 public:
  ModelWriter(const SyntheticShape& s) : s_(s) {}
  gguf::Writer& writer() { return w_; }
  // A matrix or table: ne = {in, out} in ggml order.
  void matrix(const std::string& name, int64_t in, int64_t out) {
    const int64_t n = in * out;
    std::vector<uint8_t> bytes(static_cast<size_t>(n) * 2);
    constexpr float kHalfWidth = 0.0346410162f;  // uniform [-a, a) has std a / sqrt 3 = 0.02
    for (int64_t i = 0; i < n; i++) {
      const float v = kHalfWidth * rng_.uniform();
      const uint16_t h = s_.weights == DType::F16 ? f32_to_f16(v) : f32_to_bf16(v);
      std::memcpy(bytes.data() + i * 2, &h, 2);
    }
    w_.add_tensor(name, dtype_to_gguf(s_.weights), {in, out}, std::move(bytes));
  }
  void vector(const std::string& name, int64_t n, float value) {
    const std::vector<float> v(static_cast<size_t>(n), value);
    w_.add_tensor(name, gguf::TensorType::F32, {n}, v.data(), v.size() * 4);
  }

 private:
  const SyntheticShape& s_;
  gguf::Writer w_;
  Random rng_;
};

void write_bert(const SyntheticShape& s, ModelWriter& m) {
  const int64_t E = s.d_model, F = s.d_ff;
  m.writer().set<float>("bert.attention.layer_norm_epsilon", 1e-12f);
  m.writer().set<bool>("bert.attention.causal", false);
  m.writer().set<uint32_t>("bert.pooling_type", 1);
  m.matrix("token_embd.weight", E, s.n_vocab);
  m.matrix("position_embd.weight", E, s.n_ctx);
  m.matrix("token_types.weight", E, 2);
  m.vector("token_embd_norm.weight", E, 1.0f);
  m.vector("token_embd_norm.bias", E, 0.0f);
  for (int64_t l = 0; l < s.n_layers; l++) {
    const std::string p = "blk." + std::to_string(l) + ".";
    for (const char* t : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
      m.matrix(p + t + ".weight", E, E);
      m.vector(p + t + ".bias", E, 0.0f);
    }
    m.vector(p + "attn_output_norm.weight", E, 1.0f);
    m.vector(p + "attn_output_norm.bias", E, 0.0f);
    m.matrix(p + "ffn_up.weight", E, F);
    m.vector(p + "ffn_up.bias", F, 0.0f);
    m.matrix(p + "ffn_down.weight", F, E);
    m.vector(p + "ffn_down.bias", E, 0.0f);
    m.vector(p + "layer_output_norm.weight", E, 1.0f);
    m.vector(p + "layer_output_norm.bias", E, 0.0f);
  }
}

void write_qwen3(const SyntheticShape& s, ModelWriter& m) {
  const int64_t E = s.d_model, F = s.d_ff, Q = s.n_heads * s.d_head, KV = s.n_kv_heads * s.d_head;
  gguf::Writer& w = m.writer();
  w.set<uint32_t>("qwen3.attention.head_count_kv", static_cast<uint32_t>(s.n_kv_heads));
  w.set<uint32_t>("qwen3.attention.key_length", static_cast<uint32_t>(s.d_head));
  w.set<uint32_t>("qwen3.attention.value_length", static_cast<uint32_t>(s.d_head));
  w.set<float>("qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
  w.set<float>("qwen3.rope.freq_base", 1e6f);
  w.set<uint32_t>("qwen3.pooling_type", 3);
  m.matrix("token_embd.weight", E, s.n_vocab);
  m.vector("output_norm.weight", E, 1.0f);
  for (int64_t l = 0; l < s.n_layers; l++) {
    const std::string p = "blk." + std::to_string(l) + ".";
    m.vector(p + "attn_norm.weight", E, 1.0f);
    m.matrix(p + "attn_q.weight", E, Q);
    m.matrix(p + "attn_k.weight", E, KV);
    m.matrix(p + "attn_v.weight", E, KV);
    m.vector(p + "attn_q_norm.weight", s.d_head, 1.0f);
    m.vector(p + "attn_k_norm.weight", s.d_head, 1.0f);
    m.matrix(p + "attn_output.weight", Q, E);
    m.vector(p + "ffn_norm.weight", E, 1.0f);
    m.matrix(p + "ffn_gate.weight", E, F);
    m.matrix(p + "ffn_up.weight", E, F);
    m.matrix(p + "ffn_down.weight", F, E);
  }
}

}  // namespace

const std::vector<SyntheticShape>& synthetic_shapes() {
  static const std::vector<SyntheticShape> shapes = {
      {"minilm-l6", "bert", 384, 6, 12, 12, 32, 1536, 30522, 512, DType::F16},
      {"bge-large", "bert", 1024, 24, 16, 16, 64, 4096, 30522, 512, DType::F16},
      {"qwen3-0.6b", "qwen3", 1024, 28, 16, 8, 128, 3072, 32768, 32768, DType::BF16},
  };
  return shapes;
}

const SyntheticShape* find_synthetic_shape(const std::string& name) {
  for (const SyntheticShape& s : synthetic_shapes())
    if (s.name == name) return &s;
  return nullptr;
}

void write_synthetic_model(const SyntheticShape& s, const std::string& path) {
  ModelWriter m(s);
  gguf::Writer& w = m.writer();
  const std::string a = s.arch;
  w.set_string("general.architecture", a);
  w.set_string("general.name", "synthetic " + s.name);
  w.set<uint32_t>(a + ".context_length", static_cast<uint32_t>(s.n_ctx));
  w.set<uint32_t>(a + ".embedding_length", static_cast<uint32_t>(s.d_model));
  w.set<uint32_t>(a + ".block_count", static_cast<uint32_t>(s.n_layers));
  w.set<uint32_t>(a + ".feed_forward_length", static_cast<uint32_t>(s.d_ff));
  w.set<uint32_t>(a + ".attention.head_count", static_cast<uint32_t>(s.n_heads));
  if (a == "bert") write_bert(s, m);
  else write_qwen3(s, m);
  w.write_file(path);
}

}  // namespace embed::bench
