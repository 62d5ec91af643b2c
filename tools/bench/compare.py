#!/usr/bin/env python3
"""embed beside its peers, interleaved: `embed bench` (the C++ API), llama.cpp through
llama-cpp-python (AVX2 build from the refgen venv, AVX-512 build from the bench venv) and
sentence-transformers on PyTorch CPU, on the same texts, threads and pooling. Each repetition runs
every engine once, one process per run, in a rotated order (A B C, B C A, ...); the machine is
shared and noisy, so the result is the median over repetitions of the paired ratio
embed / peer, not the absolute figures. Prints markdown tables (the compact summary last) and
writes every run's JSON to --out.

Usage (after cmake --build build; the two venvs are built on first use, ~25 minutes once):
  python3 tools/bench/compare.py                       # the whole suite (~20 minutes on 2 cores)
  python3 tools/bench/compare.py --models minilm-f32 --workloads stsb --threads 1 --reps 2
  python3 tools/bench/compare.py --issue-sizes --models minilm-f16 --threads 2   # full-size check
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

import bench_models
import report
from bench_models import MODELS, WORKLOADS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tools", "bench")
BUILD = os.environ.get("EMBED_BUILD", os.path.join(ROOT, "build"))
STSB = os.path.join(ROOT, "tests", "fixtures", "stsb", "stsb-en-dev.csv")


def sh(*cmd):
    return subprocess.check_output(list(cmd), text=True).strip()


# ---- workloads: files of texts, one per line ----

def stsb_sentences():
    with open(STSB, encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return [r[0] for r in rows] + [r[1] for r in rows]


def documents(sentences, count, min_words, start):
    """`count` documents of at least `min_words` words (so at least as many tokens in any of the
    tokenizers here), each made of consecutive STS-B sentences from its own starting point."""
    docs = []
    for d in range(count):
        words, i = [], (start + d * 97) % len(sentences)
        while len(words) < min_words:
            words += sentences[i % len(sentences)].split()
            i += 1
        docs.append(" ".join(words))
    return docs


def write_workload(tmp, name, texts):
    path = os.path.join(tmp, name + ".txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(texts) + "\n")
    return path


def make_workload(tmp, model, workload):
    """(path, max_tokens, latency texts) of one workload for one model. Longer texts are cut to
    max_tokens by every engine (documents are built longer on purpose)."""
    spec = WORKLOADS[workload]
    size = model["sizes"][workload]
    sentences = stsb_sentences()
    if workload == "stsb":
        return write_workload(tmp, f"{model['family']}-stsb", sentences[:size]), model["max_len"], model["latency"]
    length = spec["tokens"] or model["max_len"]
    docs = documents(sentences, size, length, start=spec["start"])
    return write_workload(tmp, f"{model['family']}-{workload}", docs), length, 0


def llama_batch_tokens(max_tokens):
    """llama.cpp's n_ctx = n_batch = n_ubatch: its default physical batch of 512 tokens, or the
    longest text when that is longer (a pooled sequence must fit in one ubatch). Larger batches
    are slower for llama.cpp on short texts: its attention over a ubatch is one dense masked
    matrix, quadratic in the ubatch (MiniLM on STS-B, 1 thread: 4096 -> ~190 tok/s, 512 -> ~640)."""
    return max(512, max_tokens)


# ---- engines ----

def common_flags(path, max_tokens, latency, args):
    return [path, "--repeat", str(args.passes), "--warmup-input", args.warmup_input, "--latency", str(latency)]


def engine_runs(model, args, pythons):
    """(label, argv builder) for every engine that runs this model's GGUF. Every engine gets the
    same texts, threads, pooling and per-text token limit, and L2-normalizes."""
    runs = [("embed", lambda path, max_tokens, latency, threads: [
        os.path.join(BUILD, "tools", "embed"), "bench", model["gguf"], *common_flags(path, max_tokens, latency, args),
        "--json", "-t", str(threads), "--pooling", model["pooling"], "--max-tokens", str(max_tokens), "--truncate"])]
    for label in ("llama-avx2", "llama-avx512"):
        if label in args.engines and pythons.get(label):
            runs.append((label, lambda path, max_tokens, latency, threads, py=pythons[label]: [
                py, os.path.join(HERE, "peer_run.py"), "--engine", "llama", "--model", model["gguf"],
                "--input", *common_flags(path, max_tokens, latency, args), "--threads", str(threads),
                "--pooling", model["pooling"], "--max-tokens", str(max_tokens),
                "--batch-tokens", str(llama_batch_tokens(max_tokens))]))
    return runs


def st_run(model, args, pythons):
    return ("sentence-transformers", lambda path, max_tokens, latency, threads: [
        pythons["st"], os.path.join(HERE, "peer_run.py"), "--engine", "st", "--hf-folder", model["hf"],
        "--input", *common_flags(path, max_tokens, latency, args), "--threads", str(threads),
        "--max-tokens", str(max_tokens)])


def run_json(argv, threads):
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS=str(threads))
    t0 = time.time()
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(argv)}\n{p.stderr[-3000:]}")
    result = json.loads(p.stdout.strip().splitlines()[-1])
    result["process_wall_s"] = time.time() - t0
    with open("/proc/loadavg") as f:
        result["loadavg_1min_after"] = float(f.read().split()[0])
    return result


# ---- one group: the engines of one model family on one workload and thread count ----

def run_group(tmp, family, workload, threads, args, pythons):
    """Every (engine, model) run of a family, interleaved over args.reps repetitions."""
    runs = []  # (engine label, model label, argv)
    for name in args.models:
        model = MODELS[name]
        if model["family"] != family:
            continue
        path, max_tokens, latency = make_workload(tmp, model, workload)
        for label, build in engine_runs(model, args, pythons):
            runs.append((label, name, build(path, max_tokens, latency, threads)))
        if model.get("hf") and "sentence-transformers" in args.engines and pythons.get("st") and \
                not any(r[0] == "sentence-transformers" for r in runs):
            label, build = st_run(model, args, pythons)
            runs.append((label, "hf-f32", build(path, max_tokens, latency, threads)))
    results = {(e, m): [] for e, m, _ in runs}
    for rep in range(args.reps):
        order = runs[rep % len(runs):] + runs[: rep % len(runs)]
        for engine, model_name, argv in order:
            r = run_json(argv, threads)
            results[(engine, model_name)].append(r)
            print(f"  rep {rep + 1}/{args.reps} {engine:22s} {model_name:12s} {workload:7s} t={threads}: "
                  f"{r['batch']['tokens_per_s']:9.1f} tok/s" +
                  (f", p50 {r['latency']['p50_ms']:.2f} ms" if "latency" in r else "") +
                  f" ({r['process_wall_s']:.1f} s)", file=sys.stderr, flush=True)
    return results


def measure_peak(threads):
    """{"avx2_fma_gflops": {"1": ..}, "avx512_fma_gflops": {..}} from build/tools/embed-bench-peak."""
    tool = os.path.join(BUILD, "tools", "embed-bench-peak")
    return json.loads(sh(tool, str(threads))) if os.access(tool, os.X_OK) else {}


def max_peak(a, b):
    """Per ISA and thread count, the higher of two peak measurements (interference only lowers it)."""
    out = {}
    for isa in set(a) | set(b):
        keys = set(a.get(isa, {})) | set(b.get(isa, {}))
        out[isa] = {k: max(a.get(isa, {}).get(k, 0), b.get(isa, {}).get(k, 0)) for k in sorted(keys)}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated: " + ", ".join(MODELS))
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated: " + ", ".join(WORKLOADS))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--engines", default="llama-avx2,llama-avx512,sentence-transformers",
                    help="peers beside embed: llama-avx2, llama-avx512, sentence-transformers")
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions (one process per engine each)")
    ap.add_argument("--passes", type=int, default=1, help="timed passes over the workload per process")
    ap.add_argument("--out", default=os.path.join(BUILD, "bench", "compare.json"))
    ap.add_argument("--issue-sizes", action="store_true",
                    help="the benchmark issue's full counts (all 3000 STS-B sentences, 200 documents of 256 tokens, "
                         "20 at the maximum length) instead of the suite's reduced ones")
    args = ap.parse_args()
    if args.issue_sizes:
        for m in MODELS.values():
            m["sizes"] = dict(bench_models.ISSUE_SIZES)
    args.models = args.models.split(",")
    args.workloads = args.workloads.split(",")
    args.engines = args.engines.split(",")
    for name in args.models:
        if name not in MODELS:
            raise SystemExit(f"unknown model {name} (known: {', '.join(MODELS)})")
    for w in args.workloads:
        if w not in WORKLOADS:
            raise SystemExit(f"unknown workload {w} (known: {', '.join(WORKLOADS)})")
    if not os.access(os.path.join(BUILD, "tools", "embed"), os.X_OK):
        raise SystemExit(f"{BUILD}/tools/embed not found: build first (cmake --build build)")
    bench_models.resolve_paths(ROOT, [MODELS[n] for n in args.models])
    pythons = {}
    if "llama-avx2" in args.engines or "sentence-transformers" in args.engines:
        pythons["llama-avx2"] = pythons["st"] = sh(os.path.join(ROOT, "tools", "refgen", "setup_venv.sh"))
    if "llama-avx512" in args.engines:
        pythons["llama-avx512"] = sh(os.path.join(HERE, "setup_venv.sh"))
    threads_list = [int(t) for t in args.threads.split(",")]
    peak = measure_peak(max(threads_list))
    t_start = time.time()
    all_results = []
    with tempfile.TemporaryDirectory() as tmp:
        # Each process warms up on a few short sentences (weights faulted in, threads started),
        # not on the workload: a second pass over a long workload would double the suite's time.
        args.warmup_input = write_workload(tmp, "warmup", stsb_sentences()[-4:])
        families = list(dict.fromkeys(MODELS[n]["family"] for n in args.models))
        for threads in threads_list:
            for workload in args.workloads:
                for family in families:
                    group = run_group(tmp, family, workload, threads, args, pythons)
                    for (engine, model_name), runs in group.items():
                        all_results.append({"engine": engine, "model": model_name, "family": family, "workload": workload,
                                            "threads": threads, "runs": runs})
    peak = max_peak(peak, measure_peak(max(threads_list)))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"machine": bench_models.machine(), "seconds": time.time() - t_start, "peak_fma_gflops": peak,
                   "peak_gflops": peak.get("avx2_fma_gflops"), "results": all_results}, f, indent=1)
    print(f"suite took {time.time() - t_start:.0f} s; runs written to {args.out}", file=sys.stderr)
    print(f"FMA peak (GFLOP/s, best of the start and the end of the suite): {json.dumps(peak)}")
    print(report.render(all_results, args.reps, peak.get("avx2_fma_gflops"), peak.get("avx512_fma_gflops")))


if __name__ == "__main__":
    main()
