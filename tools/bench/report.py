"""Markdown tables from tools/bench/compare.py results: the engines, their vectors' agreement,
throughput, the issue-13 goals (each with its measured ratio and verdict), the rows of machines
without AMX, the roofline against the AMX and FMA peaks, single-text latency, load time and peak
RSS. A ratio is embed's speed over the peer's (> 1: embed is faster): the median over repetitions
of the ratio within each repetition (the runs of one repetition sit next to each other in time),
with the lowest and highest in brackets.

  python3 tools/bench/report.py build/bench/compare.json   # re-render saved results
"""
import json
import statistics
import sys

import bench_models

# The issue-13 goals, measured at GOAL_THREADS: embed engine `ours` over engine `peer` on every
# workload of the family's models, at least `target`.
GOAL_THREADS = 2
GOALS = [
    {"what": "default ≥ 2× sentence-transformers f32", "ours": "embed", "peer": "st-f32", "family": "minilm", "target": 2.0},
    {"what": "default ≥ 1× sentence-transformers bf16", "ours": "embed", "peer": "st-bf16", "family": "minilm", "target": 1.0},
    {"what": "--compute-type bf16 ≥ 1.5× sentence-transformers bf16", "ours": "embed-bf16", "peer": "st-bf16",
     "family": "minilm", "target": 1.5},
    {"what": "--compute-type int8 ≥ 1.5× ONNX Runtime int8", "ours": "embed-int8", "peer": "ort-int8", "family": "minilm",
     "target": 1.5},
    {"what": "gemma-3-270m Q4_K_M ≥ 1.5× llama.cpp with AMX (default)", "ours": "embed", "peer": "llama-amx",
     "family": "gemma3-270m", "target": 1.5},
    {"what": "gemma-3-270m Q4_K_M ≥ 1.5× llama.cpp with AMX (--compute-type int8)", "ours": "embed-int8",
     "peer": "llama-amx", "family": "gemma3-270m", "target": 1.5},
]
# Labels of runs saved before the engines were renamed.
LEGACY_LABELS = {"sentence-transformers": "st-f32"}


def med(values):
    return statistics.median(values) if values else float("nan")


def tps(run):
    return run["batch"]["tokens_per_s"]


def paired_ratio(ours, theirs, key):
    """Median, min, max over repetitions of key(ours[i]) / key(theirs[i])."""
    r = [key(a) / key(b) for a, b in zip(ours, theirs) if key(b) > 0]
    return (med(r), min(r), max(r)) if r else None


def fmt_ratio(r):
    if r is None:
        return "—"
    m, lo, hi = r
    return f"**{m:.2f}×** ({lo:.2f}–{hi:.2f})" if hi - lo > 0.005 else f"**{m:.2f}×**"


def verdict(ratio, target):
    """'met (+x%)' when the ratio reaches the target, else by how much it falls short: the share
    of the target missed and the speed-up still needed."""
    if ratio >= target:
        return f"met (+{100 * (ratio / target - 1):.0f}%)"
    return f"missed by {100 * (1 - ratio / target):.0f}% (needs {target / ratio:.2f}× more)"


def effective_peaks(run, peaks, threads):
    """(AMX peak, its name) and (FMA peak, its name) that bound an embed run's arithmetic, in
    G(FL)OP/s for `threads` threads, from its kernels: on AMX the default f32-grade path spends
    three bf16 tile products per multiply-add (hi·hi + hi·lo + lo·hi), bf16 one, int8 runs on the
    int8 tile peak; the FMA peak of its vector ISA. None where unknown or not applicable."""
    t = str(threads)
    isa, compute = str(run.get("isa", "")).lower(), run.get("compute_type", "f32")
    amx = None
    if isa == "amx":
        if compute == "int8":
            amx = (peaks.get("amx_int8_gops", {}).get(t), "AMX int8")
        elif compute == "bf16":
            amx = (peaks.get("amx_bf16_gflops", {}).get(t), "AMX bf16")
        else:
            bf16 = peaks.get("amx_bf16_gflops", {}).get(t)
            amx = (bf16 / 3 if bf16 else None, "AMX bf16 ÷ 3")
    wide = isa == "amx" or "512" in isa
    fma = (peaks.get("avx512_fma_gflops" if wide else "avx2_fma_gflops", {}).get(t), "AVX-512 FMA" if wide else "AVX2 FMA")
    return (amx if amx and amx[0] else None), (fma if fma[0] else None)


def normalize(results):
    for r in results:
        r["engine"] = LEGACY_LABELS.get(r["engine"], r["engine"])
    return results


def engine_order(results):
    labels = list(bench_models.ENGINES)
    return sorted({r["engine"] for r in results}, key=lambda e: labels.index(e) if e in labels else len(labels))


def row_keys(results):
    """(model, workload, threads) of every GGUF model's rows, in suite order."""
    models, workloads = list(bench_models.MODELS), list(bench_models.WORKLOADS)
    keys = {(r["model"], r["workload"], r["threads"]) for r in results if r["model"] != "hf"}
    return sorted(keys, key=lambda k: (models.index(k[0]) if k[0] in models else 99, workloads.index(k[1]), k[2]))


def find(results, engine, model, workload, threads):
    """The result of an engine beside a GGUF model's row: its own run of that model, or the
    family's HF-folder run for the HF peers."""
    family = bench_models.MODELS.get(model, {}).get("family")
    for r in results:
        if r["engine"] == engine and r["workload"] == workload and r["threads"] == threads and \
                (r["model"] == model or (r["model"] == "hf" and r["family"] == family)):
            return r
    return None


def tokens_per_text(result):
    run = result["runs"][0]
    return run["tokens"] / run["texts"]


def engines_table(data):
    lines = ["| label | engine | version | kernels / ISA seen |", "|---|---|---|---|"]
    kernels = {}
    for k in data.get("kernels", []):
        kernels.setdefault(k["engine"], set()).add(f"{k['isa']}, compute {k['compute_type']}")
    for e in engine_order(data["results"] + data.get("agreement", [])):
        runs = [r["runs"][0] for r in data["results"] if r["engine"] == e]
        own = bench_models.ENGINES.get(e, {}).get("kind") == "embed"
        version = runs[0].get("version") or ("this repository" if own else "?") if runs else "?"
        seen = kernels.get(e) or {runs[0].get("isa", "?")} if runs else {"?"}
        name = bench_models.ENGINES.get(e, {}).get("name", e)
        lines.append(f"| {e} | {name} | {version} | {'; '.join(sorted(seen))} |")
    return "\n".join(lines)


def agreement_table(data):
    fmt = lambda c: f"{c['min']:.5f} / {c['median']:.5f}" if c else "—"
    lines = ["| model | engine | cosine to embed (min / median) | cosine to sentence-transformers f32 (min / median) | AMX evidence |",
             "|---|---|---:|---:|---|"]
    for a in data.get("agreement", []):
        ref = a.get("vs_embed", {}).get("reference", "")
        vs_embed = "reference" if a["engine"] == "embed" else fmt(a.get("vs_embed")) + (f" ({ref})" if a["model"] == "hf" and ref else "")
        vs_st = "reference" if a["engine"] == "st-f32" else fmt(a.get("vs_st_f32"))
        lines.append(f"| {a['model']} | {a['engine']} | {vs_embed} | {vs_st} | {a.get('evidence') or '—'} |")
    return "\n".join(lines)


def throughput_table(results):
    engines = engine_order(results)
    lines = ["| model | workload | texts × tokens | threads | " + " | ".join(engines) + " |",
             "|---|---|---|---:|" + "---:|" * len(engines)]
    for model, workload, threads in row_keys(results):
        base = find(results, "embed", model, workload, threads) or find(results, engines[0], model, workload, threads)
        cells = [model, workload, f"{base['runs'][0]['texts']} × {tokens_per_text(base):.0f}" if base else "?", str(threads)]
        for e in engines:
            r = find(results, e, model, workload, threads)
            cells.append(f"{med([tps(x) for x in r['runs']]):.0f}" if r else "—")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def goal_rows(results):
    """One row per goal and (model, workload) at GOAL_THREADS: (goal, model, workload, ours, peer,
    paired ratio). Goals whose engines did not run are left out."""
    rows = []
    for goal in GOALS:
        for model, workload, threads in row_keys(results):
            if threads != GOAL_THREADS or bench_models.MODELS.get(model, {}).get("family") != goal["family"]:
                continue
            ours, peer = find(results, goal["ours"], model, workload, threads), find(results, goal["peer"], model, workload, threads)
            if ours and peer and ours["model"] == model:
                rows.append((goal, model, workload, ours, peer, paired_ratio(ours["runs"], peer["runs"], tps)))
    return rows


def goals_table(results, skipped=()):
    """Every goal's rows; a goal that has none says why (its embed engine was skipped, or an
    engine was not in the run)."""
    lines = [f"| goal ({GOAL_THREADS} threads) | model | workload | embed tok/s | peer tok/s | ratio | verdict |",
             "|---|---|---|---:|---:|---:|---|"]
    rows = goal_rows(results)
    for goal in GOALS:
        mine = [r for r in rows if r[0] is goal]
        for _, model, workload, ours, peer, ratio in mine:
            lines.append(f"| {goal['what']} | {model} | {workload} | {med([tps(x) for x in ours['runs']]):.0f} | "
                         f"{med([tps(x) for x in peer['runs']]):.0f} | {fmt_ratio(ratio)} | "
                         f"{verdict(ratio[0], goal['target']) if ratio else '—'} |")
        if not mine:
            why = sorted({f"{s['engine']} skipped on {s['model']}: {s['why']}" for s in skipped if s["engine"] == goal["ours"]
                          and bench_models.MODELS.get(s["model"], {}).get("family") == goal["family"]})
            lines.append(f"| {goal['what']} | — | — | — | — | — | not measured: "
                         f"{'; '.join(why) or 'its engines or models were not in this run'} |")
    return "\n".join(lines)


def without_amx_table(results):
    """embed with the ISA forced below AMX, against the embed of an earlier commit (today's speed
    on such machines), the default (AMX) run and sentence-transformers f32."""
    refs = [("embed-baseline", "÷ embed before issue 13"), ("embed", "÷ embed default (AMX)"), ("st-f32", "÷ sentence-transformers f32")]
    lines = ["| model | workload | threads | engine | tok/s | " + " | ".join(name for _, name in refs) + " |",
             "|---|---|---:|---|---:|" + "---:|" * len(refs)]
    for model, workload, threads in row_keys(results):
        for e in ("embed-avx512", "embed-avx2"):
            r = find(results, e, model, workload, threads)
            if not r:
                continue
            cells = [model, workload, str(threads), e, f"{med([tps(x) for x in r['runs']]):.0f}"]
            for ref, _ in refs:
                p = find(results, ref, model, workload, threads)
                cells.append(fmt_ratio(paired_ratio(r["runs"], p["runs"], tps)) if p else "—")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def roofline_table(results, peaks):
    """Achieved G(FL)OP/s of each embed run against the peak of the units its kernels use."""
    lines = ["| model | workload | threads | engine | kernels | MFLOP/token | GFLOP/s | of the AMX peak | of the FMA peak |",
             "|---|---|---:|---|---|---:|---:|---:|---:|"]
    for model, workload, threads in row_keys(results):
        for e in engine_order(results):
            r = find(results, e, model, workload, threads)
            if not r or bench_models.ENGINES.get(e, {}).get("kind") != "embed":
                continue
            run0 = r["runs"][0]
            flops = bench_models.FLOPS[r["family"]](round(tokens_per_text(r)))
            gflops = med([tps(x) for x in r["runs"]]) * flops / 1e9
            amx, fma = effective_peaks(run0, peaks or {}, threads)
            share = lambda p: f"{100 * gflops / p[0]:.1f}% of {p[0]:.0f} ({p[1]})" if p else "—"
            lines.append(f"| {model} | {workload} | {threads} | {e} | {run0.get('isa', '?')}, {run0.get('compute_type', 'f32')} | "
                         f"{flops / 1e6:.1f} | {gflops:.1f} | {share(amx)} | {share(fma)} |")
    return "\n".join(lines)


def latency_table(results):
    engines = engine_order(results)
    lines = ["| model | threads | " + " | ".join(f"{e} p50 / p99 ms" for e in engines) + " |",
             "|---|---:|" + "---:|" * len(engines)]
    for model, workload, threads in row_keys(results):
        cells, any_latency = [model, str(threads)], False
        for e in engines:
            r = find(results, e, model, workload, threads)
            if r and "latency" in r["runs"][0]:
                any_latency = True
                cells.append(f"{med([x['latency']['p50_ms'] for x in r['runs']]):.2f} / "
                             f"{med([x['latency']['p99_ms'] for x in r['runs']]):.2f}")
            else:
                cells.append("—")
        if any_latency:
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def memory_table(results):
    """Load time (median of all runs) and peak RSS on the largest workload, per model and engine."""
    lines = ["| model | engine | ISA | load s | peak RSS MiB (workload, threads) |", "|---|---|---|---:|---:|"]
    seen = {}
    for r in results:
        key = (r["model"], r["engine"])
        biggest = max(r["runs"], key=lambda x: x["peak_rss_mib"])
        entry = seen.setdefault(key, {"load": [], "rss": (0, "", 0), "isa": biggest.get("isa", "?")})
        entry["load"] += [x["load_s"] for x in r["runs"]]
        if biggest["peak_rss_mib"] > entry["rss"][0]:
            entry["rss"] = (biggest["peak_rss_mib"], r["workload"], r["threads"])
    for (model, engine), e in seen.items():
        rss, workload, threads = e["rss"]
        lines.append(f"| {model} | {engine} | {e['isa']} | {med(e['load']):.3f} | {rss:.0f} ({workload}, {threads}) |")
    return "\n".join(lines)


def render(data):
    """Every table of a compare.py run; the goals, the result the suite is read for, come last."""
    results = normalize([r for r in data["results"] if r["runs"]])
    data = dict(data, results=results)
    peaks = data.get("peaks") or data.get("peak_fma_gflops") or {}
    reps = max((len(r["runs"]) for r in results), default=0)
    parts = ["### Engines", engines_table(data)]
    if data.get("skipped"):
        parts += ["### Skipped", "\n".join(f"- {s['engine']} on {s['model']}: {s['why']}" for s in data["skipped"])]
    if data.get("agreement"):
        parts += ["### Agreement of the vectors (6 STS-B sentences and 2 documents of 256 tokens)", agreement_table(data)]
    parts += [
        f"### Peaks (G(FL)OP/s per thread count, best of the start and the end of the suite)\n\n`{json.dumps(peaks, sort_keys=True)}`",
        "### Load time and peak RSS", memory_table(results),
    ]
    latency = latency_table(results)
    if latency.count("\n") > 1:
        parts += ["### Single-text latency (STS-B sentences one at a time)", latency]
    parts += [
        "### Roofline (embed)", roofline_table(results, peaks),
        f"### Throughput (tokens/s, median of {reps} repetitions)", throughput_table(results),
        "### Machines without AMX (embed with EMBED_ISA forced; paired ratios)", without_amx_table(results),
        f"### Goals (paired ratios, median of {reps} repetitions, range in brackets)", goals_table(results, data.get("skipped", [])),
    ]
    return "\n\n".join(parts)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print(render(json.load(f)))
