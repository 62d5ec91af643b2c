# A reference forward for GTE "NewModel" (Alibaba-NLP gte-base-en-v1.5, gte-large-en-v1.5,
# gte-multilingual-base), written for this project from the published model description, because
# its modeling code is not in `transformers` (it ships as Hub remote code, modeling.py of
# Alibaba-NLP/new-impl). NumPy in float64 (a stricter reference than an f32 PyTorch run). The
# equations, with the config.json fields that select them:
#   embeddings  e = LN_emb(word[ids] + type[type_ids])                   (embeddings.LayerNorm, always a
#                                                                          LayerNorm; type only if type_vocab_size > 0;
#                                                                          no position table: position_embedding_type rope)
#   per layer   q, k, v = split(x Wqkv^T + b_qkv)                          (pack_qkv true: attention.qkv_proj)
#               q, k = rope(q), rope(k): rotate-half pairs (i, i + d/2) over the whole head, angle
#                      p * inv_freq_i, position p = 0, 1, ... within the text, and with
#                      rope_scaling {"type": "ntk", "factor": f}:
#                        inv_freq_i = (rope_theta * f)^(-2i/d) / f^(2/d)   at every length
#                      (NTKScalingRotaryEmbedding builds its cache for max_position_embeddings * f
#                      positions, more than max_position_embeddings, which selects the scaled
#                      frequencies; without rope_scaling: rope_theta^(-2i/d))
#               a = softmax(q k^T / sqrt(d_head)) v, bidirectional       (logn_attention_scale false)
#               x = N_attn(x + a Wo^T + bo)                               (attention.o_proj, attn_ln)
#               [u | g] = x Wug^T (no bias);  x = N_mlp(x + (u * act(g)) Wd^T + bd)
#                                                                         (mlp.up_gate_proj: up first;
#                                                                          mlp.down_proj, mlp_ln)
#               N = LayerNorm with bias (layer_norm_type layer_norm) or RMSNorm x / sqrt(mean(x^2) + eps) * w
#               (rms_norm, no bias; the embeddings' norm stays a LayerNorm); act = HF's ACT2FN[hidden_act]:
#               gelu (erf), gelu_new / gelu_pytorch_tanh (tanh form), silu / swish, relu
# then the sentence-transformers pipeline of the checkpoints: the CLS row (1_Pooling
# pooling_mode_cls_token) and L2 normalisation. Weights are keyed by the checkpoints' names
# (embeddings.word_embeddings.weight, encoder.layer.N.attention.qkv_proj.weight, ...).
import math

import numpy as np


def config(vocab_size, hidden_size=64, num_attention_heads=4, intermediate_size=96, num_hidden_layers=2,
           rope_theta=500000.0, ntk_factor=2.0, type_vocab_size=1):
    """config.json of a NewModel checkpoint with every field NewConfig defines (a rope_theta and an
    NTK factor > 1 of the kind the published configs carry; max_position_embeddings 8192)."""
    return {
        "architectures": ["NewModel"], "model_type": "new",
        "auto_map": {"AutoConfig": "Alibaba-NLP/new-impl--configuration.NewConfig",
                     "AutoModel": "Alibaba-NLP/new-impl--modeling.NewModel"},
        "hidden_size": hidden_size, "num_hidden_layers": num_hidden_layers, "num_attention_heads": num_attention_heads,
        "intermediate_size": intermediate_size, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.0, "max_position_embeddings": 8192, "type_vocab_size": type_vocab_size,
        "initializer_range": 0.02, "layer_norm_type": "layer_norm", "layer_norm_eps": 1e-12,
        "position_embedding_type": "rope", "rope_theta": rope_theta,
        "rope_scaling": {"type": "ntk", "factor": ntk_factor}, "classifier_dropout": None, "pack_qkv": True,
        "unpad_inputs": False, "use_memory_efficient_attention": False, "logn_attention_scale": False,
        "logn_attention_clip1": False, "pad_token_id": 0, "vocab_size": vocab_size, "torch_dtype": "float32",
    }


def layer_norm(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


_erf = np.frompyfunc(math.erf, 1, 1)


def gelu(x):
    """HF's "gelu": x * (1 + erf(x / sqrt 2)) / 2."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def rms_norm(x, w, eps):
    return x / np.sqrt((x ** 2).mean(axis=-1, keepdims=True) + eps) * w


def activation(name):
    if name == "gelu":
        return gelu
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if name in ("silu", "swish"):
        return lambda x: x / (1.0 + np.exp(-x))
    if name == "relu":
        return lambda x: np.maximum(x, 0.0)
    raise ValueError(name)


def inv_freq(d, c):
    theta = float(c["rope_theta"])
    r = c.get("rope_scaling")
    if r is None:
        return 1.0 / theta ** (np.arange(0, d, 2, dtype=np.float64) / d)
    assert r["type"] == "ntk" and "mixed_b" not in r and r["factor"] > 1, r
    f = float(r["factor"])
    return 1.0 / (theta * f) ** (np.arange(0, d, 2, dtype=np.float64) / d) / f ** (2.0 / d)


def rope(x, freqs):
    """x [heads, n, d_head] rotated by position."""
    d = x.shape[-1]
    angle = np.arange(x.shape[1], dtype=np.float64)[:, None] * freqs[None, :]
    cos, sin = np.cos(angle), np.sin(angle)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def attention(q, k, v, block=1024):
    """softmax(q k^T / sqrt(d)) v per head, in blocks of queries (an 8192-token text never holds
    more than block x n scores per head)."""
    out = np.empty_like(q)
    scale = 1.0 / np.sqrt(q.shape[-1])
    for s in range(0, q.shape[1], block):
        scores = np.einsum("hqd,hkd->hqk", q[:, s:s + block], k) * scale
        scores -= scores.max(axis=-1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=-1, keepdims=True)
        out[:, s:s + block] = np.einsum("hqk,hkd->hqd", p, v)
    return out


def forward(w, c, ids, type_ids=None):
    """Last hidden state [n, hidden_size] (float64) of one text; `w` maps checkpoint names to arrays."""
    assert c["layer_norm_type"] in ("layer_norm", "rms_norm") and c["pack_qkv"]
    assert c["position_embedding_type"] == "rope" and not c["logn_attention_scale"]
    w = {k: np.asarray(v, dtype=np.float64) for k, v in w.items()}
    ids = np.asarray(ids)
    eps, h, d, f = c["layer_norm_eps"], c["num_attention_heads"], c["hidden_size"], c["intermediate_size"]
    dh = d // h
    x = w["embeddings.word_embeddings.weight"][ids]
    if c["type_vocab_size"] > 0:
        type_ids = np.zeros_like(ids) if type_ids is None else np.asarray(type_ids)
        x = x + w["embeddings.token_type_embeddings.weight"][type_ids]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    freqs = inv_freq(dh, c)
    act = activation(c["hidden_act"])

    def norm(x, p):
        if c["layer_norm_type"] == "rms_norm":
            return rms_norm(x, w[p + ".weight"], eps)
        return layer_norm(x, w[p + ".weight"], w[p + ".bias"], eps)

    n = len(ids)
    for layer in range(c["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        qkv = x @ w[p + "attention.qkv_proj.weight"].T + w[p + "attention.qkv_proj.bias"]
        q, k, v = (qkv[:, i * d:(i + 1) * d].reshape(n, h, dh).transpose(1, 0, 2) for i in range(3))
        q, k = rope(q, freqs), rope(k, freqs)
        a = attention(q, k, v).transpose(1, 0, 2).reshape(n, d)
        a = a @ w[p + "attention.o_proj.weight"].T + w[p + "attention.o_proj.bias"]
        x = norm(x + a, p + "attn_ln")
        ug = x @ w[p + "mlp.up_gate_proj.weight"].T
        up, gate = ug[:, :f], ug[:, f:]
        y = (up * act(gate)) @ w[p + "mlp.down_proj.weight"].T + w[p + "mlp.down_proj.bias"]
        x = norm(x + y, p + "mlp_ln")
    return x


def embed(w, c, ids, normalize=True):
    """The sentence-transformers pipeline: the CLS row, then L2 normalisation."""
    v = forward(w, c, ids)[0]
    return v / np.linalg.norm(v) if normalize else v


def score(w, c, ids, type_ids):
    """NewForSequenceClassification: classifier(tanh(pooler.dense(h[CLS]))), the logits of one
    (query, document) input. `w` holds the backbone's names without the "new." prefix, plus
    pooler.dense.* and classifier.*."""
    h0 = forward(w, c, ids, type_ids)[0]
    pooled = np.tanh(np.asarray(w["pooler.dense.weight"], np.float64) @ h0 + np.asarray(w["pooler.dense.bias"], np.float64))
    return np.asarray(w["classifier.weight"], np.float64) @ pooled + np.asarray(w["classifier.bias"], np.float64)
