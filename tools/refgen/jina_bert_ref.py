# A reference forward for jina-bert-v2 (jina-embeddings-v2-*-en/-de/-es, jina-reranker-v1-*),
# written for this project from the published model description, because its modeling code is not
# in `transformers` (it ships as Hub remote code, jinaai/jina-bert-implementation). NumPy in
# float64, like nomic_bert_ref.py. The equations, with the config.json fields that select them:
#   embeddings  e = LN_emb(word[ids] + type[type_ids])                      (position_embedding_type
#                                                                             "alibi": no position table)
#   per layer   q, k, v = x Wq^T + bq, x Wk^T + bk, x Wv^T + bv
#               q, k = LN_q(q), LN_k(k) over the whole projection           (only when the checkpoint
#                                                                             has layer_norm_q / _k)
#               a = softmax(q k^T / sqrt(d_head) - m_h |i - j|) v per head   (symmetric ALiBi; slopes
#                   m_h from Press et al. 2022, "Train Short, Test Long", for the head count)
#               x = LN_1(x + a Wo^T + bo)                                    (post-norm, as BERT)
#               [g | u] = x W_gl^T (no bias, g the first intermediate_size rows)
#               x = LN_2(x + (gelu(g) * u) W_o^T + b_o)                      (feed_forward_type geglu,
#                                                                             erf GELU: torch nn.GELU())
# then the sentence-transformers pipeline of the embedding checkpoints: mean pooling over the
# text's tokens and L2 normalisation; or, for JinaBertForSequenceClassification, the BERT head
# logits = W_c tanh(W_p x_0 + b_p) + b_c on the first ([CLS]) token. Weights are keyed by the
# checkpoints' names after the "bert." prefix (embeddings.word_embeddings.weight,
# encoder.layer.N.attention.self.query.weight, encoder.layer.N.mlp.gated_layers.weight, ...).
import math

import numpy as np


def config(vocab_size, hidden_size=96, num_attention_heads=6, intermediate_size=128, num_hidden_layers=2,
           architecture="JinaBertForMaskedLM"):
    """config.json of a jina-bert-v2 checkpoint with the fields the published ones carry
    (jina-embeddings-v2-base-en's, shrunk). Six heads: not a power of two, so both kinds of
    slope (the largest power of two's, then every other one of the next) are exercised."""
    return {
        "architectures": [architecture], "model_type": "bert", "attention_probs_dropout_prob": 0.0,
        "classifier_dropout": None, "emb_pooler": "mean", "feed_forward_type": "geglu", "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "hidden_size": hidden_size, "initializer_range": 0.02,
        "intermediate_size": intermediate_size, "layer_norm_eps": 1e-12, "max_position_embeddings": 8192,
        "model_max_length": 8192, "num_attention_heads": num_attention_heads, "num_hidden_layers": num_hidden_layers,
        "pad_token_id": 0, "position_embedding_type": "alibi", "torch_dtype": "float32", "type_vocab_size": 2,
        "use_cache": True, "vocab_size": vocab_size,
    }


def alibi_slopes(n_heads):
    """The ALiBi paper's slopes: for a power of two n, the geometric sequence starting at
    2^(-8/n) with that ratio; otherwise the slopes of the largest power of two p below n, then
    every other slope of 2p (indices 0, 2, 4, ...) for the n - p heads left."""
    def power_of_two(n):
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]
    if math.log2(n_heads).is_integer():
        return power_of_two(n_heads)
    p = 2 ** math.floor(math.log2(n_heads))
    return power_of_two(p) + power_of_two(2 * p)[0::2][: n_heads - p]


def layer_norm(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def attention(q, k, v, slopes, block=512):
    """softmax(q k^T / sqrt(d) - m_h |i - j|) v per head, in blocks of queries (an 8192-token
    text never holds more than block x n scores per head)."""
    out = np.empty_like(q)
    scale = 1.0 / np.sqrt(q.shape[-1])
    n = q.shape[1]
    m = np.asarray(slopes, dtype=np.float64)[:, None, None]
    for s in range(0, n, block):
        rows = np.arange(s, min(s + block, n))
        distance = np.abs(rows[:, None] - np.arange(n)[None, :]).astype(np.float64)
        scores = np.einsum("hqd,hkd->hqk", q[:, s:s + block], k) * scale - m * distance[None]
        scores -= scores.max(axis=-1, keepdims=True)
        p = np.exp(scores)
        p /= p.sum(axis=-1, keepdims=True)
        out[:, s:s + block] = np.einsum("hqk,hkd->hqd", p, v)
    return out


def forward(w, c, ids, type_ids=None):
    """Last hidden state [n, hidden_size] (float64) of one sequence; `w` maps checkpoint names to arrays."""
    w = {k: np.asarray(v, dtype=np.float64) for k, v in w.items()}
    ids = np.asarray(ids)
    type_ids = np.zeros_like(ids) if type_ids is None else np.asarray(type_ids)
    eps, h, d, f = c["layer_norm_eps"], c["num_attention_heads"], c["hidden_size"], c["intermediate_size"]
    dh = d // h
    slopes = alibi_slopes(h)
    e = "embeddings."
    x = w[e + "word_embeddings.weight"][ids] + w[e + "token_type_embeddings.weight"][type_ids]
    x = layer_norm(x, w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"], eps)
    n = len(ids)
    for layer in range(c["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        sa = p + "attention.self."
        proj = {name: x @ w[sa + name + ".weight"].T + w[sa + name + ".bias"] for name in ("query", "key", "value")}
        q, k, v = proj["query"], proj["key"], proj["value"]
        if sa + "layer_norm_q.weight" in w:
            q = layer_norm(q, w[sa + "layer_norm_q.weight"], w[sa + "layer_norm_q.bias"], eps)
            k = layer_norm(k, w[sa + "layer_norm_k.weight"], w[sa + "layer_norm_k.bias"], eps)
        q, k, v = (t.reshape(n, h, dh).transpose(1, 0, 2) for t in (q, k, v))
        a = attention(q, k, v, slopes).transpose(1, 0, 2).reshape(n, d)
        o = p + "attention.output."
        x = layer_norm(x + a @ w[o + "dense.weight"].T + w[o + "dense.bias"], w[o + "LayerNorm.weight"],
                       w[o + "LayerNorm.bias"], eps)
        gu = x @ w[p + "mlp.gated_layers.weight"].T
        z = gelu(gu[:, :f]) * gu[:, f:]
        x = layer_norm(x + z @ w[p + "mlp.wo.weight"].T + w[p + "mlp.wo.bias"], w[p + "mlp.layernorm.weight"],
                       w[p + "mlp.layernorm.bias"], eps)
    return x


def embed(w, c, ids, normalize=True):
    """The sentence-transformers pipeline: mean pooling, then L2 normalisation."""
    v = forward(w, c, ids).mean(axis=0)
    return v / np.linalg.norm(v) if normalize else v


def classify(w, c, ids, type_ids=None):
    """JinaBertForSequenceClassification's logits: classifier(tanh(pooler.dense(h[CLS])))."""
    h0 = forward(w, c, ids, type_ids)[0]
    pooled = np.tanh(np.asarray(w["pooler.dense.weight"], np.float64) @ h0 + np.asarray(w["pooler.dense.bias"], np.float64))
    return np.asarray(w["classifier.weight"], np.float64) @ pooled + np.asarray(w["classifier.bias"], np.float64)
