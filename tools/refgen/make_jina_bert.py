#!/usr/bin/env python3
# The jina-bert-v2 converter fixtures and their references, from jina_bert_ref.py (NumPy float64):
#   tests/convert/fixtures/jina-bert-v2-tiny/       an HF / sentence-transformers folder as
#       jina-embeddings-v2-base-en's (JinaBertModel weights, seeded random, without a prefix):
#       config.json with jina's fields, model.safetensors, the WordPiece tokenizer files of
#       bert-dense-tiny (tokenizer_class BertTokenizer, as jina's), modules.json (mean pooling,
#       Normalize), that folder's prompts;
#   tests/convert/fixtures/vectors/jina-bert-v2-tiny.json   reference vectors of the converter
#       tests' texts, without and with each prompt (convert_vectors_test.cpp reads it as every case);
#   tests/convert/fixtures/long/jina-bert-v2-tiny.json      one text of exactly 8192 tokens;
#   tests/convert/fixtures/jina-bert-v2-cls-tiny/   a JinaBertForSequenceClassification folder as
#       jina-reranker-v1-*'s (weights under "bert.", pooler.dense and a one-logit classifier) whose
#       layers also carry the optional q/k LayerNorms (attention.self.layer_norm_q / _k), with
#       bert-cls-tiny's tokenizer files;
#   tests/convert/fixtures/rank/jina-bert-v2-cls-tiny.json  its logits for the single texts and
#       for bert-cls-tiny's query/document pairs (in rank/, not vectors/: convert_vectors_test.cpp
#       checks these as scores, |diff| <= eps max(1, |ref|), since one text's logit, 0.047, is a
#       cancellation whose relative error says nothing about the weights).
# Token ids are the HF tokenizer's: single texts reuse the ids convert_vectors.py recorded from the
# same tokenizer files (vectors/bert-dense-tiny.json, vectors/bert-cls-tiny.json); the pairs are
# encoded here by the `tokenizers` library from bert-cls-tiny's tokenizer.json ([CLS] q [SEP] d
# [SEP], document tokens of type 1), as HF's AutoTokenizer does.
"""Usage:  ~/.cache/embed/venv-refgen/bin/python tools/refgen/make_jina_bert.py   (numpy + tokenizers)"""
import json
import pathlib
import shutil
import sys
from importlib import metadata

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import jina_bert_ref  # noqa: E402
from make_nomic_bert import rounded, save_safetensors  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "convert" / "fixtures"
NAME, CLS_NAME = "jina-bert-v2-tiny", "jina-bert-v2-cls-tiny"
TOKENIZER_FROM, CLS_TOKENIZER_FROM = "bert-dense-tiny", "bert-cls-tiny"
LONG_TOKENS = 8192


def random_weights(c, seed, prefix="", qk_norm=False, head=False):
    """Matrices ~ N(0, 0.08), biases N(0, 0.05), word embeddings N(0, 0.5), token types
    N(0, 0.05), LayerNorm weights 1 + N(0, 0.1) and biases N(0, 0.05) (away from the identity, so a
    mis-routed norm shows). Keys are the checkpoint's (with `prefix` on the body)."""
    rng = np.random.default_rng(seed)
    d, f = c["hidden_size"], c["intermediate_size"]
    w = {"embeddings.word_embeddings.weight": rng.normal(0, 0.5, (c["vocab_size"], d)),
         "embeddings.token_type_embeddings.weight": rng.normal(0, 0.05, (c["type_vocab_size"], d))}
    norm = lambda p: {p + ".weight": 1 + rng.normal(0, 0.1, d), p + ".bias": rng.normal(0, 0.05, d)}
    linear = lambda p, rows, cols: {p + ".weight": rng.normal(0, 0.08, (rows, cols)), p + ".bias": rng.normal(0, 0.05, rows)}
    w.update(norm("embeddings.LayerNorm"))
    for layer in range(c["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        for name in ("query", "key", "value"):
            w.update(linear(p + "attention.self." + name, d, d))
        if qk_norm:
            w.update(norm(p + "attention.self.layer_norm_q"))
            w.update(norm(p + "attention.self.layer_norm_k"))
        w.update(linear(p + "attention.output.dense", d, d))
        w.update(norm(p + "attention.output.LayerNorm"))
        w[p + "mlp.gated_layers.weight"] = rng.normal(0, 0.08, (2 * f, d))
        w.update(linear(p + "mlp.wo", d, f))
        w.update(norm(p + "mlp.layernorm"))
    if head:
        w.update(linear("pooler.dense", d, d))
        w = {prefix + k: v for k, v in w.items()}
        w["classifier.weight"] = rng.normal(0, 0.3, (1, d))
        w["classifier.bias"] = rng.normal(0, 0.05, 1)
    else:
        w = {prefix + k: v for k, v in w.items()}
    return {k: np.asarray(v, dtype=np.float32) for k, v in w.items()}  # the stored weights; the reference reads these


def unprefixed(weights, prefix):
    return {(k[len(prefix):] if k.startswith(prefix) else k): v for k, v in weights.items()}


def copy_tokenizer(src, path):
    shutil.copy(src / "tokenizer.json", path / "tokenizer.json")
    tok_cfg = json.loads((src / "tokenizer_config.json").read_text())
    tok_cfg["model_max_length"] = LONG_TOKENS
    tok_cfg["tokenizer_class"] = "BertTokenizer"  # jina's tokenizer_config.json (llama.cpp's converter reads it)
    (path / "tokenizer_config.json").write_text(json.dumps(tok_cfg, indent=2) + "\n")


def write_folder(path, c, weights):
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    save_safetensors(path / "model.safetensors", weights)
    (path / "config.json").write_text(json.dumps(c, indent=2) + "\n")
    src = FIXTURES / TOKENIZER_FROM
    copy_tokenizer(src, path)
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
               {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]
    (path / "modules.json").write_text(json.dumps(modules, indent=2) + "\n")
    (path / "1_Pooling").mkdir()
    (path / "2_Normalize").mkdir()
    modes = {m: m == "mean_tokens" for m in ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens",
                                              "weightedmean_tokens", "lasttoken")}
    pool = {"word_embedding_dimension": c["hidden_size"], **{f"pooling_mode_{k}": v for k, v in modes.items()},
            "include_prompt": True}
    (path / "1_Pooling" / "config.json").write_text(json.dumps(pool, indent=2) + "\n")
    (path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": LONG_TOKENS, "do_lower_case": False}) + "\n")
    prompts = json.loads((src / "config_sentence_transformers.json").read_text())["prompts"]
    st = {"prompts": prompts, "default_prompt_name": None, "similarity_fn_name": "cosine"}
    (path / "config_sentence_transformers.json").write_text(json.dumps(st, indent=2) + "\n")
    return prompts


def source_line(extra=""):
    return (f"tools/refgen/make_jina_bert.py with numpy=={metadata.version('numpy')}{extra} "
            "(jina_bert_ref.py, float64)")


def write_json(path, obj):
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(obj, indent=None, ensure_ascii=False) + "\n")
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes")


def embedding_case():
    ids_ref = json.loads((FIXTURES / "vectors" / f"{TOKENIZER_FROM}.json").read_text())
    vocab = json.loads((FIXTURES / TOKENIZER_FROM / "tokenizer.json").read_text())["model"]["vocab"]
    c = jina_bert_ref.config(len(vocab), architecture="JinaBertModel")
    weights = random_weights(c, seed=25)
    prompts = write_folder(FIXTURES / NAME, c, weights)
    variants = []
    for v in ids_ref["variants"]:
        assert v["pooling"] is None and (v["prompt_name"] is None or prompts[v["prompt_name"]] == v["prompt"]), v["label"]
        variants.append({"label": v["label"], "pooling": None, "prompt_name": v["prompt_name"], "prompt": v["prompt"],
                         "ids": v["ids"], "vectors": [rounded(jina_bert_ref.embed(weights, c, s)) for s in v["ids"]]})
    write_json(FIXTURES / "vectors" / f"{NAME}.json",
               {"case": NAME, "reference": "jina-bert-v2-reference", "pipeline": "sentence-transformers",
                "source": source_line(), "texts": ids_ref["texts"], "normalized": True, "default_prompt_name": None,
                "variants": variants})
    plain = ids_ref["variants"][0]["ids"]
    cls, sep = plain[0][0], plain[0][-1]
    body = []
    while len(body) < LONG_TOKENS - 2:
        for s in plain:
            body.extend(s[1:-1])
    long_ids = [cls] + body[:LONG_TOKENS - 2] + [sep]
    write_json(FIXTURES / "long" / f"{NAME}.json",
               {"case": NAME, "reference": "jina-bert-v2-reference", "source": source_line(), "normalized": True,
                "variants": [{"label": f"{LONG_TOKENS} tokens", "pooling": None, "prompt_name": None, "prompt": "",
                              "ids": [long_ids], "vectors": [rounded(jina_bert_ref.embed(weights, c, long_ids))]}]})


def reranker_case():
    from tokenizers import Tokenizer
    ref = json.loads((FIXTURES / "vectors" / f"{CLS_TOKENIZER_FROM}.json").read_text())
    src = FIXTURES / CLS_TOKENIZER_FROM
    vocab = json.loads((src / "tokenizer.json").read_text())["model"]["vocab"]
    c = jina_bert_ref.config(len(vocab), architecture="JinaBertForSequenceClassification")
    c.update({"id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}, "num_labels": 1})
    prefix = "bert."
    weights = random_weights(c, seed=26, prefix=prefix, qk_norm=True, head=True)
    path = FIXTURES / CLS_NAME
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    save_safetensors(path / "model.safetensors", weights)
    (path / "config.json").write_text(json.dumps(c, indent=2) + "\n")
    copy_tokenizer(src, path)
    body = unprefixed(weights, prefix)
    tok = Tokenizer.from_file(str(src / "tokenizer.json"))
    ids = ref["variants"][0]["ids"]
    for text, seq in zip(ref["texts"], ids):
        assert tok.encode(text).ids == seq, text  # the recorded ids are this tokenizer's
    pair_scores = []
    for q, d in ref["pairs"]:
        enc = tok.encode(q, d)
        pair_scores.append(float(jina_bert_ref.classify(body, c, enc.ids, enc.type_ids)[0]))
    write_json(FIXTURES / "rank" / f"{CLS_NAME}.json",
               {"case": CLS_NAME, "reference": "cross-encoder", "source": source_line(f", tokenizers=={metadata.version('tokenizers')}"),
                "texts": ref["texts"], "normalized": False, "pairs": ref["pairs"], "pair_scores": rounded(pair_scores),
                "variants": [{"label": "classifier logit", "pooling": "rank", "prompt_name": None, "prompt": "", "ids": ids,
                              "vectors": [rounded(jina_bert_ref.classify(body, c, s)) for s in ids]}]})


def main():
    embedding_case()
    reranker_case()
    for name in (NAME, CLS_NAME):
        for p in sorted((FIXTURES / name).rglob("*")):
            if p.is_file():
                print(f"{p.relative_to(FIXTURES)}  {p.stat().st_size} bytes")


if __name__ == "__main__":
    main()
