"""Retrieval quality of quantized output vectors (--precision): recall@1 and recall@10 of int8 and
binary vectors, with and without float rescoring, against float32, on STS-B dev pairs used as
query -> positive (pairs scored >= 3.0; the corpus is every distinct sentence of the set, the
query itself left out). Runs the `embed` command; needs numpy (the bench or refgen venv).

  python tools/bench/precision_recall.py MODEL.gguf [--embed build/tools/embed] [--stsb CSV]

Rescoring as sentence-transformers does it: the quantized index returns 4 x k candidates
(binary: Hamming distance of the packed bits; int8: int8 dot products), then the float32 query
is scored against the candidates' stored quantized vectors (binary bits as +-1) and the best 10
kept. int8 ranges are calibrated on the corpus itself (embed calibrate)."""
import argparse
import csv
import os
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def pairs(path, min_score=3.0):
    rows = list(csv.reader(open(path, encoding="utf-8")))
    sentences = sorted({s for r in rows for s in r[:2]})
    index = {s: i for i, s in enumerate(sentences)}
    queries = [(index[r[0]], index[r[1]]) for r in rows if float(r[2]) >= min_score and r[0] != r[1]]
    return sentences, queries


def embed(cmd, model, texts_path, out, *flags):
    subprocess.run([cmd, model, texts_path, "-f", "npy", "-o", out, *flags], check=True)
    return np.load(out)


def recall(scores, queries):
    """(recall@1, recall@10)."""
    hits = np.zeros(2)
    for qi, (q, pos) in enumerate(queries):
        s = scores(qi, q)
        s[q] = -np.inf  # the query itself is in the corpus
        top = np.argsort(-s, kind="stable")[:10]
        hits += [top[0] == pos, pos in top]
    return hits / len(queries)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--embed", default=os.path.join(ROOT, "build", "tools", "embed"))
    ap.add_argument("--stsb", default=os.path.join(ROOT, "tests", "fixtures", "stsb", "stsb-en-dev.csv"))
    a = ap.parse_args()
    sentences, queries = pairs(a.stsb)
    with tempfile.TemporaryDirectory() as tmp:
        texts = os.path.join(tmp, "corpus.txt")
        open(texts, "w", encoding="utf-8").write("\n".join(sentences) + "\n")
        ranges = os.path.join(tmp, "ranges.json")
        subprocess.run([a.embed, "calibrate", a.model, texts, "-o", ranges], check=True)
        f32 = embed(a.embed, a.model, texts, os.path.join(tmp, "f.npy"))
        i8 = embed(a.embed, a.model, texts, os.path.join(tmp, "i8.npy"), "--precision", "int8", "--ranges", ranges).astype(np.float32)
        ub = embed(a.embed, a.model, texts, os.path.join(tmp, "ub.npy"), "--precision", "ubinary")
    bits = np.unpackbits(ub, axis=1)[:, :f32.shape[1]].astype(np.float32)
    signs = bits * 2 - 1
    popcount = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).sum(1)

    def hamming(q):
        return -popcount[np.bitwise_xor(ub, ub[q])].sum(1).astype(np.float64)

    def rescored(first, stored):
        def score(qi, q):
            s = first(q)
            s[q] = -np.inf
            cand = np.argpartition(-s, 40)[:40]
            out = np.full(len(s), -np.inf)
            out[cand] = stored[cand] @ f32[q]
            return out
        return score

    rows = [
        ("float32", 4 * f32.shape[1], recall(lambda qi, q: (f32 @ f32[q]).astype(np.float64), queries)),
        ("int8", i8.shape[1], recall(lambda qi, q: (i8 @ i8[q]).astype(np.float64), queries)),
        ("int8 + float rescoring", i8.shape[1], recall(rescored(lambda q: (i8 @ i8[q]).astype(np.float64), i8), queries)),
        ("binary", ub.shape[1], recall(lambda qi, q: hamming(q), queries)),
        ("binary + float rescoring", ub.shape[1], recall(rescored(hamming, signs), queries)),
    ]
    print(f"{os.path.basename(a.model)}: {len(queries)} queries, corpus {len(sentences)} sentences")
    print("| precision | bytes per vector | recall@1 | recall@10 | recall@10 of float32's |")
    print("|---|---|---|---|---|")
    for name, nbytes, r in rows:
        print(f"| {name} | {nbytes} | {r[0]:.4f} | {r[1]:.4f} | {r[1] / rows[0][2][1]:.1%} |")


if __name__ == "__main__":
    main()
