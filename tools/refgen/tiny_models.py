# Specs of the tiny random-weight models (HF transformers classes, shapes, tokenizer kind, which
# poolings are referenced) and the code that builds each one as an HF folder: seeded weights,
# tokenizer, sentence-transformers pooling config, README. No reference outputs are made here.
import json
from dataclasses import dataclass, field

import tiny_tokenizers

VOCAB = 1000
BIAS_STD = 0.02


@dataclass
class TinySpec:
    name: str           # fixture folder name under tests/fixtures/models/
    hf_class: str       # transformers class that is saved and run
    family: str         # bert | qwen3 | qwen2 | llama | gemma3
    tokenizer: str      # wordpiece | qwen-eos | qwen | qwen-rerank | llama3 | gemma-spm
    max_len: int        # max_position_embeddings; two cases fill it exactly
    seed: int
    config: dict
    poolings: tuple     # pooled_<kind>.npy written for these kinds
    st_pooling: str | None = None  # pooling written to 1_Pooling/config.json (-> GGUF pooling_type)
    rank: str | None = None        # bert-logit | qwen3-yes-no
    readme: str | None = None
    notes: list = field(default_factory=list)


ROPE = {"rope_type": "default"}

SPECS = [
    TinySpec(
        name="tiny-bert-rank", hf_class="BertForSequenceClassification", family="bert",
        tokenizer="wordpiece", max_len=128, seed=1101, rank="bert-logit", poolings=("mean", "cls"),
        config=dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=128, max_position_embeddings=128, type_vocab_size=2,
                    hidden_act="gelu", layer_norm_eps=1e-12, num_labels=1,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, pad_token_id=0),
        notes=["cross-encoder: score = classifier(tanh(pooler.dense(h[CLS]))), the raw logit (num_labels 1)",
               "pooled_mean / pooled_cls come from the same model's final hidden states"]),
    TinySpec(
        name="tiny-qwen3-embed", hf_class="Qwen3ForCausalLM", family="qwen3", tokenizer="qwen-eos",
        max_len=128, seed=1201, poolings=("last", "mean"), st_pooling="lasttoken",
        config=dict(vocab_size=VOCAB + 2, hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=32, intermediate_size=128,
                    max_position_embeddings=128, rms_norm_eps=1e-6, tie_word_embeddings=True,
                    rope_parameters=dict(ROPE, rope_theta=1_000_000.0)),
        notes=["Qwen3-Embedding style: tokenizer appends <|endoftext|>; pooled_last is its final-norm hidden state",
               "head_dim 32 with hidden 64: q projection is 64 -> 128 (n_heads * d_head != d_model)"]),
    TinySpec(
        name="tiny-qwen3-rerank", hf_class="Qwen3ForCausalLM", family="qwen3", tokenizer="qwen-rerank",
        max_len=256, seed=1301, rank="qwen3-yes-no", poolings=("last",),
        readme="# Qwen3-Reranker (tiny random-weight test model)\n",
        config=dict(vocab_size=VOCAB + 2, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=16, intermediate_size=128,
                    max_position_embeddings=256, rms_norm_eps=1e-6, tie_word_embeddings=True,
                    rope_parameters=dict(ROPE, rope_theta=1_000_000.0)),
        notes=["Qwen3-Reranker style: score = softmax([l_yes, l_no])[0] of the tied lm_head at the last token",
               "cases are the converter's rerank chat template filled with (query, document)"]),
    TinySpec(
        name="tiny-qwen2", hf_class="Qwen2ForCausalLM", family="qwen2", tokenizer="qwen",
        max_len=128, seed=1401, poolings=("mean", "last"), st_pooling="lasttoken",
        config=dict(vocab_size=VOCAB + 2, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, intermediate_size=160, max_position_embeddings=128,
                    rms_norm_eps=1e-6, tie_word_embeddings=True,
                    rope_parameters=dict(ROPE, rope_theta=1_000_000.0)),
        notes=["Qwen2: q/k/v projections carry biases; tokenizer adds no special tokens"]),
    TinySpec(
        name="tiny-llama", hf_class="LlamaForCausalLM", family="llama", tokenizer="llama3",
        max_len=128, seed=1501, poolings=("mean", "last"), st_pooling="mean",
        config=dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, intermediate_size=128, max_position_embeddings=128,
                    rms_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=0, eos_token_id=1,
                    rope_parameters=dict(ROPE, rope_theta=500_000.0)),
        notes=["Llama-3 style: tokenizer adds <|begin_of_text|>; the converter permutes Q/K for NORM RoPE"]),
    TinySpec(
        name="tiny-gemma3-embed", hf_class="Gemma3TextModel", family="gemma3", tokenizer="gemma-spm",
        max_len=128, seed=1601, poolings=("mean",), st_pooling="mean",
        config=dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=6, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=16, intermediate_size=128,
                    max_position_embeddings=128, rms_norm_eps=1e-6, query_pre_attn_scalar=16,
                    sliding_window=16, use_bidirectional_attention=True,
                    hidden_activation="gelu_pytorch_tanh", pad_token_id=0, eos_token_id=1, bos_token_id=2),
        notes=["EmbeddingGemma style: bidirectional attention; layers 0-4 sliding (|i-j| <= 8), layer 5 global",
               "sliding_window 16 in config.json (HF keeps 16//2+1 internally); norms stored as w, applied as 1+w",
               "no Dense/Normalize modules: pooled_mean is the plain mean of final-norm hidden states"]),
    TinySpec(
        name="tiny-gemma3", hf_class="Gemma3ForCausalLM", family="gemma3", tokenizer="gemma-spm",
        max_len=128, seed=1701, poolings=("mean", "last"), st_pooling="mean",
        config=dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=6, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=16, intermediate_size=128,
                    max_position_embeddings=128, rms_norm_eps=1e-6, query_pre_attn_scalar=16,
                    sliding_window=8, hidden_activation="gelu_pytorch_tanh", pad_token_id=0,
                    eos_token_id=1, bos_token_id=2, tie_word_embeddings=True),
        notes=["gemma-3-270m style causal decoder: layers 0-4 sliding (key j visible to query i iff "
               "0 <= i - j < 8), layer 5 global; most cases are longer than the window",
               "query_pre_attn_scalar 16 = head_dim; norms stored as w, applied as 1+w; embeddings scaled by sqrt(64)",
               "the converter writes no pooling_type for gemma3 (the engine defaults to mean)"]),
]


def build_tokenizer(spec, out_dir, work_dir):
    kind = spec.tokenizer
    if kind == "wordpiece":
        tiny_tokenizers.build_wordpiece(out_dir, VOCAB, spec.max_len)
    elif kind in ("qwen-eos", "qwen", "qwen-rerank"):
        tiny_tokenizers.build_qwen_bpe(out_dir, VOCAB, spec.max_len, append_eos=(kind == "qwen-eos"),
                                       with_rerank_words=(kind == "qwen-rerank"))
    elif kind == "llama3":
        tiny_tokenizers.build_llama3_bpe(out_dir, VOCAB, spec.max_len)
    elif kind == "gemma-spm":
        tiny_tokenizers.build_gemma_spm(out_dir, VOCAB, spec.max_len, work_dir / "spm")
    else:
        raise ValueError(f"unknown tokenizer kind {kind}")


def randomize(model, spec, torch):
    """Seeded weights with non-degenerate activations: matrices ~ N(0, 1/sqrt(fan_in)), token
    embeddings ~ N(0, 0.2) (BERT: words 0.5, positions and token types 0.05), norm weights
    1 + N(0, 0.1) (Gemma stores the offset w of 1+w: N(0, 0.1)), biases ~ N(0, 0.02).
    Parameters are visited in name order, each with its own seeded generator."""
    params = dict(model.named_parameters())
    for index, name in enumerate(sorted(params)):
        p = params[name]
        gen = torch.Generator().manual_seed(spec.seed * 1000 + index)
        noise = torch.randn(p.shape, generator=gen, dtype=torch.float32)
        lname = name.lower()
        if p.ndim == 1 and "norm" in lname and lname.endswith("weight"):
            value = noise * 0.1 if spec.family == "gemma3" else 1.0 + noise * 0.1
        elif p.ndim == 1:
            value = noise * BIAS_STD
        elif "position_embeddings" in lname or "token_type_embeddings" in lname:
            value = noise * 0.05  # shared by every text: kept small so pooled vectors differ by text
        elif "word_embeddings" in lname:
            value = noise * 0.5
        elif "embed" in lname:
            value = noise * 0.2
        else:
            value = noise / (p.shape[1] ** 0.5)
        with torch.no_grad():
            p.copy_(value)


def write_st_pooling(out_dir, spec, d_model):
    if spec.st_pooling is None:
        return
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    ]
    (out_dir / "modules.json").write_text(json.dumps(modules, indent=2) + "\n")
    pooling = {"word_embedding_dimension": d_model, "pooling_mode_cls_token": spec.st_pooling == "cls",
               "pooling_mode_mean_tokens": spec.st_pooling == "mean", "pooling_mode_max_tokens": False,
               "pooling_mode_lasttoken": spec.st_pooling == "lasttoken", "include_prompt": True}
    (out_dir / "1_Pooling").mkdir(exist_ok=True)
    (out_dir / "1_Pooling" / "config.json").write_text(json.dumps(pooling, indent=2) + "\n")


def build_model(spec, out_dir, torch):
    """Creates the HF folder (weights, config, tokenizer, ST pooling, README); returns the model."""
    import transformers
    out_dir.mkdir(parents=True, exist_ok=True)
    build_tokenizer(spec, out_dir, out_dir.parent)
    model_cls = getattr(transformers, spec.hf_class)
    config_cls = model_cls.config_class
    config = config_cls(**spec.config)
    config.architectures = [spec.hf_class]
    torch.manual_seed(spec.seed)
    model = model_cls(config)
    randomize(model, spec, torch)
    model.eval()
    model.save_pretrained(out_dir)
    write_st_pooling(out_dir, spec, spec.config["hidden_size"])
    if spec.readme:
        (out_dir / "README.md").write_text(spec.readme)
    return model
