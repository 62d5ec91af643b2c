# jina-bert-v2 (jina-embeddings-v2-*) as a transformers PreTrainedModel, written for this project
# so that sentence-transformers can run a jina-bert-v2 folder the way users run it (modeling code
# named by config.json's auto_map, loaded with trust_remote_code=True) where the Hub's own remote
# code cannot be fetched. The forward is tools/refgen/jina_bert_ref.py's, in PyTorch, batched: the
# same checkpoint weight names and the same equations (see that file), with ALiBi and the padded
# keys as one additive float mask in scaled_dot_product_attention.
#   embeddings  e = LN_emb(word[ids] + type[type_ids])                    (no position table)
#   per layer   q, k, v = x Wq^T + bq, x Wk^T + bk, x Wv^T + bv
#               x = LN_1(x + softmax(q k^T / sqrt(d_head) - m_h |i - j| + mask) v Wo^T + bo)
#                   (symmetric ALiBi, slopes m_h of Press et al. 2022 for the head count)
#               [g | u] = x W_gl^T;  x = LN_2(x + (gelu(g) * u) W_o^T + b_o)   (GEGLU, erf GELU)
# The embedding model only (JinaBertModel: no pooler, no classifier, no q/k LayerNorms); a
# config.json selecting another position or feed-forward type is refused at construction.
# tools/bench/check_remote_code.py checks it against the committed reference vectors.
import math

import torch
import torch.nn.functional as F
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput


class JinaBertConfig(PretrainedConfig):
    model_type = "bert"  # as the published checkpoints' config.json

    def __init__(self, vocab_size=30528, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.0,
                 max_position_embeddings=8192, type_vocab_size=2, initializer_range=0.02, layer_norm_eps=1e-12,
                 pad_token_id=0, position_embedding_type="alibi", feed_forward_type="geglu", emb_pooler=None,
                 classifier_dropout=None, **kwargs):
        self.vocab_size, self.hidden_size, self.num_hidden_layers = vocab_size, hidden_size, num_hidden_layers
        self.num_attention_heads, self.intermediate_size, self.hidden_act = num_attention_heads, intermediate_size, hidden_act
        self.hidden_dropout_prob, self.attention_probs_dropout_prob = hidden_dropout_prob, attention_probs_dropout_prob
        self.max_position_embeddings, self.type_vocab_size = max_position_embeddings, type_vocab_size
        self.initializer_range, self.layer_norm_eps = initializer_range, layer_norm_eps
        self.position_embedding_type, self.feed_forward_type = position_embedding_type, feed_forward_type
        self.emb_pooler, self.classifier_dropout = emb_pooler, classifier_dropout
        super().__init__(pad_token_id=pad_token_id, **kwargs)


def alibi_slopes(n_heads):
    """The ALiBi paper's slopes: for a power of two n, the geometric sequence starting at 2^(-8/n)
    with that ratio; otherwise the largest power of two p's slopes, then every other slope of 2p."""
    def power_of_two(n):
        start = 2.0 ** (-8.0 / n)
        return [start ** (i + 1) for i in range(n)]
    if math.log2(n_heads).is_integer():
        return power_of_two(n_heads)
    p = 2 ** math.floor(math.log2(n_heads))
    return power_of_two(p) + power_of_two(2 * p)[0::2][: n_heads - p]


class JinaBertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, f, eps = c.hidden_size, c.intermediate_size, c.layer_norm_eps
        self.n_head, self.intermediate_size = c.num_attention_heads, f
        self.attention = nn.Module()
        self.attention.self = nn.Module()
        for name in ("query", "key", "value"):
            setattr(self.attention.self, name, nn.Linear(d, d))
        self.attention.output = nn.Module()
        self.attention.output.dense = nn.Linear(d, d)
        self.attention.output.LayerNorm = nn.LayerNorm(d, eps=eps)
        self.mlp = nn.Module()
        self.mlp.gated_layers = nn.Linear(d, 2 * f, bias=False)
        self.mlp.wo = nn.Linear(f, d)
        self.mlp.layernorm = nn.LayerNorm(d, eps=eps)

    def forward(self, x, bias):
        b, n, d = x.shape
        h = self.n_head
        sa = self.attention.self
        q, k, v = (lin(x).view(b, n, h, d // h).transpose(1, 2) for lin in (sa.query, sa.key, sa.value))
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=bias).transpose(1, 2).reshape(b, n, d)
        o = self.attention.output
        x = o.LayerNorm(x + o.dense(a))
        gu = self.mlp.gated_layers(x)
        z = F.gelu(gu[..., : self.intermediate_size]) * gu[..., self.intermediate_size:]
        return self.mlp.layernorm(x + self.mlp.wo(z))


class JinaBertPreTrainedModel(PreTrainedModel):
    config_class = JinaBertConfig
    base_model_prefix = "bert"
    _supports_sdpa = True


class JinaBertModel(JinaBertPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        if config.position_embedding_type != "alibi" or config.feed_forward_type != "geglu" or config.hidden_act != "gelu":
            raise ValueError("jina_bert_v2.py implements position_embedding_type alibi, feed_forward_type geglu and "
                             f"hidden_act gelu only; config.json has {config.position_embedding_type}, "
                             f"{config.feed_forward_type}, {config.hidden_act}")
        d = config.hidden_size
        self.embeddings = nn.Module()
        self.embeddings.word_embeddings = nn.Embedding(config.vocab_size, d)
        self.embeddings.token_type_embeddings = nn.Embedding(config.type_vocab_size, d)
        self.embeddings.LayerNorm = nn.LayerNorm(d, eps=config.layer_norm_eps)
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList(JinaBertLayer(config) for _ in range(config.num_hidden_layers))
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, return_dict=None):
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        e = self.embeddings
        x = e.LayerNorm(e.word_embeddings(input_ids) + e.token_type_embeddings(token_type_ids))
        n = input_ids.shape[1]
        pos = torch.arange(n, device=x.device)
        distance = (pos[:, None] - pos[None, :]).abs().to(torch.float32)
        slopes = torch.tensor(alibi_slopes(self.config.num_attention_heads), dtype=torch.float32, device=x.device)
        bias = (-slopes[:, None, None] * distance[None]).unsqueeze(0).to(x.dtype)  # [1, heads, n, n]
        if attention_mask is not None:  # padded keys get the dtype's lowest value: exp() of it is 0
            keep = attention_mask[:, None, None, :].bool()
            bias = bias.masked_fill(~keep, torch.finfo(x.dtype).min)
        for layer in self.encoder.layer:
            x = layer(x, bias)
        return BaseModelOutput(last_hidden_state=x)
