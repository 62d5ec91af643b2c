"""Markdown tables from tools/bench/compare.py results: throughput with paired ratios, single-text
latency, load time and peak RSS, and the roofline line. Ratios are embed's speed over the peer's
(> 1: embed is faster), the median over repetitions of the ratio within each repetition (the runs
of one repetition sit next to each other in time), with the lowest and highest in brackets.

  python3 tools/bench/report.py build/bench/compare.json   # re-render saved results
"""
import json
import statistics
import sys

import bench_models

PEERS = [("llama-avx2", "llama.cpp AVX2"), ("llama-avx512", "llama.cpp AVX-512"),
         ("sentence-transformers", "sentence-transformers")]


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


def peers_of(results, row):
    """The peer results that compare with one embed row: same family, workload and threads; the
    same GGUF for llama.cpp, the HF folder for sentence-transformers."""
    out = {}
    for r in results:
        if r["engine"] == "embed" or r["family"] != row["family"] or r["workload"] != row["workload"]:
            continue
        if r["threads"] == row["threads"] and r["model"] in (row["model"], "hf-f32"):
            out[r["engine"]] = r
    return out


def embed_rows(results):
    order = {w: i for i, w in enumerate(bench_models.WORKLOADS)}
    rows = [r for r in results if r["engine"] == "embed"]
    return sorted(rows, key=lambda r: (list(bench_models.MODELS).index(r["model"]), order[r["workload"]], r["threads"]))


def tokens_per_text(row):
    run = row["runs"][0]
    return run["tokens"] / run["texts"]


def throughput_table(results):
    lines = ["| model | workload | texts × tokens | threads | embed tok/s | " +
             " | ".join(f"{name} tok/s | embed ÷ it" for _, name in PEERS) + " |",
             "|---|---|---|---:|---:|" + "---:|---:|" * len(PEERS)]
    for row in embed_rows(results):
        peers = peers_of(results, row)
        run0 = row["runs"][0]
        cells = [row["model"], row["workload"], f"{run0['texts']} × {tokens_per_text(row):.0f}", str(row["threads"]),
                 f"{med([tps(r) for r in row['runs']]):.0f}"]
        for engine, _ in PEERS:
            p = peers.get(engine)
            if p is None:
                cells += ["—", "—"]
                continue
            if p["runs"][0]["tokens"] != run0["tokens"]:
                cells[2] += f" (peer tokens {p['runs'][0]['tokens']} vs {run0['tokens']})"
            cells += [f"{med([tps(r) for r in p['runs']]):.0f}", fmt_ratio(paired_ratio(row["runs"], p["runs"], tps))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def latency_table(results):
    lines = ["| model | threads | embed p50 / p99 ms | " + " | ".join(f"{name} p50 / p99 ms | its p50 ÷ embed's" for _, name in PEERS) + " |",
             "|---|---:|---:|" + "---:|---:|" * len(PEERS)]
    p50 = lambda r: r["latency"]["p50_ms"]
    for row in embed_rows(results):
        if "latency" not in row["runs"][0]:
            continue
        peers = peers_of(results, row)
        lat = lambda runs: f"{med([p50(r) for r in runs]):.2f} / {med([r['latency']['p99_ms'] for r in runs]):.2f}"
        cells = [row["model"], str(row["threads"]), lat(row["runs"])]
        for engine, _ in PEERS:
            p = peers.get(engine)
            if p is None or "latency" not in p["runs"][0]:
                cells += ["—", "—"]
                continue
            r = paired_ratio(p["runs"], row["runs"], p50)  # peer latency over embed's: > 1 means embed is faster
            cells += [lat(p["runs"]), fmt_ratio(r)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def memory_table(results):
    """Load time (median of all runs) and peak RSS on the largest workload, per model and engine."""
    lines = ["| model | engine | ISA | load s | peak RSS MiB (workload, threads) |", "|---|---|---|---:|---:|"]
    seen = {}
    for r in results:
        key = (r["model"], r["engine"])
        biggest = max(r["runs"], key=lambda x: x["peak_rss_mib"])
        entry = seen.setdefault(key, {"load": [], "rss": (0, "", 0), "isa": biggest.get("isa", "AVX2,FMA,F16C (run before embed bench reported its ISA)")})
        entry["load"] += [x["load_s"] for x in r["runs"]]
        if biggest["peak_rss_mib"] > entry["rss"][0]:
            entry["rss"] = (biggest["peak_rss_mib"], r["workload"], r["threads"])
    for (model, engine), e in seen.items():
        rss, workload, threads = e["rss"]
        lines.append(f"| {model} | {engine} | {e['isa']} | {med(e['load']):.3f} | {rss:.0f} ({workload}, {threads}) |")
    return "\n".join(lines)


def roofline_lines(results, peak_gflops, peak_avx512=None):
    """Achieved GFLOP/s of embed per model and workload at the highest thread count, against the
    AVX2 FMA peak for that many cores when it is known (and the AVX-512 one, which embed's kernels
    use where the CPU has it)."""
    lines = []
    for row in embed_rows(results):
        if row["threads"] != max(r["threads"] for r in results):
            continue
        n = tokens_per_text(row)
        flops = bench_models.FLOPS[row["family"]](round(n))
        gflops = med([tps(r) for r in row["runs"]]) * flops / 1e9
        peak = (peak_gflops or {}).get(str(row["threads"]))
        share = f", {100 * gflops / peak:.0f}% of the {peak:.0f} GFLOP/s AVX2 FMA peak" if peak else ""
        peak512 = (peak_avx512 or {}).get(str(row["threads"]))
        share += f", {100 * gflops / peak512:.0f}% of the {peak512:.0f} GFLOP/s AVX-512 one" if peak512 else ""
        lines.append(f"- {row['model']} {row['workload']} ({n:.0f} tokens/text, {flops / 1e6:.1f} MFLOP/token), "
                     f"{row['threads']} threads: {gflops:.1f} GFLOP/s{share}")
    return "\n".join(lines)


def render(results, reps, peak_gflops=None, peak_avx512=None):
    """The throughput table, the one the result is read from, comes last."""
    return "\n\n".join([
        "### Load time and peak RSS",
        memory_table(results),
        "### Roofline (embed)",
        roofline_lines(results, peak_gflops, peak_avx512),
        "### Single-text latency (STS-B sentences one at a time; peer's p50 ÷ embed's p50, > 1: embed is faster)",
        latency_table(results),
        f"### Throughput (tokens/s; embed ÷ peer, > 1: embed is faster; median of {reps} paired repetitions, range in brackets)",
        throughput_table(results),
    ])


if __name__ == "__main__":
    data = json.load(open(sys.argv[1]))
    reps = max(len(r["runs"]) for r in data["results"])
    print(render(data["results"], reps, data.get("peak_gflops"), data.get("peak_fma_gflops", {}).get("avx512_fma_gflops")))
