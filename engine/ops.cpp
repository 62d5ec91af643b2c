// Op front-doors: shape and dtype checks, then the backend call.
#include "engine/ops.h"

#include "base/error.h"

namespace embed::ops {
namespace {

void check_f32(const Tensor& t, const char* what) {
  EMBED_CHECK(!t.empty() && t.dtype == DType::F32, std::string(what) + " must be a non-empty f32 tensor");
}

}  // namespace

void gather(ForwardPass& fp, const Tensor& table, const int32_t* ids, Tensor out, float scale, bool accumulate) {
  check_f32(out, "gather out");
  EMBED_CHECK(out.rows == fp.batch.n_tokens && out.cols == table.cols, "gather: out must be [n_tokens, table cols]");
  GatherArgs a;
  a.table = table;
  a.ids = ids;
  a.n_tokens = fp.batch.n_tokens;
  a.out = out;
  a.scale = scale;
  a.accumulate = accumulate;
  fp.backend.gather(a);
}

void linear(ForwardPass& fp, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor y, bool accumulate) {
  linear_activation(fp, x, w, bias, y, std::nullopt, accumulate);
}

void linear_activation(ForwardPass& fp, const Tensor& x, const Tensor& w, const Tensor& bias, Tensor y,
                       std::optional<Activation> act, bool accumulate) {
  EMBED_CHECK(!(act && accumulate), "linear: an activation cannot be combined with accumulate");
  check_f32(x, "linear x");
  check_f32(y, "linear y");
  EMBED_CHECK(x.cols == w.cols, "linear: x cols " + std::to_string(x.cols) + " != w cols " + std::to_string(w.cols));
  EMBED_CHECK(y.rows == x.rows && y.cols == w.rows, "linear: y must be [x rows, w rows]");
  EMBED_CHECK(bias.empty() || (bias.dtype == DType::F32 && bias.numel() == w.rows), "linear: bias must be f32 [w rows]");
  EMBED_CHECK(x.data != y.data, "linear: y must not alias x");
  MatmulArgs a;
  a.x = x;
  a.w = w;
  a.bias = bias;
  a.y = y;
  a.accumulate = accumulate;
  a.activation = act;
  fp.backend.matmul(a);
}

void layer_norm(ForwardPass& fp, const Tensor& x, const Tensor& w, const Tensor& b, Tensor y, float eps) {
  check_f32(x, "layer_norm x");
  EMBED_CHECK(w.numel() == x.cols && (b.empty() || b.numel() == x.cols), "layer_norm: weight/bias size");
  EMBED_CHECK(y.rows == x.rows && y.cols == x.cols, "layer_norm: y shape");
  LayerNormArgs a;
  a.x = x;
  a.weight = w;
  a.bias = b;
  a.y = y;
  a.eps = eps;
  fp.backend.layer_norm(a);
}

void rms_norm(ForwardPass& fp, const Tensor& x, const Tensor& w, Tensor y, float eps) {
  check_f32(x, "rms_norm x");
  EMBED_CHECK(w.numel() == x.cols, "rms_norm: weight size");
  EMBED_CHECK(y.rows == x.rows && y.cols == x.cols, "rms_norm: y shape");
  RmsNormArgs a;
  a.x = x;
  a.weight = w;
  a.y = y;
  a.eps = eps;
  fp.backend.rms_norm(a);
}

void rms_norm_heads(ForwardPass& fp, Tensor x, const Tensor& w, int d_head, float eps) {
  EMBED_CHECK(d_head > 0 && x.cols % d_head == 0, "rms_norm_heads: cols not a multiple of d_head");
  const Tensor heads = x.reshape(x.rows * (x.cols / d_head), d_head);
  rms_norm(fp, heads, w, heads, eps);
}

void rope(ForwardPass& fp, Tensor x, int n_heads, int d_head, const RopeSpec& spec) {
  check_f32(x, "rope x");
  EMBED_CHECK(x.cols == int64_t{n_heads} * d_head, "rope: x must be [n_tokens, n_heads * d_head]");
  EMBED_CHECK(spec.n_rot > 0 && spec.n_rot % 2 == 0 && spec.n_rot <= d_head, "rope: n_rot must be even and <= d_head");
  RopeArgs a;
  a.x = x;
  a.positions = fp.batch.positions;
  a.n_heads = n_heads;
  a.d_head = d_head;
  a.n_rot = spec.n_rot;
  a.mode = spec.mode;
  a.freq_base = spec.freq_base;
  a.freq_scale = spec.freq_scale;
  fp.backend.rope(a);
}

void attention(ForwardPass& fp, const Tensor& q, const Tensor& k, const Tensor& v, Tensor out, const AttentionSpec& s,
               const AttentionKvRows* kv_rows) {
  EMBED_CHECK(s.n_heads > 0 && s.n_kv_heads > 0 && s.n_heads % s.n_kv_heads == 0, "attention: head counts");
  EMBED_CHECK(q.cols == int64_t{s.n_heads} * s.d_head && k.cols == int64_t{s.n_kv_heads} * s.d_head && v.cols == k.cols,
              "attention: q/k/v widths");
  EMBED_CHECK(out.rows == q.rows && out.cols == q.cols && q.rows == fp.batch.n_tokens, "attention: out shape");
  if (kv_rows) {
    const int32_t* cu = kv_rows->cu_seqlens_host;
    EMBED_CHECK(kv_rows->on() && cu[0] == 0 && cu[fp.batch.n_seqs] == k.rows && v.rows == k.rows, "attention: kv_rows and k/v rows");
    for (int s_i = 0; s_i < fp.batch.n_seqs; s_i++)
      EMBED_CHECK(cu[s_i + 1] - cu[s_i] >= fp.batch.cu_seqlens_host[s_i + 1] - fp.batch.cu_seqlens_host[s_i],
                  "attention: a sequence has fewer keys than queries");
  } else {
    EMBED_CHECK(k.rows == q.rows && v.rows == q.rows, "attention: k/v rows");
  }
  AttentionArgs a;
  a.q = q;
  a.k = k;
  a.v = v;
  a.out = out;
  a.cu_seqlens = fp.batch.cu_seqlens;
  a.cu_seqlens_host = fp.batch.cu_seqlens_host;
  a.n_seqs = fp.batch.n_seqs;
  a.max_seqlen = fp.batch.max_seqlen;
  a.n_heads = s.n_heads;
  a.n_kv_heads = s.n_kv_heads;
  a.d_head = s.d_head;
  a.scale = s.scale;
  a.causal = s.causal;
  a.window_left = s.window_left;
  a.window_right = s.window_right;
  if (kv_rows) a.kv_rows = *kv_rows;
  if (!s.bias_table.empty()) {
    EMBED_CHECK(s.bias_table.dtype == DType::F32 && s.bias_table.cols == s.n_heads && s.bias_table.rows == 2 * s.bias_buckets.half,
                "attention: position bias table shape");
    a.bias_table = s.bias_table;
    a.bias_buckets = s.bias_buckets;
  }
  EMBED_CHECK(s.alibi_max_bias >= 0.0f, "attention: ALiBi max bias");
  a.alibi_max_bias = s.alibi_max_bias;
  if (!s.prefix_k.empty()) {
    EMBED_CHECK(s.prefix_k.rows == fp.batch.n_seqs && s.prefix_k.cols == k.cols && s.prefix_v.rows == s.prefix_k.rows &&
                    s.prefix_v.cols == v.cols,
                "attention: prefix k/v shapes");
    a.prefix_k = s.prefix_k;
    a.prefix_v = s.prefix_v;
    a.prefix_bias = s.prefix_bias;
  }
  fp.backend.attention(a);
}

Tensor pool_rows(ForwardPass& fp, const Tensor& x, PoolKind kind, const float* token_weights) {
  EMBED_CHECK(x.rows == fp.batch.n_tokens, "pool_rows: x rows");
  Tensor out = fp.ws.f32(fp.batch.n_seqs, x.cols);
  PoolArgs a;
  a.x = x;
  a.cu_seqlens = fp.batch.cu_seqlens;
  a.cu_seqlens_host = fp.batch.cu_seqlens_host;
  a.n_seqs = fp.batch.n_seqs;
  a.kind = kind;
  a.token_weights = kind == PoolKind::Mean ? token_weights : nullptr;
  a.y = out;
  fp.backend.pool(a);
  return out;
}

void activation(ForwardPass& fp, const Tensor& x, Tensor y, Activation act) {
  EMBED_CHECK(x.numel() == y.numel(), "activation: shape");
  ActivationArgs a;
  a.x = x;
  a.y = y;
  a.act = act;
  fp.backend.activation(a);
}

void glu(ForwardPass& fp, const Tensor& gate, const Tensor& up, Tensor y, Activation act) {
  EMBED_CHECK(gate.numel() == up.numel() && y.numel() == gate.numel(), "glu: shapes");
  GluArgs a;
  a.gate = gate;
  a.up = up;
  a.y = y;
  a.act = act;
  fp.backend.glu(a);
}

void add(ForwardPass& fp, const Tensor& x, const Tensor& b, Tensor y) {
  EMBED_CHECK(x.cols == b.cols && (b.rows == x.rows || b.rows == 1) && y.numel() == x.numel(), "add: shapes");
  AddArgs a;
  a.a = x;
  a.b = b;
  a.y = y;
  fp.backend.add(a);
}

void scale(ForwardPass& fp, const Tensor& x, Tensor y, float factor) {
  EMBED_CHECK(x.numel() == y.numel(), "scale: shape");
  ScaleArgs a;
  a.x = x;
  a.y = y;
  a.factor = factor;
  fp.backend.scale(a);
}

}  // namespace embed::ops
