"""STS-B dev Spearman of a decoder GGUF under several embedding methods: last-token and mean
pooling (with and without the one-word template), hybrid pooling without re-routing, and
KV-Embedding at a few layer bands and biases. Runs the `embed` command once per configuration
(the texts are every distinct sentence of the subset) and prints a markdown table. numpy only.

  python tools/bench/kv_quality.py MODEL.gguf [--start S] [--pairs N] [--threads T] [--config NAME:FLAGS ...]
                                            [--halves] [--cache DIR]

--start S --pairs N takes pairs S..S+N-1 of the dev set (all 1500 when N is 0). --halves adds a
Spearman for the even-numbered and for the odd-numbered pairs: choose a setting on one half and
report it on the other, so that the reported number was not the one tuned. --cache DIR keeps each
configuration's vectors (keyed by its flags), so a table can be rescored without rerunning."""
import argparse
import csv
import hashlib
import os
import shlex
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TEMPLATE = 'This sentence: "{text}" means in one word: "'


def spearman(a, b):
    def ranks(x):
        order = np.argsort(x, kind="mergesort")
        r = np.empty(len(x))
        r[order] = np.arange(len(x))
        # average ranks over ties
        vals, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
        sums = np.bincount(inv, weights=r)
        return (sums / counts)[inv]
    ra, rb = ranks(np.asarray(a)), ranks(np.asarray(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def default_configs(n_layers):
    third = n_layers // 3
    mid = f"{third}-{max(third, 2 * n_layers // 3 - 1)}"
    t = ["--template", TEMPLATE]
    return [
        ("last", ["--pooling", "last"]),
        ("mean", ["--pooling", "mean"]),
        ("last + template", ["--pooling", "last", *t]),
        ("mean + template", ["--pooling", "mean", *t]),
        ("hybrid + template (no re-routing)", ["--pooling", "hybrid", *t]),
        (f"KV-Embedding {mid} b=1.0 + template", ["--kv-embedding", *t]),
        (f"KV-Embedding {mid} b=0.5 + template", ["--kv-embedding", "--kv-bias", "0.5", *t]),
        (f"KV-Embedding {mid} b=2.0 + template", ["--kv-embedding", "--kv-bias", "2.0", *t]),
        (f"KV-Embedding 0-{n_layers - 1} b=1.0 + template", ["--kv-embedding", "--kv-layers", f"0-{n_layers - 1}", *t]),
        (f"KV-Embedding {mid} b=1.0, no template", ["--kv-embedding"]),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--embed", default=os.path.join(ROOT, "build", "tools", "embed"))
    ap.add_argument("--stsb", default=os.path.join(ROOT, "tests", "fixtures", "stsb", "stsb-en-dev.csv"))
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--pairs", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n-layers", type=int, default=18, help="the model's layer count (gemma-3-270m: 18)")
    ap.add_argument("--config", action="append", default=[], help="NAME:FLAGS, instead of the default set")
    ap.add_argument("--halves", action="store_true", help="also score the even- and the odd-numbered pairs apart")
    ap.add_argument("--cache", help="folder keeping each configuration's vectors")
    a = ap.parse_args()
    rows = list(csv.reader(open(a.stsb, encoding="utf-8")))
    rows = rows[a.start: a.start + a.pairs] if a.pairs else rows[a.start:]
    sentences = sorted({s for r in rows for s in r[:2]})
    index = {s: i for i, s in enumerate(sentences)}
    gold = [float(r[2]) for r in rows]
    configs = [(c.split(":", 1)[0], shlex.split(c.split(":", 1)[1])) for c in a.config] or default_configs(a.n_layers)
    print(f"{os.path.basename(a.model)}: STS-B en dev, pairs {a.start}..{a.start + len(rows) - 1}, {len(sentences)} sentences")
    if a.halves:
        print("| method | all pairs | even pairs | odd pairs |\n|---|---|---|---|", flush=True)
    else:
        print("| method | Spearman |\n|---|---|", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        texts = os.path.join(tmp, "s.txt")
        open(texts, "w", encoding="utf-8").write("\n".join(sentences) + "\n")
        for name, flags in configs:
            key = hashlib.sha256("\0".join([os.path.abspath(a.model), a.stsb, str(a.start), str(len(rows)), *flags])
                                 .encode()).hexdigest()[:16]
            out = os.path.join(a.cache, key + ".npy") if a.cache else os.path.join(tmp, "e.npy")
            if not (a.cache and os.path.exists(out)):
                subprocess.run([a.embed, a.model, texts, "-f", "npy", "-o", out + ".part.npy", "-t", str(a.threads), *flags],
                               check=True, stderr=subprocess.DEVNULL)
                os.replace(out + ".part.npy", out)
            e = np.load(out)
            cos = np.array([float(e[index[r[0]]] @ e[index[r[1]]]) for r in rows])  # rows are L2-normalized
            g = np.array(gold)
            if a.halves:
                print(f"| {name} | {spearman(cos, g):.4f} | {spearman(cos[0::2], g[0::2]):.4f} | "
                      f"{spearman(cos[1::2], g[1::2]):.4f} |", flush=True)
            else:
                print(f"| {name} | {spearman(cos, g):.4f} |", flush=True)


if __name__ == "__main__":
    main()
