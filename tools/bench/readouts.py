#!/usr/bin/env python3
"""What the read-outs after the final hidden state cost (issue #24): BGE-M3's sparse and ColBERT
heads beside its dense vector, and SPLADE's MLM head, at the models' real shapes.

  build  (refgen venv: torch, transformers, sentence-transformers)
         $(tools/refgen/setup_venv.sh) tools/bench/readouts.py build
         Two HF folders with seeded random weights under ~/.cache/embed/bench-readouts/, each with
         its f32 GGUF made by `embed convert` (never committed):
           bge-m3  XLM-RoBERTa large (1024 wide, 24 layers, 16 heads, 4096 ffn, 250002 vocab) with
                   FlagEmbedding's heads as BGE-M3 ships them: sparse_linear.pt (1024 -> 1) and
                   colbert_linear.pt (1024 -> 1024); the tokenizer and sentence-transformers
                   modules of tests/convert/fixtures/bge-m3-tiny.
           splade  BertForMaskedLM of BERT-base's shape (768 wide, 12 layers, 3072 ffn, 30522 vocab,
                   decoder tied to the word embeddings) with tests/convert/fixtures/splade-tiny's
                   tokenizer and SparseEncoder modules.
  run    python3 tools/bench/readouts.py run [--docs 8] [--reps 3] [--passes 1] [--threads 2] [--before BIN] [--after BIN] [--cases ...]
         Documents of STS-B dev sentences cut to 256 tokens (compare.py's `documents`). Per
         repetition, interleaved, one `embed bench` process per (binary, model, read-outs): BGE-M3
         dense only and dense,sparse,colbert in one pass; SPLADE's body alone (mean pooling) and
         its sparse read-out. Each process times
         --passes passes over the documents (after a warm-up call on one document) and reports
         their median wall and CPU seconds (`embed bench --json`: batch.median_s, cpu_median_s).
         Prints a Markdown table of the medians over the repetitions and the medians of the paired
         ratios (within each repetition and binary) of BGE-M3's three read-outs to its dense-only
         pass and of SPLADE's sparse pass to its body alone.
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
FIXTURES = ROOT / "tests" / "convert" / "fixtures"
CACHE = pathlib.Path(os.environ.get("EMBED_CACHE", pathlib.Path.home() / ".cache" / "embed")) / "bench-readouts"
EMBED = os.environ.get("EMBED_BIN", str(ROOT / "build" / "tools" / "embed"))
TOKENS = 256

XLMR_LARGE = {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096,
              "vocab_size": 250002, "max_position_embeddings": 8194}
BERT_BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
             "vocab_size": 30522, "max_position_embeddings": 512}


def copy_modules(tiny, out, width_fields):
    """The sentence-transformers files of a tiny fixture folder, with its widths set to the real shape's."""
    for name in ("modules.json", "config_sentence_transformers.json", "sentence_bert_config.json"):
        shutil.copy(tiny / name, out / name)
    for sub in tiny.iterdir():
        if sub.is_dir():
            (out / sub.name).mkdir(exist_ok=True)
            cfg = json.loads((sub / "config.json").read_text())
            for k, v in width_fields.items():
                if k in cfg:
                    cfg[k] = v
            (out / sub.name / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")


def convert(hf, gguf):
    subprocess.run([EMBED, "convert", str(hf), str(gguf), "--type", "f32"], check=True)


def build_bge_m3():
    import torch
    from transformers import AutoConfig, AutoTokenizer, XLMRobertaModel
    tiny = FIXTURES / "bge-m3-tiny"
    out = CACHE / "bge-m3"
    shutil.rmtree(out, ignore_errors=True)
    hf = out / "hf"
    cfg = AutoConfig.from_pretrained(tiny)
    for k, v in XLMR_LARGE.items():
        setattr(cfg, k, v)
    torch.manual_seed(24)
    model = XLMRobertaModel(cfg).eval()  # transformers' own init: speed does not depend on the values
    model.save_pretrained(hf, safe_serialization=True)
    AutoTokenizer.from_pretrained(tiny).save_pretrained(hf)
    copy_modules(tiny, hf, {"word_embedding_dimension": XLMR_LARGE["hidden_size"]})
    d = XLMR_LARGE["hidden_size"]
    torch.save(torch.nn.Linear(d, d).state_dict(), hf / "colbert_linear.pt")
    sparse = torch.nn.Linear(d, 1)
    torch.save(sparse.state_dict(), hf / "sparse_linear.pt")
    convert(hf, out / "model-f32.gguf")
    print(f"bge-m3: {out} ({sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters in the body)")


def build_splade():
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM
    tiny = FIXTURES / "splade-tiny"
    out = CACHE / "splade"
    shutil.rmtree(out, ignore_errors=True)
    hf = out / "hf"
    torch.manual_seed(24)
    model = BertForMaskedLM(BertConfig(type_vocab_size=2, tie_word_embeddings=True, **BERT_BASE)).eval()
    with torch.no_grad():
        # As in splade-tiny: a bias below zero keeps most of the vocabulary at weight 0, as in a
        # trained SPLADE model (the cost of the head does not depend on it; the host's share does).
        model.cls.predictions.bias.copy_(torch.randn_like(model.cls.predictions.bias) * 0.5 - 4.5)
    model.save_pretrained(hf, safe_serialization=True)
    AutoTokenizer.from_pretrained(tiny).save_pretrained(hf)
    copy_modules(tiny, hf, {"word_embedding_dimension": BERT_BASE["vocab_size"]})
    convert(hf, out / "model-f32.gguf")
    print(f"splade: {out} ({sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters)")


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no JSON line in:\n" + text[-2000:])


CASES = [  # (name, model, --output, more flags)
    ("bge-m3 dense", "bge-m3", "dense", []),
    ("bge-m3 dense+sparse+colbert", "bge-m3", "dense,sparse,colbert", []),
    ("splade body only (mean pooling)", "splade", "dense", ["--pooling", "mean"]),  # what the MLM head adds to
    ("splade sparse", "splade", "sparse", []),
]
BASELINE = {"bge-m3 dense+sparse+colbert": "bge-m3 dense", "splade sparse": "splade body only (mean pooling)"}  # ratio columns


def run(docs, reps, passes, threads, binaries, cases):
    import compare  # documents() and stsb_sentences(): the texts every benchmark of docs/benchmarks.md uses
    texts = compare.documents(compare.stsb_sentences(), docs, TOKENS, start=11)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="embed-readouts-"))
    path = tmp / "docs.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    wall = {(b, c): [] for b in binaries for c, _, _, _ in CASES}
    cpu = {(b, c): [] for b in binaries for c, _, _, _ in CASES}
    tokens = {}
    for rep in range(reps):
        for b, exe in binaries.items():
            for name, model, outputs, flags in CASES:
                if name not in cases:
                    continue
                argv = [exe, "bench", str(CACHE / model / "model-f32.gguf"), str(path), "--repeat", str(passes), "--warmup", "1", "--latency", "0",
                        "--json", "-t", str(threads), "--max-tokens", str(TOKENS), "--truncate", "--output", outputs] + flags
                done = subprocess.run(argv, capture_output=True, text=True)
                if done.returncode != 0:
                    raise SystemExit(f"{b} {name}: exit {done.returncode}\n{done.stderr[-3000:]}")
                r = last_json(done.stdout)
                wall[(b, name)].append(r["batch"]["median_s"])
                cpu[(b, name)].append(r["batch"]["cpu_median_s"])
                tokens[name] = r["tokens"]
                print(f"rep {rep} {b} {name}: {r['batch']['median_s']:.2f} s, {r['batch']['cpu_median_s']:.2f} CPU s", file=sys.stderr)
    print(f"{docs} documents, {threads} threads, {reps} repetitions of {passes} pass(es) (medians; ratio: median of the paired ratios)\n")
    print("| binary | case | tokens | wall s | CPU s | wall ÷ baseline | CPU ÷ baseline |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for b in binaries:
        for name, _, _, _ in CASES:
            if name not in cases:
                continue
            w, c = wall[(b, name)], cpu[(b, name)]
            ratio = ("", "")
            if BASELINE.get(name) in cases:
                dw, dc = wall[(b, BASELINE[name])], cpu[(b, BASELINE[name])]
                ratio = (f"{statistics.median(x / y for x, y in zip(w, dw)):.3f}", f"{statistics.median(x / y for x, y in zip(c, dc)):.3f}")
            print(f"| {b} | {name} | {tokens[name]} | {statistics.median(w):.2f} | {statistics.median(c):.2f} | {ratio[0]} | {ratio[1]} |")
    shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("build", "run"))
    ap.add_argument("--docs", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--passes", type=int, default=1, help="timed passes per process")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--before", help="an embed binary to compare (its row 'before')")
    ap.add_argument("--after", default=EMBED, help="the embed binary (default: build/tools/embed or $EMBED_BIN)")
    ap.add_argument("--cases", default=",".join(c for c, _, _, _ in CASES), help="comma-separated case names")
    a = ap.parse_args()
    if a.step == "build":
        build_bge_m3()
        build_splade()
    else:
        binaries = {"before": a.before, "after": a.after} if a.before else {"after": a.after}
        run(a.docs, a.reps, a.passes, a.threads, binaries, a.cases.split(","))


if __name__ == "__main__":
    main()
