# nomic-bert (nomic-embed-text v1 / v1.5) as a transformers PreTrainedModel, written for this
# project so that sentence-transformers can run a nomic-bert folder the way users run it (modeling
# code named by config.json's auto_map, loaded with trust_remote_code=True) where the Hub's own
# remote code cannot be fetched. The forward is tools/refgen/nomic_bert_ref.py's, in PyTorch,
# batched: the same checkpoint weight names and the same equations (see that file), with padded
# keys masked out by an additive float mask in scaled_dot_product_attention.
#   embeddings  e = LN_emb(word[ids] + type[type_ids])                   (no position table)
#   per layer   q, k, v = split(x Wqkv^T); q, k = rope(q), rope(k)       (rotate-half pairs (i, i + d/2),
#                                                                         angle p * base^(-2i/d_head))
#               x = LN_1(x + softmax(q k^T / sqrt(d_head) + mask) v Wo^T)
#               x = LN_2(x + fc2(fc11(x) * silu(fc12(x))))
# Only the configuration nomic-embed-text uses is implemented (post-norm, SwiGLU, no biases, full
# rotary, no rope scaling); a config.json selecting anything else is refused at construction.
# tools/bench/check_remote_code.py checks it against the committed reference vectors.
import torch
import torch.nn.functional as F
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput


class NomicBertConfig(PretrainedConfig):
    model_type = "nomic_bert"
    # sentence-transformers and transformers read the usual names (the embedding dimension, ...)
    attribute_map = {"hidden_size": "n_embd", "num_hidden_layers": "n_layer", "num_attention_heads": "n_head"}

    def __init__(self, vocab_size=30528, n_embd=768, n_head=12, n_inner=3072, n_layer=12, n_positions=8192,
                 max_trained_positions=2048, layer_norm_epsilon=1e-12, rotary_emb_base=1000.0, rotary_emb_fraction=1.0,
                 rotary_emb_interleaved=False, rotary_scaling_factor=None, type_vocab_size=2,
                 activation_function="swiglu", prenorm=False, parallel_block=False, qkv_proj_bias=False,
                 mlp_fc1_bias=False, mlp_fc2_bias=False, use_rms_norm=False, causal=False, initializer_range=0.02,
                 **kwargs):
        self.vocab_size, self.n_embd, self.n_head, self.n_inner, self.n_layer = vocab_size, n_embd, n_head, n_inner, n_layer
        self.n_positions, self.max_trained_positions = n_positions, max_trained_positions
        self.layer_norm_epsilon, self.rotary_emb_base, self.rotary_emb_fraction = layer_norm_epsilon, rotary_emb_base, rotary_emb_fraction
        self.rotary_emb_interleaved, self.rotary_scaling_factor = rotary_emb_interleaved, rotary_scaling_factor
        self.type_vocab_size, self.activation_function = type_vocab_size, activation_function
        self.prenorm, self.parallel_block, self.use_rms_norm, self.causal = prenorm, parallel_block, use_rms_norm, causal
        self.qkv_proj_bias, self.mlp_fc1_bias, self.mlp_fc2_bias = qkv_proj_bias, mlp_fc1_bias, mlp_fc2_bias
        self.initializer_range = initializer_range
        super().__init__(**kwargs)


def _check_supported(c):
    wanted = {"activation_function": "swiglu", "prenorm": False, "parallel_block": False, "qkv_proj_bias": False,
              "mlp_fc1_bias": False, "mlp_fc2_bias": False, "use_rms_norm": False, "causal": False,
              "rotary_emb_fraction": 1.0, "rotary_emb_interleaved": False, "rotary_scaling_factor": None}
    for key, value in wanted.items():
        if getattr(c, key) != value:
            raise ValueError(f"nomic_bert.py implements {key}={value!r} only; config.json has {getattr(c, key)!r}")
    if c.n_embd % c.n_head:
        raise ValueError(f"n_embd {c.n_embd} is not a multiple of n_head {c.n_head}")


def rope(x, base):
    """x [batch, heads, n, d_head] rotated by position p = 0, 1, ... (rotate-half pairs)."""
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64, device=x.device) / d))
    angle = torch.arange(x.shape[2], dtype=torch.float64, device=x.device)[:, None] * inv_freq[None, :]
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class NomicBertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, f, eps = c.n_embd, c.n_inner, c.layer_norm_epsilon
        self.n_head, self.base = c.n_head, float(c.rotary_emb_base)
        self.attn = nn.Module()
        self.attn.Wqkv = nn.Linear(d, 3 * d, bias=False)
        self.attn.out_proj = nn.Linear(d, d, bias=False)
        self.mlp = nn.Module()
        self.mlp.fc11 = nn.Linear(d, f, bias=False)
        self.mlp.fc12 = nn.Linear(d, f, bias=False)
        self.mlp.fc2 = nn.Linear(f, d, bias=False)
        self.norm1 = nn.LayerNorm(d, eps=eps)
        self.norm2 = nn.LayerNorm(d, eps=eps)

    def forward(self, x, mask):
        b, n, d = x.shape
        h = self.n_head
        q, k, v = self.attn.Wqkv(x).view(b, n, 3, h, d // h).permute(2, 0, 3, 1, 4)
        q, k = rope(q, self.base), rope(k, self.base)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(1, 2).reshape(b, n, d)
        x = self.norm1(x + self.attn.out_proj(a))
        y = self.mlp.fc2(self.mlp.fc11(x) * F.silu(self.mlp.fc12(x)))
        return self.norm2(x + y)


class NomicBertPreTrainedModel(PreTrainedModel):
    config_class = NomicBertConfig
    base_model_prefix = "bert"
    _supports_sdpa = True


class NomicBertModel(NomicBertPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        _check_supported(config)
        d = config.n_embd
        self.embeddings = nn.Module()
        self.embeddings.word_embeddings = nn.Embedding(config.vocab_size, d)
        self.embeddings.token_type_embeddings = nn.Embedding(config.type_vocab_size, d)
        self.emb_ln = nn.LayerNorm(d, eps=config.layer_norm_epsilon)
        self.encoder = nn.Module()
        self.encoder.layers = nn.ModuleList(NomicBertLayer(config) for _ in range(config.n_layer))
        self.post_init()

    def get_input_embeddings(self):
        return self.embeddings.word_embeddings

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, return_dict=None):
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = self.embeddings.word_embeddings(input_ids) + self.embeddings.token_type_embeddings(token_type_ids)
        x = self.emb_ln(x)
        mask = None
        if attention_mask is not None:  # padded keys get the dtype's lowest value: exp() of it is 0
            keep = attention_mask[:, None, None, :].bool()
            mask = torch.zeros(keep.shape, dtype=x.dtype, device=x.device).masked_fill(~keep, torch.finfo(x.dtype).min)
        for layer in self.encoder.layers:
            x = layer(x, mask)
        return BaseModelOutput(last_hidden_state=x)
