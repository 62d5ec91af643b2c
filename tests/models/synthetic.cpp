// Synthetic model writer: llama.cpp tensor names and metadata keys, f32 weights with small
// random values (std 0.1) so activations stay in a sane range.
#include "tests/models/synthetic.h"

#include <unistd.h>

#include <atomic>

namespace embed::test {

TempFile::TempFile(const std::string& suffix) {
  static std::atomic<int> counter{0};
  path = "/tmp/embed_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + suffix;
}

void write_synthetic(const SyntheticSpec& s, const std::string& path) {
  gguf::Writer w;
  std::mt19937 rng(1234);
  std::normal_distribution<float> dist(0.0f, 0.1f);
  const std::string a = s.arch;
  w.set_string("general.architecture", a);
  w.set<uint32_t>(a + ".context_length", static_cast<uint32_t>(s.n_ctx));
  w.set<uint32_t>(a + ".embedding_length", static_cast<uint32_t>(s.d_model));
  w.set<uint32_t>(a + ".block_count", static_cast<uint32_t>(s.n_layers));
  w.set<uint32_t>(a + ".feed_forward_length", static_cast<uint32_t>(s.d_ff));
  w.set<uint32_t>(a + ".attention.head_count", static_cast<uint32_t>(s.n_heads));
  if (a == "bert") {
    w.set<float>(a + ".attention.layer_norm_epsilon", 1e-12f);
    w.set<bool>(a + ".attention.causal", false);
    w.set<uint32_t>(a + ".pooling_type", s.rank_head ? 4 : 1);
  } else {
    w.set<uint32_t>(a + ".attention.head_count_kv", static_cast<uint32_t>(s.n_kv_heads));
    w.set<float>(a + ".attention.layer_norm_rms_epsilon", 1e-6f);
    w.set<float>(a + ".rope.freq_base", 1e6f);
    w.set<uint32_t>(a + ".pooling_type", s.rank_head ? 4 : 3);
  }
  if (a == "gemma3") {
    w.set<uint32_t>(a + ".attention.sliding_window", static_cast<uint32_t>(s.sliding_window));
    w.set<uint32_t>(a + ".attention.sliding_window_pattern", static_cast<uint32_t>(s.sliding_window_pattern));
    w.set<float>(a + ".rope.freq_base_swa", 1e4f);
  }
  if (s.edit_metadata) s.edit_metadata(w);

  auto add = [&](const std::string& name, std::vector<int64_t> ne, float fill = NAN) {
    if (s.skip_tensor && s.skip_tensor(name)) return;
    if (s.reshape) s.reshape(name, ne);
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = std::isnan(fill) ? dist(rng) : fill;
    if (s.edit) s.edit(name, v);
    w.add_tensor(name, gguf::TensorType::F32, ne, v.data(), v.size() * 4);
  };
  const int64_t E = s.d_model, F = s.d_ff, dh = s.d_model / s.n_heads;
  add("token_embd.weight", {E, s.n_vocab});
  if (a == "bert") {
    add("position_embd.weight", {E, s.n_ctx});
    add("token_types.weight", {E, 2});
    add("token_embd_norm.weight", {E}, 1.0f);
    add("token_embd_norm.bias", {E}, 0.0f);
    for (int64_t l = 0; l < s.n_layers; l++) {
      const std::string p = "blk." + std::to_string(l) + ".";
      for (const char* t : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
        add(p + t + ".weight", {E, E});
        add(p + t + ".bias", {E});
      }
      add(p + "attn_output_norm.weight", {E}, 1.0f);
      add(p + "attn_output_norm.bias", {E}, 0.0f);
      add(p + "ffn_up.weight", {E, F});
      add(p + "ffn_up.bias", {F});
      add(p + "ffn_down.weight", {F, E});
      add(p + "ffn_down.bias", {E});
      add(p + "layer_output_norm.weight", {E}, 1.0f);
      add(p + "layer_output_norm.bias", {E}, 0.0f);
    }
    if (s.rank_head) {
      add("cls.weight", {E, E});
      add("cls.bias", {E});
      add("cls.output.weight", {E, 1});
      add("cls.output.bias", {1});
    }
  } else {
    const int64_t kv = dh * s.n_kv_heads;
    add("output_norm.weight", {E}, 1.0f);
    for (int64_t l = 0; l < s.n_layers; l++) {
      const std::string p = "blk." + std::to_string(l) + ".";
      add(p + "attn_norm.weight", {E}, 1.0f);
      add(p + "attn_q.weight", {E, E});
      add(p + "attn_k.weight", {E, kv});
      add(p + "attn_v.weight", {E, kv});
      add(p + "attn_q_norm.weight", {dh}, 1.0f);
      add(p + "attn_k_norm.weight", {dh}, 1.0f);
      add(p + "attn_output.weight", {E, E});
      add(p + "ffn_norm.weight", {E}, 1.0f);
      add(p + "ffn_gate.weight", {E, F});
      add(p + "ffn_up.weight", {E, F});
      add(p + "ffn_down.weight", {F, E});
      if (a == "gemma3") {
        add(p + "post_attention_norm.weight", {E}, 1.0f);
        add(p + "post_ffw_norm.weight", {E}, 1.0f);
      }
    }
    if (s.rank_head) add("cls.output.weight", {E, 2});
  }
  w.write_file(path);
}

}  // namespace embed::test
