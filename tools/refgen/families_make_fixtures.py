#!/usr/bin/env python3
# Tiny random-weight HF / sentence-transformers folders of the encoder families of issue #25 that
# are not in convert_make_fixtures.py (which holds the MPNet and T5 builders): ModernBERT.
# Written under tests/convert/fixtures/<name>/ and read by the converter tests the same way
# (tools/refgen/convert_vectors.py computes their reference vectors).
# Run with the refgen venv:  $(tools/refgen/setup_venv.sh) tools/refgen/families_make_fixtures.py [NAME ...] [--out DIR]
"""Tiny model folders of the newer encoder families for `embed convert` tests.

modern-bert-cls-tiny: the same body as ModernBertForSequenceClassification with one label,
mean pooling before the head (classifier_pooling "mean") and a dense bias.

modern-bert-tiny: ModernBertModel (transformers' class), 4 layers so that the dense-first pattern
(every 3rd layer global) has both kinds twice, a local window of 16 (|i - j| <= 8, far below the
120-token texts so that the window shows), two rotary bases, mean pooling + Normalize and a query
prompt, as modernbert-embed is saved; 8192 positions, as ModernBERT's, for the one-pass long
input (convert_vectors.py's LONG_CASES). Its vocabulary is byte-level BPE as ModernBERT's (the cut
Qwen vocabulary of convert_make_fixtures.py behind GPT-2's pre-tokenizer regex) with ModernBERT's
[CLS] A [SEP] template.
"""
import argparse
import pathlib

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

import convert_make_fixtures as cmf

ROOT = pathlib.Path(__file__).resolve().parents[2]


def modern_bert_tokenizer():
    vocab, merges = cmf.small_qwen_bpe()
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:0 [SEP]:0",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
                                   pad_token="[PAD]", mask_token="[MASK]", model_max_length=128)


def build_modern_bert_tiny():
    from transformers import ModernBertConfig, ModernBertModel
    tok = modern_bert_tokenizer()
    torch.manual_seed(12)
    ids = tok.convert_tokens_to_ids
    cfg = ModernBertConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
        max_position_embeddings=8192, local_attention=16, global_attn_every_n_layers=3, global_rope_theta=160000.0,
        local_rope_theta=10000.0, norm_eps=1e-5, pad_token_id=ids("[PAD]"), bos_token_id=ids("[CLS]"),
        cls_token_id=ids("[CLS]"), eos_token_id=ids("[SEP]"), sep_token_id=ids("[SEP]"))
    model = ModernBertModel(cfg).eval()
    # HF's init (std 0.02) leaves attention nearly uniform, so that the local window would hardly
    # show: matrices ~ N(0, 1/fan_in), the fused q/k/v at 1.5 times that scale (peaked attention).
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2 and "embeddings" not in name:
                p.normal_(0.0, (1.5 if "Wqkv" in name else 1.0) / p.shape[1] ** 0.5)
    cmf.perturb_norms(model)
    path = cmf.save(model, tok, "modern-bert-tiny", torch.float32)
    cmf.write_st_pipeline(path, 64, "mean_tokens", prompts={"query": "search_query: "}, seed=90)


def build_modern_bert_cls_tiny():
    """A ModernBERT reranker (ModernBertForSequenceClassification, one label) pooling the mean
    before its head, as gte-reranker-modernbert-base: head.dense (with bias) -> GELU -> head.norm,
    then the classifier."""
    from transformers import ModernBertConfig, ModernBertForSequenceClassification
    tok = modern_bert_tokenizer()
    torch.manual_seed(13)
    ids = tok.convert_tokens_to_ids
    cfg = ModernBertConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=96, num_hidden_layers=4, num_attention_heads=4,
        max_position_embeddings=256, local_attention=16, global_attn_every_n_layers=3, global_rope_theta=160000.0,
        local_rope_theta=10000.0, norm_eps=1e-5, pad_token_id=ids("[PAD]"), bos_token_id=ids("[CLS]"),
        cls_token_id=ids("[CLS]"), eos_token_id=ids("[SEP]"), sep_token_id=ids("[SEP]"), num_labels=1,
        classifier_pooling="mean", classifier_bias=True)
    model = ModernBertForSequenceClassification(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2 and "embeddings" not in name:
                p.normal_(0.0, (1.5 if "Wqkv" in name else 1.0) / p.shape[1] ** 0.5)
    cmf.perturb_norms(model)
    with torch.no_grad():  # logits away from 0, where the test's per-logit relative bound means nothing
        model.classifier.bias.fill_(2.0)
    cmf.save(model, tok, "modern-bert-cls-tiny", torch.float32)


BUILDERS = {"modern-bert-tiny": build_modern_bert_tiny, "modern-bert-cls-tiny": build_modern_bert_cls_tiny}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", help="folders to build (default: all)")
    ap.add_argument("--out", type=pathlib.Path, default=cmf.OUT, help="where to write them (default: tests/convert/fixtures)")
    args = ap.parse_args()
    cmf.OUT = args.out
    cmf.OUT.mkdir(parents=True, exist_ok=True)
    for name in args.names or BUILDERS:
        BUILDERS[name]()
        for p in sorted((cmf.OUT / name).rglob("*")):
            if p.is_file():
                print(f"{p.relative_to(cmf.OUT)}  {p.stat().st_size} bytes")


if __name__ == "__main__":
    main()
