#!/usr/bin/env python3
"""Retrieval with BGE-M3's three read-outs (issue #24): dense, sparse, ColBERT and their hybrid,
recall@1 and recall@10, from `embed`'s one pass and, beside it, from FlagEmbedding on the same
folder.

The set is built from the STS-B dev pairs (../shared/data/stsb/stsb-<lang>-dev.csv): every pair
scored >= --min-score whose two sentences differ is a query (the first sentence) with one positive
(the second); the corpus is every distinct second sentence of all 1,500 pairs, so each query's
positive sits among ~1,450 distractors. Scores are FlagEmbedding's (BGEM3FlagModel.compute_score):
dense = dot product of the normalized CLS vectors; sparse = the sum, over token ids both texts
have, of the product of their weights; ColBERT = the mean over the query's vectors of the best dot
product with the document's vectors; hybrid = (w_d * dense + w_s * sparse + w_c * colbert) /
(w_d + w_s + w_c) with BGE-M3's recommended weights 0.4, 0.2, 0.4.

No real BGE-M3 (or any XLM-RoBERTa) weights are on PyPI, so the M3 model here is the committed
fixture tests/convert/fixtures/bge-m3-tiny (random weights): its dense vector carries no meaning,
while its sparse and ColBERT scores still match tokens shared by query and document. The table
measures the read-outs and their scoring end to end (and that embed's recall equals
FlagEmbedding's on the same weights), not BGE-M3's quality. --dense-model adds a trained dense
model (all-MiniLM-L6-v2, real weights from PyPI) run the same way, for scale.

  $(tools/refgen/setup_venv.sh) tools/bench/m3_retrieval.py [--embed build/tools/embed]
      [--model tests/convert/fixtures/bge-m3-tiny] [--dense-model $(tools/models.sh minilm)]
      [--flag-embedding] [--lang en] [--min-score 4.0]
Needs numpy (the refgen venv); --flag-embedding needs FlagEmbedding and torch (the refgen venv).
"""
import argparse
import csv
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
WEIGHTS = (0.4, 0.2, 0.4)  # dense, sparse, colbert: BGE-M3's recommended hybrid
MAX_TOKENS = 128  # the tiny fixture's context, where embed truncates; FlagEmbedding is given the same bound


def retrieval_set(lang, min_score):
    stsb = pathlib.Path(os.environ.get("EMBED_STSB_DIR", ROOT.parent / "shared/data/stsb"))
    with open(stsb / f"stsb-{lang}-dev.csv", newline="", encoding="utf-8") as f:
        pairs = [(a, b, float(s)) for a, b, s in csv.reader(f)]
    corpus = sorted({b for _, b, _ in pairs})
    where = {text: i for i, text in enumerate(corpus)}
    queries = [(a, where[b]) for a, b, s in pairs if s >= min_score and a != b]
    return queries, corpus


def embed_readouts(embed, model, texts, outputs):
    """One `embed` process over the texts, the read-outs asked for from one pass."""
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "texts.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for t in texts:
                f.write(json.dumps({"text": t}, ensure_ascii=False) + "\n")
        cmd = [embed, "-m", str(model), "--input-format", "jsonl", "-t", "2", str(path)]
        if outputs != ("dense",):
            cmd[3:3] = ["--output", ",".join(outputs)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["index"] for r in rows] == list(range(len(texts))), "rows out of order"
    result = {}
    if outputs == ("dense",):
        result["dense"] = np.array([r["embedding"] for r in rows], dtype=np.float32)
        return result
    result["dense"] = np.array([r["dense"] for r in rows], dtype=np.float32)
    result["sparse"] = [{int(e["index"]): float(e["value"]) for e in r["sparse"]} for r in rows]
    result["colbert"] = [np.array(r["colbert"], dtype=np.float32).reshape(-1, result["dense"].shape[1])
                         for r in rows]
    return result


_flag_models = {}


def flag_embedding_readouts(model, texts):
    if model not in _flag_models:
        sys.path.insert(0, str(ROOT / "tools/refgen"))
        from convert_vectors import flag_embedding_m3
        _flag_models[model] = flag_embedding_m3()(str(model), use_fp16=False, devices="cpu")
    m3 = _flag_models[model]
    out = m3.encode(texts, batch_size=32, max_length=MAX_TOKENS, return_dense=True, return_sparse=True,
                    return_colbert_vecs=True)
    return {"dense": np.asarray(out["dense_vecs"], dtype=np.float32),
            "sparse": [{int(k): float(v) for k, v in lw.items()} for lw in out["lexical_weights"]],
            "colbert": [np.asarray(c, dtype=np.float32) for c in out["colbert_vecs"]]}


def score_matrices(q, d):
    scores = {"dense": q["dense"] @ d["dense"].T}
    if "sparse" not in q:
        return scores
    sparse = np.zeros((len(q["sparse"]), len(d["sparse"])), dtype=np.float64)
    postings = {}
    for j, weights in enumerate(d["sparse"]):
        for token, w in weights.items():
            postings.setdefault(token, []).append((j, w))
    for i, weights in enumerate(q["sparse"]):
        for token, w in weights.items():
            for j, dw in postings.get(token, ()):
                sparse[i, j] += w * dw
    scores["sparse"] = sparse
    lengths = [len(c) for c in d["colbert"]]
    starts = np.concatenate([[0], np.cumsum(lengths)])
    stacked = np.concatenate(d["colbert"])
    colbert = np.empty_like(sparse)
    for i, qv in enumerate(q["colbert"]):
        sims = qv @ stacked.T  # query tokens x all document tokens
        best = np.maximum.reduceat(sims, starts[:-1], axis=1)  # per document, each query token's best
        colbert[i] = best.mean(axis=0)
    scores["colbert"] = colbert
    w_d, w_s, w_c = WEIGHTS
    scores["hybrid"] = (w_d * scores["dense"] + w_s * sparse + w_c * colbert) / (w_d + w_s + w_c)
    return scores


def recalls(scores, positives):
    out = {}
    for name, s in scores.items():
        # The positive's rank: how many documents score strictly higher (ties count for the query).
        pos = s[np.arange(len(positives)), positives]
        rank = (s > pos[:, None]).sum(axis=1)
        out[name] = {"recall@1": float((rank < 1).mean()), "recall@10": float((rank < 10).mean()),
                     "top1": s.argmax(axis=1)}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embed", default=os.environ.get("EMBED_BIN", str(ROOT / "build/tools/embed")))
    ap.add_argument("--model", default=str(ROOT / "tests/convert/fixtures/bge-m3-tiny"))
    ap.add_argument("--dense-model", help="a trained dense model run the same way, for scale")
    ap.add_argument("--flag-embedding", action="store_true", help="also score FlagEmbedding's read-outs of --model")
    ap.add_argument("--lang", default="en")
    ap.add_argument("--min-score", type=float, default=4.0)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()

    queries, corpus = retrieval_set(args.lang, args.min_score)
    positives = np.array([p for _, p in queries])
    qtexts = [q for q, _ in queries]
    print(f"STS-B {args.lang} dev: {len(queries)} queries (pairs scored >= {args.min_score}), "
          f"{len(corpus)} documents", file=sys.stderr)
    results = {"queries": len(queries), "documents": len(corpus), "weights": WEIGHTS, "rows": []}
    outputs = ("dense", "sparse", "colbert")
    # The engine gets the folder's float32 weights (`embed convert --type f32`), FlagEmbedding's
    # own precision; an HF folder given directly would be converted to f16 in memory.
    tmp = tempfile.TemporaryDirectory()
    m3_file = args.model
    if pathlib.Path(args.model).is_dir():
        m3_file = str(pathlib.Path(tmp.name) / "m3-f32.gguf")
        subprocess.run([args.embed, "convert", "--type", "f32", args.model, m3_file], check=True,
                       capture_output=True)
    runs = [("embed", pathlib.Path(args.model).name,
             lambda texts: embed_readouts(args.embed, m3_file, texts, outputs))]
    if args.flag_embedding:
        runs.append(("FlagEmbedding", pathlib.Path(args.model).name,
                     lambda texts: flag_embedding_readouts(args.model, texts)))
    if args.dense_model:
        runs.append(("embed", pathlib.Path(args.dense_model).name,
                     lambda texts: embed_readouts(args.embed, args.dense_model, texts, ("dense",))))
    top1, matrices = {}, {}
    print("| engine | model | score | recall@1 | recall@10 |\n|---|---|---|---|---|")
    for engine, model, encode in runs:
        scores = score_matrices(encode(qtexts), encode(corpus))
        matrices[(engine, model)] = scores
        r = recalls(scores, positives)
        for name, figures in r.items():
            print(f"| {engine} | {model} | {name} | {figures['recall@1']:.4f} | {figures['recall@10']:.4f} |")
            results["rows"].append({"engine": engine, "model": model, "score": name,
                                    "recall@1": figures["recall@1"], "recall@10": figures["recall@10"]})
            top1[(engine, model, name)] = figures["top1"]
    if args.flag_embedding:
        model = pathlib.Path(args.model).name
        for name in ("dense", "sparse", "colbert", "hybrid"):
            same = float((top1[("embed", model, name)] == top1[("FlagEmbedding", model, name)]).mean())
            diff = float(np.abs(matrices[("embed", model)][name] - matrices[("FlagEmbedding", model)][name]).max())
            print(f"{name}: embed's top document equals FlagEmbedding's for {same:.4f} of the queries; "
                  f"largest score difference {diff:.2e}", file=sys.stderr)
            results.setdefault("top1_agreement", {})[name] = same
            results.setdefault("max_score_difference", {})[name] = diff
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
