#!/usr/bin/env python3
"""Tokenizer throughput, side by side: embed's tokenizers (build/tools/embed-tokenizer-bench) vs
HF `tokenizers` (pinned in tools/refgen/requirements.txt) single-threaded, on the STS-B English dev
text (each sentence one input) and on a 1 MB document (one input). Gemma-3 has no HF tokenizer file
here, so its row compares with llama.cpp (llama-cpp-python) instead. Prints a markdown table.

Usage (after cmake --build build):
  RAYON_NUM_THREADS=1 $(tools/refgen/setup_venv.sh) tools/bench/tokenizer_bench.py
"""
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from tokenizers import Tokenizer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("EMBED_BUILD", os.path.join(ROOT, "build"))
STSB = os.environ.get("EMBED_STSB_DIR", os.path.join(ROOT, "..", "shared", "data", "stsb"))
MIN_SECONDS = float(os.environ.get("EMBED_BENCH_SECONDS", "2"))


def models(name):
    return subprocess.check_output([os.path.join(ROOT, "tools", "models.sh"), name], text=True).strip()


def texts(tmp):
    lines = []
    for lang in ("en",):
        with open(os.path.join(STSB, f"stsb-{lang}-dev.csv"), encoding="utf-8") as f:
            for row in csv.reader(f):
                lines += row[:2]
    stsb = os.path.join(tmp, "stsb-en-dev.txt")
    with open(stsb, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    # 1 MB document: the en, de and zh dev sentences as paragraphs, repeated to 1,000,000 bytes.
    paras = []
    for lang in ("en", "de", "zh"):
        with open(os.path.join(STSB, f"stsb-{lang}-dev.csv"), encoding="utf-8") as f:
            paras += [" ".join(row[:2]) for row in csv.reader(f)]
    doc, i = [], 0
    size = 0
    while size < 1_000_000:
        p = paras[i % len(paras)] + ("\n\n" if i % 7 == 6 else " ")
        doc.append(p)
        size += len(p.encode("utf-8"))
        i += 1
    data = "".join(doc).encode("utf-8")[:1_000_000].decode("utf-8", "ignore")
    one_mb = os.path.join(tmp, "doc-1mb.txt")
    with open(one_mb, "w", encoding="utf-8") as f:
        f.write(data)
    return (stsb, lines), (one_mb, [data])


def timed(fn, inputs):
    fn(inputs[0])  # warm-up
    n, reps, t0 = 0, 0, time.perf_counter()
    while reps < 3 or time.perf_counter() - t0 < MIN_SECONDS:
        n = sum(fn(s) for s in inputs)
        reps += 1
    dt = (time.perf_counter() - t0) / reps
    return n / dt, n


def ours(gguf, path, mode):
    out = subprocess.check_output([os.path.join(BUILD, "tools", "embed-tokenizer-bench"), gguf, path, mode,
                                   str(MIN_SECONDS)], text=True)
    r = json.loads(out)
    return r["tokens_per_s"], r["tokens"]


def hf_counter(tokenizer_json):
    t = Tokenizer.from_file(tokenizer_json)
    t.no_padding()
    t.no_truncation()
    return lambda s: len(t.encode(s).ids)


def llama_counter(gguf):
    from llama_cpp import Llama
    m = Llama(gguf, vocab_only=True, verbose=False)
    return lambda s: len(m.tokenize(s.encode("utf-8"), add_bos=True, special=False))


def main():
    vocab_tool = os.path.join(BUILD, "tools", "embed-vocab-gguf")
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        sets = texts(tmp)
        vocabs = [("all-MiniLM-L6-v2 (WordPiece)", models("minilm"), "bert", "HF tokenizers"),
                  ("Qwen3 (byte-level BPE)", models("qwen-vocab"), "qwen3", "HF tokenizers"),
                  ("Unigram (XLM-R style)", os.path.join(ROOT, "tests", "fixtures", "tokenizer", "unigram"), "t5",
                   "HF tokenizers")]
        for name, folder, arch, ref in vocabs:
            gguf = os.path.join(tmp, arch + ".gguf")
            subprocess.check_call([vocab_tool, folder, gguf, "--arch", arch], stderr=subprocess.DEVNULL)
            count = hf_counter(os.path.join(folder, "tokenizer.json"))
            rows.append(bench_row(name, ref, gguf, count, sets))
        gemma = models("gemma3-270m")
        rows.append(bench_row("Gemma-3 (SentencePiece BPE)", "llama.cpp", gemma, llama_counter(gemma), sets))
    print("| vocabulary | text | tokens | embed tok/s | reference | reference tok/s | ratio |")
    print("|---|---|---:|---:|---|---:|---:|")
    for r in rows:
        for line in r:
            print(line)


def bench_row(name, ref, gguf, count, sets):
    lines = []
    for (path, inputs), label, mode in zip(sets, ("STS-B en dev (3,000 sentences)", "1 MB document"), ("lines", "doc")):
        ours_tps, ours_n = ours(gguf, path, mode)
        ref_tps, ref_n = timed(count, inputs)
        same = "" if ours_n == ref_n else f" (reference: {ref_n:,})"
        lines.append(f"| {name} | {label} | {ours_n:,}{same} | {ours_tps:,.0f} | {ref} | {ref_tps:,.0f} | "
                     f"{ours_tps / ref_tps:.2f}x |")
        print(lines[-1], file=sys.stderr)
    return lines


if __name__ == "__main__":
    main()
