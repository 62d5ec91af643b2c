#!/usr/bin/env python3
# The GTE "NewModel" converter fixtures and their references, with NumPy (gte_new_ref.py; HF tokenizers
# only for the reranker's pairs):
#   tests/convert/fixtures/gte-new-tiny/        an HF / sentence-transformers folder as
#       gte-base-en-v1.5's: config.json (NewConfig's fields, rope_theta and rope_scaling ntk),
#       model.safetensors (seeded random weights), the WordPiece tokenizer files of bert-dense-tiny,
#       modules.json (CLS pooling, Normalize), that folder's prompts;
#   tests/convert/fixtures/vectors/gte-new-tiny.json   the reference vectors of the converter
#       tests' texts, without and with each prompt (convert_vectors_test.cpp reads it as every case);
#   tests/convert/fixtures/long/gte-new-tiny.json      one text of exactly 8192 tokens;
#   tests/convert/fixtures/gte-new-cls-tiny/ + vectors/gte-new-cls-tiny.json   a reranker as
#       gte-multilingual-reranker-base's class (NewForSequenceClassification: backbone under "new.",
#       new.pooler.dense, classifier) with bert-cls-tiny's tokenizer files: the logits of the texts
#       (bert-cls-tiny's HF ids) and of (query, document) pairs tokenized by HF's tokenizers;
#   tests/convert/fixtures/gte-new-rms-tiny/ + vectors/gte-new-rms-tiny.json   gte-new-tiny's folder
#       with layer_norm_type rms_norm and hidden_act silu (NewConfig's other choices), its vectors.
# The texts' token ids are the HF tokenizer's: the folder carries bert-dense-tiny's tokenizer files
# and prompts, so the ids are those convert_vectors.py recorded from the HF tokenizer in
# vectors/bert-dense-tiny.json (the same texts, prompts and tokenizer). The 8192-token text is
# those texts' ids (without [CLS] / [SEP]) run together, between one [CLS] and one [SEP].
"""Usage:  python3 tools/refgen/make_gte_new.py   (a Python with numpy and tokenizers; writes the outputs above)"""
import json
import pathlib
import shutil
import sys
from importlib import metadata

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gte_new_ref  # noqa: E402
from make_nomic_bert import rounded, save_safetensors  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "convert" / "fixtures"
NAME = "gte-new-tiny"
TOKENIZER_FROM = "bert-dense-tiny"
LONG_TOKENS = 8192


def random_weights(c, seed=25):
    """Matrices ~ N(0, 0.08), biases N(0, 0.05), word embeddings N(0, 0.5), token types
    N(0, 0.05), LayerNorm weights 1 + N(0, 0.1) and biases N(0, 0.05) (away from the identity, so
    a mis-routed norm or bias shows)."""
    rng = np.random.default_rng(seed)
    d, f = c["hidden_size"], c["intermediate_size"]
    w = {"embeddings.word_embeddings.weight": rng.normal(0, 0.5, (c["vocab_size"], d))}
    if c["type_vocab_size"] > 0:
        w["embeddings.token_type_embeddings.weight"] = rng.normal(0, 0.05, (c["type_vocab_size"], d))
    norm = lambda p: {p + ".weight": 1 + rng.normal(0, 0.1, d), p + ".bias": rng.normal(0, 0.05, d)}
    w.update(norm("embeddings.LayerNorm"))
    rms = c["layer_norm_type"] == "rms_norm"  # RMSNorm blocks have a weight only
    block_norm = lambda p: {k: v for k, v in norm(p).items() if not (rms and k.endswith(".bias"))}
    for layer in range(c["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        w[p + "attention.qkv_proj.weight"] = rng.normal(0, 0.08, (3 * d, d))
        w[p + "attention.qkv_proj.bias"] = rng.normal(0, 0.05, 3 * d)
        w[p + "attention.o_proj.weight"] = rng.normal(0, 0.08, (d, d))
        w[p + "attention.o_proj.bias"] = rng.normal(0, 0.05, d)
        w.update(block_norm(p + "attn_ln"))
        w[p + "mlp.up_gate_proj.weight"] = rng.normal(0, 0.08, (2 * f, d))
        w[p + "mlp.down_proj.weight"] = rng.normal(0, 0.08, (d, f))
        w[p + "mlp.down_proj.bias"] = rng.normal(0, 0.05, d)
        w.update(block_norm(p + "mlp_ln"))
    return {k: v.astype(np.float32) for k, v in w.items()}  # the stored weights; the reference reads these


def write_folder(path, c, weights):
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    save_safetensors(path / "model.safetensors", weights)
    (path / "config.json").write_text(json.dumps(c, indent=2) + "\n")
    src = FIXTURES / TOKENIZER_FROM
    shutil.copy(src / "tokenizer.json", path / "tokenizer.json")
    tok_cfg = json.loads((src / "tokenizer_config.json").read_text())
    tok_cfg["model_max_length"] = LONG_TOKENS
    (path / "tokenizer_config.json").write_text(json.dumps(tok_cfg, indent=2) + "\n")
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    (path / "modules.json").write_text(json.dumps(modules, indent=2) + "\n")
    (path / "1_Pooling").mkdir()
    (path / "2_Normalize").mkdir()
    modes = {m: m == "cls_token" for m in ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens",
                                              "weightedmean_tokens", "lasttoken")}
    pool = {"word_embedding_dimension": c["hidden_size"], **{f"pooling_mode_{k}": v for k, v in modes.items()},
            "include_prompt": True}
    (path / "1_Pooling" / "config.json").write_text(json.dumps(pool, indent=2) + "\n")
    (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": LONG_TOKENS, "do_lower_case": False}) + "\n")
    prompts = json.loads((src / "config_sentence_transformers.json").read_text())["prompts"]
    st = {"prompts": prompts, "default_prompt_name": None, "similarity_fn_name": "cosine"}
    (path / "config_sentence_transformers.json").write_text(json.dumps(st, indent=2) + "\n")
    return prompts


def source_line(what):
    return f"tools/refgen/{what} with numpy=={metadata.version('numpy')} (gte_new_ref.py, float64)"


def main():
    ids_ref = json.loads((FIXTURES / "vectors" / f"{TOKENIZER_FROM}.json").read_text())
    vocab = json.loads((FIXTURES / TOKENIZER_FROM / "tokenizer.json").read_text())["model"]["vocab"]
    c = gte_new_ref.config(len(vocab))
    weights = random_weights(c)
    path = FIXTURES / NAME
    prompts = write_folder(path, c, weights)
    variants = []
    for v in ids_ref["variants"]:
        assert v["pooling"] is None and (v["prompt_name"] is None or prompts[v["prompt_name"]] == v["prompt"]), v["label"]
        variants.append({"label": v["label"], "pooling": None, "prompt_name": v["prompt_name"], "prompt": v["prompt"],
                         "ids": v["ids"], "vectors": [rounded(gte_new_ref.embed(weights, c, s)) for s in v["ids"]]})
    case = {"case": NAME, "reference": "gte-new-reference", "pipeline": "sentence-transformers",
            "source": source_line("make_gte_new.py"), "texts": ids_ref["texts"], "normalized": True,
            "default_prompt_name": None, "variants": variants}
    out = FIXTURES / "vectors" / f"{NAME}.json"
    out.write_text(json.dumps(case, indent=None, ensure_ascii=False) + "\n")
    print(f"{out.relative_to(ROOT)}: {out.stat().st_size} bytes")

    plain = ids_ref["variants"][0]["ids"]
    cls, sep = plain[0][0], plain[0][-1]
    body = []
    while len(body) < LONG_TOKENS - 2:
        for s in plain:
            body.extend(s[1:-1])
    long_ids = [cls] + body[:LONG_TOKENS - 2] + [sep]
    long_case = {"case": NAME, "reference": "gte-new-reference", "source": source_line("make_gte_new.py"),
                 "normalized": True, "variants": [{"label": f"{LONG_TOKENS} tokens", "pooling": None, "prompt_name": None,
                                                   "prompt": "", "ids": [long_ids],
                                                   "vectors": [rounded(gte_new_ref.embed(weights, c, long_ids))]}]}
    (FIXTURES / "long").mkdir(exist_ok=True)
    out = FIXTURES / "long" / f"{NAME}.json"
    out.write_text(json.dumps(long_case, indent=None) + "\n")
    print(f"{out.relative_to(ROOT)}: {out.stat().st_size} bytes")
    for p in sorted(path.rglob("*")):
        if p.is_file():
            print(f"{p.relative_to(FIXTURES)}  {p.stat().st_size} bytes")
    make_rms_variant()
    make_reranker()


RMS_NAME = "gte-new-rms-tiny"


def make_rms_variant():
    """RMSNorm blocks and a SiLU gate: the same texts and tokenizer as gte-new-tiny."""
    ids_ref = json.loads((FIXTURES / "vectors" / f"{TOKENIZER_FROM}.json").read_text())
    vocab = json.loads((FIXTURES / TOKENIZER_FROM / "tokenizer.json").read_text())["model"]["vocab"]
    c = gte_new_ref.config(len(vocab))
    c["layer_norm_type"], c["hidden_act"], c["layer_norm_eps"] = "rms_norm", "silu", 1e-6
    weights = random_weights(c, seed=28)
    prompts = write_folder(FIXTURES / RMS_NAME, c, weights)
    variants = []
    for v in ids_ref["variants"]:
        assert v["pooling"] is None and (v["prompt_name"] is None or prompts[v["prompt_name"]] == v["prompt"]), v["label"]
        variants.append({"label": v["label"], "pooling": None, "prompt_name": v["prompt_name"], "prompt": v["prompt"],
                         "ids": v["ids"], "vectors": [rounded(gte_new_ref.embed(weights, c, s)) for s in v["ids"]]})
    case = {"case": RMS_NAME, "reference": "gte-new-reference", "pipeline": "sentence-transformers",
            "source": source_line("make_gte_new.py"), "texts": ids_ref["texts"], "normalized": True,
            "default_prompt_name": None, "variants": variants}
    out = FIXTURES / "vectors" / f"{RMS_NAME}.json"
    out.write_text(json.dumps(case, indent=None, ensure_ascii=False) + "\n")
    print(f"{out.relative_to(ROOT)}: {out.stat().st_size} bytes")


CLS_NAME = "gte-new-cls-tiny"
CLS_TOKENIZER_FROM = "bert-cls-tiny"


def make_reranker():
    """The reranker folder and its reference logits (texts and pairs as bert-cls-tiny's case)."""
    from tokenizers import Tokenizer  # HF's tokenizer for the pairs' ids and token types

    cls_ref = json.loads((FIXTURES / "vectors" / f"{CLS_TOKENIZER_FROM}.json").read_text())
    src = FIXTURES / CLS_TOKENIZER_FROM
    vocab = json.loads((src / "tokenizer.json").read_text())["model"]["vocab"]
    c = gte_new_ref.config(len(vocab), type_vocab_size=2)
    c["architectures"] = ["NewForSequenceClassification"]
    c["auto_map"]["AutoModelForSequenceClassification"] = "Alibaba-NLP/new-impl--modeling.NewForSequenceClassification"
    c["id2label"], c["label2id"] = {"0": "LABEL_0"}, {"LABEL_0": 0}
    weights = random_weights(c, seed=26)
    rng = np.random.default_rng(27)
    d = c["hidden_size"]
    head = {"pooler.dense.weight": rng.normal(0, 0.3, (d, d)), "pooler.dense.bias": rng.normal(0, 0.1, d),
            "classifier.weight": rng.normal(0, 0.5, (1, d)), "classifier.bias": rng.normal(0, 0.1, 1)}
    weights.update({k: v.astype(np.float32) for k, v in head.items()})
    stored = {("" if k.startswith("classifier.") else "new.") + k: v for k, v in weights.items()}
    path = FIXTURES / CLS_NAME
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    save_safetensors(path / "model.safetensors", stored)
    (path / "config.json").write_text(json.dumps(c, indent=2) + "\n")
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(src / f, path / f)
    tok = Tokenizer.from_file(str(src / "tokenizer.json"))
    v = cls_ref["variants"][0]
    assert v["pooling"] == "rank", v["label"]
    logits = [rounded(gte_new_ref.score(weights, c, s, [0] * len(s))) for s in v["ids"]]
    pair_scores = []
    for q, doc in cls_ref["pairs"]:
        e = tok.encode(q, doc)
        pair_scores.append(float(f"{gte_new_ref.score(weights, c, e.ids, e.type_ids)[0]:.8g}"))
    case = {"case": CLS_NAME, "reference": "gte-new-reference", "source": source_line("make_gte_new.py") +
            f", tokenizers=={metadata.version('tokenizers')} (pair ids)", "texts": cls_ref["texts"], "normalized": False,
            "pairs": cls_ref["pairs"], "pair_scores": pair_scores,
            "variants": [{"label": "classifier logit", "pooling": "rank", "prompt_name": None, "prompt": "",
                          "ids": v["ids"], "vectors": logits}]}
    out = FIXTURES / "vectors" / f"{CLS_NAME}.json"
    out.write_text(json.dumps(case, indent=None, ensure_ascii=False) + "\n")
    print(f"{out.relative_to(ROOT)}: {out.stat().st_size} bytes")

if __name__ == "__main__":
    main()
