# A reference forward for nomic-bert (nomic-embed-text v1 / v1.5), written for this project from
# the published model description, because its modeling code is not in `transformers` (it ships
# as Hub remote code, modeling_hf_nomic_bert.py in nomic-ai/nomic-bert-2048). NumPy in float64
# (the pinned PyTorch stack was not installed when it was written; float64 makes it a stricter
# reference than an f32 one). The equations, with the config.json fields that select them:
#   embeddings  e = LN_emb(word[ids] + type[type_ids])                     (emb_ln; no position table)
#   per layer   q, k, v = split(x Wqkv^T)                                  (qkv_proj_bias false)
#               q, k = rope(q), rope(k): rotate-half pairs (i, i + d/2)    (rotary_emb_fraction 1,
#                      over the whole head, angle p * base^(-2i/d_head),     rotary_emb_interleaved false,
#                      position p = 0, 1, ... within the text                rotary_scaling_factor null)
#               a = softmax(q k^T / sqrt(d_head)) v, bidirectional
#               x = LN_1(x + a Wo^T)                                       (prenorm false: post-norm)
#               x = LN_2(x + fc2(fc11(x) * silu(fc12(x))))                 (activation_function swiglu)
# then the sentence-transformers pipeline of the checkpoints: mean pooling over the text's
# tokens and L2 normalisation. Weights are keyed by the checkpoints' names
# (embeddings.word_embeddings.weight, emb_ln.weight, encoder.layers.N.attn.Wqkv.weight, ...).
import numpy as np


def config(vocab_size, n_embd=64, n_head=4, n_inner=96, n_layer=2, rotary_emb_base=1000.0):
    """config.json of a nomic-bert checkpoint with every field the published ones carry that
    selects the equations above (n_positions 8192 / max_trained_positions 2048 as v1.5)."""
    return {
        "architectures": ["NomicBertModel"], "model_type": "nomic_bert", "activation_function": "swiglu",
        "bos_token_id": None, "eos_token_id": None, "causal": False, "prenorm": False, "parallel_block": False,
        "qkv_proj_bias": False, "mlp_fc1_bias": False, "mlp_fc2_bias": False, "use_rms_norm": False,
        "n_embd": n_embd, "n_head": n_head, "n_inner": n_inner, "n_layer": n_layer, "n_positions": 8192,
        "max_trained_positions": 2048, "layer_norm_epsilon": 1e-12, "rotary_emb_base": rotary_emb_base,
        "rotary_emb_fraction": 1.0, "rotary_emb_interleaved": False, "rotary_emb_scale_base": None,
        "rotary_scaling_factor": None, "type_vocab_size": 2, "vocab_size": vocab_size, "scale_attn_weights": True,
        "torch_dtype": "float32",
    }


def layer_norm(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def rope(x, base):
    """x [heads, n, d_head] rotated by position."""
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (np.arange(0, d, 2, dtype=np.float64) / d))
    angle = np.arange(x.shape[1], dtype=np.float64)[:, None] * inv_freq[None, :]
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
    """Last hidden state [n, n_embd] (float64) of one text; `w` maps checkpoint names to arrays."""
    w = {k: np.asarray(v, dtype=np.float64) for k, v in w.items()}
    ids = np.asarray(ids)
    type_ids = np.zeros_like(ids) if type_ids is None else np.asarray(type_ids)
    eps, h, d = c["layer_norm_epsilon"], c["n_head"], c["n_embd"]
    dh = d // h
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][type_ids]
    x = layer_norm(x, w["emb_ln.weight"], w["emb_ln.bias"], eps)
    n = len(ids)
    for layer in range(c["n_layer"]):
        p = f"encoder.layers.{layer}."
        qkv = x @ w[p + "attn.Wqkv.weight"].T
        q, k, v = (qkv[:, i * d:(i + 1) * d].reshape(n, h, dh).transpose(1, 0, 2) for i in range(3))
        q, k = rope(q, float(c["rotary_emb_base"])), rope(k, float(c["rotary_emb_base"]))
        a = attention(q, k, v).transpose(1, 0, 2).reshape(n, d)
        x = layer_norm(x + a @ w[p + "attn.out_proj.weight"].T, w[p + "norm1.weight"], w[p + "norm1.bias"], eps)
        up, gate = x @ w[p + "mlp.fc11.weight"].T, x @ w[p + "mlp.fc12.weight"].T
        y = (up * (gate / (1.0 + np.exp(-gate)))) @ w[p + "mlp.fc2.weight"].T
        x = layer_norm(x + y, w[p + "norm2.weight"], w[p + "norm2.bias"], eps)
    return x


def embed(w, c, ids, normalize=True):
    """The sentence-transformers pipeline: mean pooling, then L2 normalisation."""
    v = forward(w, c, ids).mean(axis=0)
    return v / np.linalg.norm(v) if normalize else v
