# GTE "NewModel" (gte-base-en-v1.5, gte-large-en-v1.5, gte-multilingual-base) as a transformers
# PreTrainedModel, written for this project so that sentence-transformers can run a NewModel
# folder the way users run it (modeling code named by config.json's auto_map, loaded with
# trust_remote_code=True) where the Hub's own remote code cannot be fetched. The forward is
# tools/refgen/gte_new_ref.py's, in PyTorch, batched: the same checkpoint weight names and the same
# equations (see that file), with padded keys masked out by an additive float mask in
# scaled_dot_product_attention.
#   embeddings  e = LN_emb(word[ids] + type[type_ids])      (type only if type_vocab_size > 0; no position table)
#   per layer   q, k, v = split(x Wqkv^T + b_qkv); q, k = rope(q), rope(k): rotate-half pairs
#                 (i, i + d/2), angle p * inv_freq_i; rope_scaling {"type": "ntk", "factor": f}:
#                 inv_freq_i = (rope_theta * f)^(-2i/d) / f^(2/d), else rope_theta^(-2i/d)
#               x = N_attn(x + softmax(q k^T / sqrt(d_head) + mask) v Wo^T + bo)
#               [u | g] = x Wug^T;  x = N_mlp(x + (u * act(g)) Wd^T + bd)
#               N = LayerNorm (layer_norm_type layer_norm) or RMSNorm (rms_norm); act = ACT2FN[hidden_act]
# The embedding model only (NewModel, no pooler): pack_qkv true, rope positions, no log-n
# attention scale; a config.json selecting anything else is refused at construction.
# tools/bench/check_remote_code.py checks it against the committed reference vectors.
import torch
import torch.nn.functional as F
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.activations import ACT2FN
from transformers.modeling_outputs import BaseModelOutput


class NewConfig(PretrainedConfig):
    model_type = "new"

    def __init__(self, vocab_size=30528, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.0,
                 max_position_embeddings=8192, type_vocab_size=0, initializer_range=0.02, layer_norm_type="layer_norm",
                 layer_norm_eps=1e-12, position_embedding_type="rope", rope_theta=10000.0, rope_scaling=None,
                 classifier_dropout=None, pack_qkv=True, unpad_inputs=False, use_memory_efficient_attention=False,
                 logn_attention_scale=False, logn_attention_clip1=False, pad_token_id=0, **kwargs):
        self.vocab_size, self.hidden_size, self.num_hidden_layers = vocab_size, hidden_size, num_hidden_layers
        self.num_attention_heads, self.intermediate_size, self.hidden_act = num_attention_heads, intermediate_size, hidden_act
        self.hidden_dropout_prob, self.attention_probs_dropout_prob = hidden_dropout_prob, attention_probs_dropout_prob
        self.max_position_embeddings, self.type_vocab_size = max_position_embeddings, type_vocab_size
        self.initializer_range, self.layer_norm_type, self.layer_norm_eps = initializer_range, layer_norm_type, layer_norm_eps
        self.position_embedding_type, self.rope_theta, self.rope_scaling = position_embedding_type, rope_theta, rope_scaling
        self.classifier_dropout, self.pack_qkv, self.unpad_inputs = classifier_dropout, pack_qkv, unpad_inputs
        self.use_memory_efficient_attention = use_memory_efficient_attention
        self.logn_attention_scale, self.logn_attention_clip1 = logn_attention_scale, logn_attention_clip1
        super().__init__(pad_token_id=pad_token_id, **kwargs)


def _check_supported(c):
    if c.layer_norm_type not in ("layer_norm", "rms_norm") or not c.pack_qkv or c.position_embedding_type != "rope" \
            or c.logn_attention_scale or c.hidden_act not in ACT2FN:
        raise ValueError("gte_new.py implements layer_norm_type layer_norm / rms_norm, pack_qkv, rope positions, no "
                         f"logn_attention_scale and transformers' activations; config.json has {c.layer_norm_type}, "
                         f"pack_qkv {c.pack_qkv}, {c.position_embedding_type}, logn {c.logn_attention_scale}, {c.hidden_act}")
    r = c.rope_scaling
    if r is not None and not (r.get("type") == "ntk" and "mixed_b" not in r and float(r["factor"]) > 1):
        raise ValueError(f"gte_new.py implements rope_scaling {{'type': 'ntk', 'factor': > 1}} only; config.json has {r}")


def inv_freq(d, c):
    theta = float(c.rope_theta)
    i = torch.arange(0, d, 2, dtype=torch.float64) / d
    if c.rope_scaling is None:
        return 1.0 / theta ** i
    f = float(c.rope_scaling["factor"])
    return 1.0 / (theta * f) ** i / f ** (2.0 / d)


def rope(x, freqs):
    """x [batch, heads, n, d_head] rotated by position p = 0, 1, ... (rotate-half pairs)."""
    d = x.shape[-1]
    angle = torch.arange(x.shape[2], dtype=torch.float64, device=x.device)[:, None] * freqs.to(x.device)[None, :]
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class NewRMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def block_norm(c):
    d = c.hidden_size
    return NewRMSNorm(d, c.layer_norm_eps) if c.layer_norm_type == "rms_norm" else nn.LayerNorm(d, eps=c.layer_norm_eps)


class NewLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, f = c.hidden_size, c.intermediate_size
        self.n_head, self.intermediate_size = c.num_attention_heads, f
        self.attention = nn.Module()
        self.attention.qkv_proj = nn.Linear(d, 3 * d)
        self.attention.o_proj = nn.Linear(d, d)
        self.attn_ln = block_norm(c)
        self.mlp = nn.Module()
        self.mlp.up_gate_proj = nn.Linear(d, 2 * f, bias=False)
        self.mlp.down_proj = nn.Linear(f, d)
        self.mlp_ln = block_norm(c)
        self.act = ACT2FN[c.hidden_act]

    def forward(self, x, mask, freqs):
        b, n, d = x.shape
        h = self.n_head
        q, k, v = self.attention.qkv_proj(x).view(b, n, 3, h, d // h).permute(2, 0, 3, 1, 4)
        q, k = rope(q, freqs), rope(k, freqs)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(1, 2).reshape(b, n, d)
        x = self.attn_ln(x + self.attention.o_proj(a))
        ug = self.mlp.up_gate_proj(x)
        y = self.mlp.down_proj(ug[..., : self.intermediate_size] * self.act(ug[..., self.intermediate_size:]))
        return self.mlp_ln(x + y)


class NewPreTrainedModel(PreTrainedModel):
    config_class = NewConfig
    base_model_prefix = "new"
    _supports_sdpa = True


class NewModel(NewPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        _check_supported(config)
        d = config.hidden_size
        self.embeddings = nn.Module()
        self.embeddings.word_embeddings = nn.Embedding(config.vocab_size, d)
        if config.type_vocab_size > 0:
            self.embeddings.token_type_embeddings = nn.Embedding(config.type_vocab_size, d)
        self.embeddings.LayerNorm = nn.LayerNorm(d, eps=config.layer_norm_eps)  # a LayerNorm for either layer_norm_type
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList(NewLayer(config) for _ in range(config.num_hidden_layers))
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, return_dict=None):
        e = self.embeddings
        x = e.word_embeddings(input_ids)
        if self.config.type_vocab_size > 0:
            x = x + e.token_type_embeddings(torch.zeros_like(input_ids) if token_type_ids is None else token_type_ids)
        x = e.LayerNorm(x)
        mask = None
        if attention_mask is not None:  # padded keys get the dtype's lowest value: exp() of it is 0
            keep = attention_mask[:, None, None, :].bool()
            mask = torch.zeros(keep.shape, dtype=x.dtype, device=x.device).masked_fill(~keep, torch.finfo(x.dtype).min)
        freqs = inv_freq(self.config.hidden_size // self.config.num_attention_heads, self.config)
        for layer in self.encoder.layer:
            x = layer(x, mask, freqs)
        return BaseModelOutput(last_hidden_state=x)
