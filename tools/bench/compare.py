#!/usr/bin/env python3
"""embed beside its peers, interleaved, on the same texts, threads and pooling: `embed bench` (the
C++ API) at each compute type and forced ISA, and the peers of bench_models.ENGINES
(sentence-transformers f32 and bf16, ONNX Runtime fp32 and int8, llama.cpp builds). Each
repetition runs every engine once, one process per run, in a rotated order (A B C, B C A, ...);
the machine is shared and noisy, so results are medians over repetitions of ratios paired within
a repetition, not absolute figures. Before the timed suite it checks every engine on a few texts:
embed variants that fail (e.g. a compute type not implemented yet) are skipped with a note, and
every engine's vectors are compared (cosine) with embed's and sentence-transformers f32's, with
evidence of the AMX use each claims. Prints markdown tables (tools/bench/report.py) and writes
everything to --out.

Usage (after cmake --build build; the peers' venvs are built on first use, ~30 minutes once):
  python3 tools/bench/compare.py                       # the issue-13 suite (docs/benchmarks.md has its duration)
  python3 tools/bench/compare.py --models minilm-f16 --workloads stsb --threads 2 --reps 1 --engines embed,st-bf16
  python3 tools/bench/compare.py --baseline-embed "$(tools/bench/build_baseline.sh)"   # + embed before issue 13
  python3 tools/bench/compare.py --issue-sizes --models minilm-f16 --threads 2   # the full counts
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
from bench_models import ENGINES, MODELS, WORKLOADS

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


def agreement_texts():
    """Six STS-B sentences and two documents cut to 256 tokens: short and long inputs, padded
    batches on the peers' side."""
    sentences = stsb_sentences()
    return sentences[:6] + documents(sentences, 2, 256, start=WORKLOADS["doc256"]["start"])


def llama_batch_tokens(max_tokens):
    """llama.cpp's n_ctx = n_batch = n_ubatch: its default physical batch of 512 tokens, or the
    longest text when that is longer (a pooled sequence must fit in one ubatch). Larger batches
    are slower for llama.cpp on short texts: its attention over a ubatch is one dense masked
    matrix, quadratic in the ubatch (MiniLM on STS-B, 1 thread: 4096 -> ~190 tok/s, 512 -> ~640)."""
    return max(512, max_tokens)


# ---- engines: the argv and environment of one run ----

class Run:
    """One engine on one model: label, model label, and how to start it on a file of texts."""

    def __init__(self, label, model_label, model, args, pythons):
        self.label, self.model_label, self.model = label, model_label, model
        self.spec = ENGINES[label]
        self.args, self.pythons = args, pythons

    def env(self, threads):
        env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS=str(threads))
        env.update(self.spec.get("env", {}))
        return env

    def bench_argv(self, path, max_tokens, latency, threads):
        """A timed run that prints one JSON object (embed bench --json / peer_run.py)."""
        a, m = self.args, self.model
        common = [path, "--repeat", str(a.passes), "--warmup-input", a.warmup_input, "--latency", str(latency)]
        kind = self.spec["kind"]
        if kind == "embed":
            binary = a.baseline_embed if self.spec.get("baseline") else os.path.join(BUILD, "tools", "embed")
            return [binary, "bench", m["gguf"], *common, "--json", "-t", str(threads), "--pooling", m["pooling"],
                    "--max-tokens", str(max_tokens), "--truncate", *self.spec.get("flags", [])]
        return self.peer_argv(["--input", *common], max_tokens, threads)

    def vectors_argv(self, path, out, max_tokens, threads):
        """A run that writes the vectors of `path`'s texts to `out` (JSONL, embed's format)."""
        m = self.model
        if self.spec["kind"] == "embed":
            binary = self.args.baseline_embed if self.spec.get("baseline") else os.path.join(BUILD, "tools", "embed")
            return [binary, m["gguf"], path, "-o", out, "-t", str(threads), "--pooling", m["pooling"],
                    "--max-tokens", str(max_tokens), "--truncate", *self.spec.get("flags", [])]
        return self.peer_argv(["--input", path, "--vectors", out, "--verbose"], max_tokens, threads)

    def peer_argv(self, io, max_tokens, threads):
        kind, m = self.spec["kind"], self.model
        argv = [self.pythons[self.spec["venv"]], os.path.join(HERE, "peer_run.py"), "--engine", kind, *io,
                "--threads", str(threads), "--max-tokens", str(max_tokens)]
        if kind == "llama":
            return argv + ["--model", m["gguf"], "--pooling", m["pooling"], "--batch-tokens", str(llama_batch_tokens(max_tokens))]
        if kind == "st":
            return argv + ["--hf-folder", m["hf"], "--dtype", self.spec["dtype"]]
        return argv + ["--hf-folder", m["hf"], "--onnx-model", os.path.join(self.pythons["onnx-models"], self.spec["file"])]


def runs_for_family(family, args, pythons):
    """Every (engine, model) run of a model family: embed and llama.cpp engines once per GGUF
    model, the HF peers once on the family's HF folder."""
    runs, hf_done = [], set()
    for name in args.models:
        model = MODELS[name]
        if model["family"] != family:
            continue
        for label in args.engines:
            spec = ENGINES[label]
            if spec["models"] == "hf":
                if model.get("hf") and label not in hf_done:
                    hf_done.add(label)
                    runs.append(Run(label, "hf", model, args, pythons))
            elif bench_models.engine_runs_model(spec, model) and (label, name) not in args.skipped:
                runs.append(Run(label, name, model, args, pythons))
    return runs


def last_json(stdout):
    """The last line of a run's output that is a JSON object (oneDNN's verbose lines come before)."""
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError("no JSON object in the output")


def run_json(argv, env):
    t0 = time.time()
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {' '.join(argv)}\n{p.stderr[-3000:]}")
    result = last_json(p.stdout)
    result["process_wall_s"] = time.time() - t0
    with open("/proc/loadavg") as f:
        result["loadavg_1min_after"] = float(f.read().split()[0])
    return result


# ---- before the suite: which embed variants run, and do all engines agree ----

def probe_embed_variants(tmp, args, pythons):
    """Runs every embed variant once on the warm-up texts; a variant that fails (a compute type
    without kernels yet, an ISA this CPU lacks) is skipped for that model, with its error as the
    note. Returns {(label, model): note} and the kernels each variant reported."""
    skipped, kernels = {}, {}
    for name in args.models:
        for label in args.engines:
            spec = ENGINES[label]
            if spec["kind"] != "embed" or not bench_models.engine_runs_model(spec, MODELS[name]):
                continue
            run = Run(label, name, MODELS[name], args, pythons)
            argv = run.bench_argv(args.warmup_input, 64, 0, 1)
            p = subprocess.run(argv, capture_output=True, text=True, env=run.env(1))
            if p.returncode != 0:
                lines = [x for x in p.stderr.strip().splitlines() if x.strip()] or [f"exit code {p.returncode}"]
                skipped[(label, name)] = lines[-1].strip()
                print(f"  skipping {label} on {name}: {skipped[(label, name)]}", file=sys.stderr, flush=True)
            else:
                r = last_json(p.stdout)
                kernels[(label, name)] = {"isa": r.get("isa", "?"), "compute_type": r.get("compute_type", "f32")}
    return skipped, kernels


def read_vectors(path):
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r["embedding"] for r in sorted(rows, key=lambda r: r["index"])]


def cosines(a, b):
    out = []
    for x, y in zip(a, b):
        dot = sum(p * q for p, q in zip(x, y))
        nx, ny = sum(p * p for p in x) ** 0.5, sum(q * q for q in y) ** 0.5
        out.append(dot / max(nx * ny, 1e-30))
    return out


def amx_evidence(p):
    """What the run's output shows about AMX: oneDNN's verbose lines (sentence-transformers),
    llama.cpp's buffer report, the process's tile permission (peer_run.py's JSON)."""
    notes = []
    onednn = [x for x in p.stdout.splitlines() if x.startswith("onednn_verbose") and ",exec," in x
              and (",matmul," in x or ",inner_product," in x)]
    if onednn:
        amx = [x for x in onednn if "amx" in x]
        impl = sorted({x.split(",")[6] for x in amx if len(x.split(",")) > 6})
        notes.append(f"oneDNN ran {len(amx)} of {len(onednn)} matmul/inner-product calls on AMX kernels ({', '.join(impl[:3])})")
    amx_buffer = [" ".join(x.split(":", 1)[-1].split()) for x in p.stderr.splitlines() if "AMX model buffer size" in x]
    if "llama_model_load" in p.stderr or "load_tensors" in p.stderr:
        notes.append("llama.cpp: " + (amx_buffer[0] if amx_buffer else "no weights in the AMX buffer"))
    try:
        perm = last_json(p.stdout).get("amx_permission")
        if perm is not None:
            notes.append("AMX tile permission " + ("held" if perm else "not requested"))
    except ValueError:
        pass
    return "; ".join(notes)


def agreement(tmp, args, pythons, threads, kernels):
    """Each engine's vectors on agreement_texts() against embed's (default compute type, same
    GGUF; for the HF peers the family's first float GGUF) and sentence-transformers f32's (same
    family). An embed variant's evidence is the kernels it reported in the probe."""
    path = write_workload(tmp, "agreement", agreement_texts())
    rows = []
    for family in dict.fromkeys(MODELS[n]["family"] for n in args.models):
        vectors = {}  # (label, model label) of this family -> vectors
        for run in runs_for_family(family, args, pythons):
            out = os.path.join(tmp, f"vectors-{run.label}-{family}-{run.model_label}.jsonl")
            env = run.env(threads)
            if run.label == "st-bf16":
                env["ONEDNN_VERBOSE"] = "1"
            p = subprocess.run(run.vectors_argv(path, out, 256, threads), capture_output=True, text=True, env=env)
            if p.returncode != 0:
                raise SystemExit(f"{run.label} on {run.model_label} failed ({p.returncode}):\n{p.stderr[-3000:]}")
            vectors[(run.label, run.model_label)] = read_vectors(out)
            k = kernels.get((run.label, run.model_label))
            evidence = f"embed bench --json: isa {k['isa']}, compute type {k['compute_type']}" if k else amx_evidence(p)
            rows.append({"engine": run.label, "model": run.model_label, "family": family, "evidence": evidence})
        embed_for_hf = next((n for n in args.models if MODELS[n]["family"] == family
                             and MODELS[n]["weights"] in bench_models.FLOAT_WEIGHTS), None)
        for row in rows:
            if row["family"] != family:
                continue
            mine = vectors[(row["engine"], row["model"])]
            for key, ref in (("vs_embed", ("embed", row["model"] if row["model"] != "hf" else embed_for_hf)),
                             ("vs_st_f32", ("st-f32", "hf"))):
                if ref in vectors and ref != (row["engine"], row["model"]):
                    c = cosines(mine, vectors[ref])
                    row[key] = {"min": min(c), "median": sorted(c)[len(c) // 2], "reference": f"{ref[0]} {ref[1]}"}
    return rows


# ---- the timed suite ----

def run_group(tmp, family, workload, threads, args, pythons):
    """Every (engine, model) run of a family, interleaved over args.reps repetitions."""
    runs = []  # (Run, argv)
    for run in runs_for_family(family, args, pythons):
        path, max_tokens, latency = make_workload(tmp, run.model, workload)
        runs.append((run, run.bench_argv(path, max_tokens, latency, threads)))
    results = {(r.label, r.model_label): [] for r, _ in runs}
    for rep in range(args.reps):
        order = runs[rep % len(runs):] + runs[: rep % len(runs)] if runs else []
        for run, argv in order:
            r = run_json(argv, run.env(threads))
            results[(run.label, run.model_label)].append(r)
            print(f"  rep {rep + 1}/{args.reps} {run.label:14s} {run.model_label:16s} {workload:7s} t={threads}: "
                  f"{r['batch']['tokens_per_s']:9.1f} tok/s" +
                  (f", p50 {r['latency']['p50_ms']:.2f} ms" if "latency" in r else "") +
                  f" ({r['process_wall_s']:.1f} s)", file=sys.stderr, flush=True)
    return results


def measure_peak(threads):
    """{"avx2_fma_gflops": {"1": ..}, "avx512_fma_gflops": .., "avx512_vnni_gops": .., "avx512_bf16_gflops": ..,
    "amx_bf16_gflops": .., "amx_int8_gops": ..} from build/tools/embed-bench-peak (each entry where the CPU has
    the unit; AMX where the OS allows it too)."""
    tool = os.path.join(BUILD, "tools", "embed-bench-peak")
    return json.loads(sh(tool, str(threads))) if os.access(tool, os.X_OK) else {}


def max_peak(a, b):
    """Per unit and thread count, the higher of two peak measurements (interference only lowers it)."""
    out = {}
    for unit in set(a) | set(b):
        keys = set(a.get(unit, {})) | set(b.get(unit, {}))
        out[unit] = {k: max(a.get(unit, {}).get(k, 0), b.get(unit, {}).get(k, 0)) for k in sorted(keys)}
    return out


def setup_pythons(args):
    """The python of each venv the chosen engines need (built on first use), and the ONNX export."""
    venvs = {ENGINES[e].get("venv") for e in args.engines} - {None}
    pythons = {}
    if "refgen" in venvs:
        pythons["refgen"] = sh(os.path.join(ROOT, "tools", "refgen", "setup_venv.sh"))
    for kind in ("llama-avx512", "llama-amx", "onnx"):
        if kind in venvs:
            pythons[kind] = sh(os.path.join(HERE, "setup_venv.sh"), kind)
    if "onnx" in venvs:
        hf = next((MODELS[n]["hf"] for n in args.models if MODELS[n].get("hf")), None)
        if hf:
            pythons["onnx-models"] = sh(pythons["onnx"], os.path.join(HERE, "onnx_export.py"), hf)
    return pythons


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated: " + ", ".join(MODELS))
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated: " + ", ".join(WORKLOADS))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--engines", default=",".join(bench_models.DEFAULT_ENGINES),
                    help="comma-separated: " + ", ".join(ENGINES) + "; 'none' for nothing beside embed")
    ap.add_argument("--baseline-embed", help="an embed binary from an earlier commit (adds the embed-baseline engine)")
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions (one process per engine each); "
                                                         "0: only the agreement check")
    ap.add_argument("--passes", type=int, default=1, help="timed passes over the workload per process")
    ap.add_argument("--no-agreement", action="store_true", help="skip the vectors' agreement check before the suite")
    ap.add_argument("--out", default=os.path.join(BUILD, "bench", "compare.json"))
    ap.add_argument("--max-texts", type=int, help="at most this many texts per workload and latency run (quick checks)")
    ap.add_argument("--issue-sizes", action="store_true",
                    help="the benchmark issue's full counts (all 3000 STS-B sentences, 200 documents of 256 tokens, "
                         "20 at the maximum length) instead of the suite's reduced ones")
    args = ap.parse_args()
    for m in MODELS.values():
        if args.issue_sizes:
            m["sizes"] = dict(bench_models.ISSUE_SIZES)
        if args.max_texts:
            m["sizes"] = {w: min(n, args.max_texts) for w, n in m["sizes"].items()}
            m["latency"] = min(m["latency"], args.max_texts)
    args.models = args.models.split(",")
    args.workloads = args.workloads.split(",")
    args.engines = [] if args.engines == "none" else args.engines.split(",")
    if "embed" not in args.engines:
        args.engines.insert(0, "embed")
    if args.baseline_embed and "embed-baseline" not in args.engines:
        args.engines.append("embed-baseline")
    for name, known, what in ((args.models, MODELS, "model"), (args.workloads, WORKLOADS, "workload"),
                              (args.engines, ENGINES, "engine")):
        for n in name:
            if n not in known:
                raise SystemExit(f"unknown {what} {n} (known: {', '.join(known)})")
    if "embed-baseline" in args.engines and not (args.baseline_embed and os.access(args.baseline_embed, os.X_OK)):
        raise SystemExit("embed-baseline needs --baseline-embed PATH (tools/bench/build_baseline.sh builds one)")
    if not os.access(os.path.join(BUILD, "tools", "embed"), os.X_OK):
        raise SystemExit(f"{BUILD}/tools/embed not found: build first (cmake --build build)")
    return args


def main():
    args = parse_args()
    bench_models.resolve_paths(ROOT, [MODELS[n] for n in args.models])
    pythons = setup_pythons(args)
    threads_list = [int(t) for t in args.threads.split(",")]
    peak = measure_peak(max(threads_list))
    t_start = time.time()
    all_results = []
    with tempfile.TemporaryDirectory() as tmp:
        # Each process warms up on a few short sentences (weights faulted in, threads started),
        # not on the workload: a second pass over a long workload would double the suite's time.
        args.warmup_input = write_workload(tmp, "warmup", stsb_sentences()[-4:])
        args.skipped, kernels = probe_embed_variants(tmp, args, pythons)
        agree = [] if args.no_agreement else agreement(tmp, args, pythons, max(threads_list), kernels)
        families = list(dict.fromkeys(MODELS[n]["family"] for n in args.models))
        for threads in threads_list:
            for workload in args.workloads:
                for family in families:
                    group = run_group(tmp, family, workload, threads, args, pythons)
                    for (engine, model_name), runs in group.items():
                        if runs:  # --reps 0: the agreement check only
                                all_results.append({"engine": engine, "model": model_name, "family": family,
                                                "workload": workload, "threads": threads, "runs": runs})
    peak = max_peak(peak, measure_peak(max(threads_list)))
    data = {"machine": bench_models.machine(), "seconds": time.time() - t_start, "peaks": peak,
            "engines": args.engines, "skipped": [{"engine": e, "model": m, "why": why} for (e, m), why in args.skipped.items()],
            "kernels": [{"engine": e, "model": m, **k} for (e, m), k in kernels.items()],
            "agreement": agree, "results": all_results}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(data, f, indent=1)
    print(f"suite took {time.time() - t_start:.0f} s; runs written to {args.out}", file=sys.stderr)
    print(report.render(data))


if __name__ == "__main__":
    main()
