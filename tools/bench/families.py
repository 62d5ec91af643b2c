#!/usr/bin/env python3
"""The encoder families of issue #25 at their real shapes, embed beside sentence-transformers.

  build  (refgen venv: torch, transformers, sentence-transformers)
         $(tools/refgen/setup_venv.sh) tools/bench/families.py build [FAMILY ...]
         For each family, an HF / sentence-transformers folder with the shape of the model users
         run (table SHAPES) and seeded random weights, made from the tiny fixture folder of the
         converter tests (its tokenizer and its sentence-transformers modules: pooling, Dense,
         Normalize) with `transformers`' own class, under ~/.cache/embed/bench-families/<family>/,
         and its f32 GGUF made by `embed convert`. Never committed.
  run    (the same venv, for sentence-transformers)
         $(tools/refgen/setup_venv.sh) tools/bench/families.py run [--docs 24] [--reps 3] [FAMILY ...]
         Documents of STS-B dev sentences cut to 256 tokens (compare.py's `documents`), 2 threads;
         per repetition, interleaved, one process per engine: `embed bench` (default compute and
         --compute-type bf16) and tools/bench/peer_run.py's sentence-transformers engine in f32 and
         bf16. Prints a Markdown table: median tokens/s, ratios and embed's GFLOP/s (matmul and
         attention FLOPs per token, SHAPES' formulas) for docs/benchmarks.md.

Families whose modeling code is Hub remote code (nomic-bert, jina-bert-v2, NewModel) have no
sentence-transformers peer here: the hub is not reachable and `transformers` does not hold them.
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
CACHE = pathlib.Path(os.environ.get("EMBED_CACHE", pathlib.Path.home() / ".cache" / "embed")) / "bench-families"
EMBED = os.environ.get("EMBED_BIN", str(ROOT / "build" / "tools" / "embed"))
TOKENS = 256

# family: (tiny fixture folder, config fields of the real model, the model users know)
SHAPES = {
    "mpnet": ("mpnet-tiny", {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
                             "vocab_size": 30527, "max_position_embeddings": 514}, "all-mpnet-base-v2"),
    "t5-gtr": ("t5-gtr-tiny", {"d_model": 768, "d_kv": 64, "num_heads": 12, "d_ff": 3072, "num_layers": 12, "vocab_size": 32128,
                             "n_positions": 512},
               "gtr-t5-base (encoder)"),
    "modern-bert": ("modern-bert-tiny", {"hidden_size": 768, "num_hidden_layers": 22, "num_attention_heads": 12,
                                         "intermediate_size": 1152, "vocab_size": 50368, "local_attention": 128,
                                         "max_position_embeddings": 8192}, "ModernBERT-base / gte-modernbert-base"),
    "xlmr-large": ("xlmr-tiny", {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096,
                                 "vocab_size": 250002, "max_position_embeddings": 8194}, "bge-m3 / multilingual-e5-large body"),
}


def flops_per_token(cfg, family, tokens=TOKENS):
    """Matmul FLOPs per token (2 per weight of every projection) plus attention's (2 * 2 * keys * d
    per layer: scores and the weighted sum; ModernBERT's local layers see at most the window)."""
    if family == "t5-gtr":
        d, layers, ff, inner = cfg["d_model"], cfg["num_layers"], cfg["d_ff"], cfg["num_heads"] * cfg["d_kv"]
        gated = cfg.get("feed_forward_proj", "relu").startswith("gated")
        per_layer = 2 * (4 * d * inner + (3 if gated else 2) * d * ff)
        return layers * (per_layer + 4 * tokens * inner)
    d, layers, ff = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["intermediate_size"]
    if family == "modern-bert":
        per_layer = 2 * (4 * d * d + 3 * d * ff)  # Wi is 2 * ff wide (GeGLU), Wo ff -> d
        every = cfg["global_attn_every_n_layers"]
        keys = [tokens if i % every == 0 else min(tokens, cfg["local_attention"] + 1) for i in range(layers)]
        return layers * per_layer + sum(4 * k * d for k in keys)
    return layers * (2 * (4 * d * d + 2 * d * ff) + 4 * tokens * d)


def build(family):
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import AutoConfig, AutoModel, AutoTokenizer
    tiny_name, fields, _ = SHAPES[family]
    tiny = FIXTURES / tiny_name
    out = CACHE / family
    shutil.rmtree(out, ignore_errors=True)
    hf = out / "hf"
    cfg = AutoConfig.from_pretrained(tiny)
    for k, v in fields.items():
        setattr(cfg, k, v)
    if getattr(cfg, "layer_types", None) and family == "modern-bert":  # one entry per layer: global every n-th
        every = cfg.global_attn_every_n_layers
        cfg.layer_types = ["full_attention" if i % every == 0 else "sliding_attention" for i in range(cfg.num_hidden_layers)]
    torch.manual_seed(25)
    model = AutoModel.from_config(cfg).eval()  # transformers' own init: speed does not depend on the values
    model.save_pretrained(hf, safe_serialization=True)
    AutoTokenizer.from_pretrained(tiny).save_pretrained(hf)
    small = SentenceTransformer(str(tiny), device="cpu")
    d = fields.get("hidden_size", fields.get("d_model"))
    modules = [models.Transformer(str(hf), max_seq_length=TOKENS)]
    for m in list(small)[1:]:
        kind = type(m).__name__
        if kind == "Pooling":
            modules.append(models.Pooling(d, pooling_mode=m.pooling_mode))
        elif kind == "Dense":
            modules.append(models.Dense(d, d, bias=m.linear.bias is not None, activation_function=m.activation_function))
        elif kind == "Normalize":
            modules.append(models.Normalize())
        else:
            raise SystemExit(f"{family}: module {kind} of {tiny} is not rebuilt here")
    SentenceTransformer(modules=modules, device="cpu").save(str(hf))
    gguf = out / "model-f32.gguf"
    subprocess.run([EMBED, "convert", str(hf), str(gguf), "--type", "f32"], check=True)
    meta = {"family": family, "model": SHAPES[family][2], "flops_per_token": flops_per_token(cfg.to_dict(), family),
            "params": sum(p.numel() for p in model.parameters())}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{family}: {out} ({meta['params'] / 1e6:.0f}M parameters, {meta['flops_per_token'] / 1e6:.0f} MFLOP per token)")


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no JSON line in:\n" + text[-2000:])


def run(families, docs, reps, threads):
    import compare  # documents() and stsb_sentences(): the texts every benchmark of docs/benchmarks.md uses
    texts = compare.documents(compare.stsb_sentences(), docs, TOKENS, start=11)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="embed-families-"))
    path = tmp / "docs.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS=str(threads))
    rows = []
    for family in families:
        out = CACHE / family
        meta = json.loads((out / "meta.json").read_text())
        engines = {
            "embed": [EMBED, "bench", str(out / "model-f32.gguf"), str(path), "--repeat", "1", "--latency", "0", "--json", "-t", str(threads),
                      "--max-tokens", str(TOKENS), "--truncate"],
            "embed-bf16": None,
            "st-f32": [sys.executable, str(HERE / "peer_run.py"), "--engine", "st", "--hf-folder", str(out / "hf"), "--dtype", "f32",
                       "--input", str(path), "--threads", str(threads), "--max-tokens", str(TOKENS)],
            "st-bf16": None,
        }
        engines["embed-bf16"] = engines["embed"] + ["--compute-type", "bf16"]
        engines["st-bf16"] = engines["st-f32"][:7] + ["bf16"] + engines["st-f32"][8:]
        rates = {k: [] for k in engines}
        for rep in range(reps):
            for name, argv in engines.items():
                done = subprocess.run(argv, env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    raise SystemExit(f"{family} {name}: exit {done.returncode}\n{done.stderr[-3000:]}")
                r = last_json(done.stdout)
                rates[name].append(r["batch"]["tokens_per_s"])
                print(f"{family} rep {rep} {name}: {r['batch']['tokens_per_s']:.0f} tokens/s", file=sys.stderr)
        med = {k: statistics.median(v) for k, v in rates.items()}
        rows.append((family, meta, med, rates))
    print(f"| family (shape of) | params | embed | embed bf16 | ST f32 | ST bf16 | embed ÷ ST f32 | embed bf16 ÷ ST bf16 | embed GFLOP/s (bf16) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for family, meta, med, rates in rows:
        g = meta["flops_per_token"] / 1e9
        print(f"| {family} ({meta['model']}) | {meta['params'] / 1e6:.0f}M | {med['embed']:.0f} | {med['embed-bf16']:.0f} | {med['st-f32']:.0f} | "
              f"{med['st-bf16']:.0f} | {med['embed'] / med['st-f32']:.2f} | {med['embed-bf16'] / med['st-bf16']:.2f} | "
              f"{med['embed'] * g:.0f} ({med['embed-bf16'] * g:.0f}) |")
    shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("build", "run"))
    ap.add_argument("families", nargs="*", default=[f for f in SHAPES if f != "xlmr-large"])
    ap.add_argument("--docs", type=int, default=24)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    for f in a.families:
        if f not in SHAPES:
            raise SystemExit(f"unknown family {f}: one of {', '.join(SHAPES)}")
    if a.step == "build":
        for f in a.families:
            build(f)
    else:
        run(a.families, a.docs, a.reps, a.threads)


if __name__ == "__main__":
    main()
