#!/usr/bin/env python3
"""The server benchmark, side by side: embed serve, llama.cpp's server (llama-cpp-python[server],
embedding=True) and Infinity (infinity-emb, torch backend), each pinned to the same cores, the same
model and texts, driven by wrk (tools/server/bench/post.lua) on loopback. Per engine:
  (a) saturation: batches of --batch texts from --concurrency connections -> tokens/s, and for
      embed the ratio to `embed bench` on the same texts (goal >= 90%);
  (b) --clients connections for --duration s of single texts: requests, failures other than 429,
      server RSS before and after;
  (c) single short queries, alone and while a bulk client keeps the queue full: p50/p99; for embed
      also the mean forward-pass time under bulk load (from /metrics) and the p99 as a multiple of it.
Writes results.json and results.md (a table) to --out. Stdlib only (runs under any python3).

    tools/server/bench/run.py --engines embed,llama,infinity --duration 60   # the full run
    tools/server/bench/run.py --engines embed --duration 3 --clients 8       # a quick check
"""
import argparse, json, os, re, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../.."))
SHORT_QUERY = "how do I reset my password"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def wait_http(url, proc, seconds=600):
    end = time.time() + seconds
    while time.time() < end and proc.poll() is None:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return True
        except Exception:
            time.sleep(0.5)
    return False


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=120).read())


class Engine:
    def __init__(self, name, cmd, route, model_id, health, env=None):
        self.name, self.cmd, self.route, self.model_id, self.health, self.env = name, cmd, route, model_id, health, env
        self.proc = None

    def start(self, port, cores):
        env = dict(os.environ, **(self.env or {}))
        cmd = ["taskset", "-c", cores] + [c.replace("{port}", str(port)) for c in self.cmd]
        self.log = tempfile.NamedTemporaryFile("w+", prefix=f"server_bench_{self.name}_", suffix=".log", delete=False)
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        self.base = f"http://127.0.0.1:{port}"
        if not wait_http(self.base + self.health, self.proc):
            self.stop()
            raise RuntimeError(f"{self.name} did not start; log: {self.log.name}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def wrk(url, route, bodies, connections, seconds, threads=2):
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        f.write("\n".join(json.dumps(b) for b in bodies) + "\n")
    env = dict(os.environ, BODIES=f.name, ROUTE=route)
    out = subprocess.run(["wrk", "-t", str(min(threads, connections)), "-c", str(connections), "-d", f"{seconds}s", "--timeout", "60s",
                          "-s", os.path.join(HERE, "post.lua"), url], env=env, capture_output=True, text=True)
    os.unlink(f.name)
    m = re.search(r"WRK_JSON (\{.*\})", out.stdout)
    if not m:
        raise RuntimeError("wrk failed: " + out.stdout + out.stderr)
    return json.loads(m.group(1))


def metric(base, name):
    text = urllib.request.urlopen(base + "/metrics", timeout=10).read().decode()
    m = re.search(rf"^{re.escape(name)} ([0-9.e+-]+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def token_counts(embed, model, texts):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in texts))
    out = subprocess.run([embed, "tokenize", model, f.name], check=True, capture_output=True, text=True).stdout
    os.unlink(f.name)
    return [len(line.split()) for line in out.splitlines()]


def settle(engine, body):
    """Waits until the server answers a lone request: work queued by the last phase (a server that
    keeps computing requests wrk has stopped waiting for) must not count against the next."""
    end = time.time() + 300
    while time.time() < end:
        try:
            post(engine.base + engine.route, body)
            return
        except Exception:
            time.sleep(1)


def measure(engine, texts, tokens, a):
    body = lambda ts: {"input": ts, "model": engine.model_id}
    batches = [texts[i:i + a.batch] for i in range(0, len(texts) - a.batch + 1, a.batch)]
    batch_tokens = sum(tokens[:len(batches) * a.batch]) / len(batches)
    res = {"engine": engine.name}
    wrk(engine.base, engine.route, [body(b) for b in batches[:4]], 2, 2)  # warm-up
    sat = wrk(engine.base, engine.route, [body(b) for b in batches], a.concurrency, a.duration)
    settle(engine, body([SHORT_QUERY]))
    ok = sat["statuses"].get("200", 0)
    res["saturation"] = {"requests": sat["requests"], "ok": ok, "tokens_per_s": ok * batch_tokens / (sat["duration_us"] / 1e6),
                         "texts_per_s": ok * a.batch / (sat["duration_us"] / 1e6)}
    single = [body([t]) for t in texts[:256]]
    rss0 = rss_mib(engine.proc.pid)
    load = wrk(engine.base, engine.route, single, a.clients, a.duration)
    settle(engine, body([SHORT_QUERY]))
    statuses = load["statuses"]
    failures = sum(n for code, n in statuses.items() if code not in ("200", "429")) + sum(load["errors"].values()) - load["errors"]["status"]
    res["clients"] = {"connections": a.clients, "seconds": a.duration, "requests": load["requests"], "ok": statuses.get("200", 0),
                      "rejected_429": statuses.get("429", 0), "failures": failures, "rss_before_mib": rss0,
                      "rss_after_mib": rss_mib(engine.proc.pid), "p99_ms": load["latency_us"]["p99"] / 1e3}
    alone = wrk(engine.base, engine.route, [body([SHORT_QUERY])], 1, max(2, a.duration // 3), threads=1)
    res["short_alone"] = {"p50_ms": alone["latency_us"]["p50"] / 1e3, "p99_ms": alone["latency_us"]["p99"] / 1e3}
    # Bulk load in the background, short queries in the foreground.
    passes0 = (metric(engine.base, "embed_pass_seconds_sum"), metric(engine.base, "embed_pass_seconds_count")) if engine.name == "embed" else None
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        f.write("\n".join(json.dumps(body(b)) for b in batches) + "\n")
    bulk = subprocess.Popen(["wrk", "-t", "2", "-c", str(a.bulk_clients), "-d", f"{a.duration + 4}s", "--timeout", "120s", "-s",
                             os.path.join(HERE, "post.lua"), engine.base], env=dict(os.environ, BODIES=f.name, ROUTE=engine.route),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    under = wrk(engine.base, engine.route, [body([SHORT_QUERY])], 1, a.duration, threads=1)
    bulk.communicate()
    settle(engine, body([SHORT_QUERY]))
    os.unlink(f.name)
    res["short_under_bulk"] = {"requests": under["requests"], "p50_ms": under["latency_us"]["p50"] / 1e3,
                               "p99_ms": under["latency_us"]["p99"] / 1e3}
    if passes0:
        # Mean time of a bulk pass: all passes' time less the short queries' own passes (each
        # about a lone short query's median, counted once per short request), per bulk pass.
        s = metric(engine.base, "embed_pass_seconds_sum") - passes0[0]
        n = metric(engine.base, "embed_pass_seconds_count") - passes0[1]
        n_short = under["requests"]
        bulk_s, bulk_n = s - n_short * res["short_alone"]["p50_ms"] / 1e3, n - n_short
        if bulk_n > 0 and bulk_s > 0:
            res["short_under_bulk"]["mean_pass_ms"] = 1e3 * bulk_s / bulk_n
            res["short_under_bulk"]["p99_over_pass"] = res["short_under_bulk"]["p99_ms"] / (1e3 * bulk_s / bulk_n)
    return res


def table(results, bench_tps, a):
    rows = ["| engine | saturation tokens/s | vs embed bench | 64-client requests | failures (not 429) | 429s | RSS before -> after MiB | short p50 / p99 ms alone | short p50 / p99 ms under bulk |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        s, c, al, ub = r["saturation"], r["clients"], r["short_alone"], r["short_under_bulk"]
        ratio = f"{s['tokens_per_s'] / bench_tps:.0%}" if r["engine"] == "embed" and bench_tps else ""
        rows.append(f"| {r['engine']} | {s['tokens_per_s']:.0f} | {ratio} | {c['requests']} | {c['failures']} | {c['rejected_429']} | "
                    f"{c['rss_before_mib']:.0f} -> {c['rss_after_mib']:.0f} | {al['p50_ms']:.1f} / {al['p99_ms']:.1f} | "
                    f"{ub['p50_ms']:.1f} / {ub['p99_ms']:.1f} |")
    e = next((r for r in results if r["engine"] == "embed"), None)
    notes = [f"`embed bench` on the same texts: {bench_tps:.0f} tokens/s." if bench_tps else ""]
    if e and "mean_pass_ms" in e["short_under_bulk"]:
        u = e["short_under_bulk"]
        notes.append(f"embed under bulk load: mean bulk forward pass {u['mean_pass_ms']:.1f} ms; short-query p99 = {u['p99_over_pass']:.2f} passes.")
    for r in results:
        if r["engine"] != "embed" and e:
            notes.append(f"embed / {r['engine']} saturation throughput: {e['saturation']['tokens_per_s'] / max(r['saturation']['tokens_per_s'], 1e-9):.2f}x.")
    return "\n".join(rows + [""] + [n for n in notes if n]) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=os.environ.get("EMBED_MINILM_GGUF_F16"), help="GGUF (default $EMBED_MINILM_GGUF_F16)")
    ap.add_argument("--hf-dir", default=os.environ.get("EMBED_MINILM_DIR"), help="the same model as a HF folder, for Infinity")
    ap.add_argument("--texts", default=None, help="one text per line (default: STS-B English sentences)")
    ap.add_argument("--engines", default="embed,llama,infinity")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=8, help="connections for the saturation run")
    ap.add_argument("--bulk-clients", type=int, default=4)
    ap.add_argument("--batch", type=int, default=32, help="texts per request in the saturation and bulk runs")
    ap.add_argument("--embed", default=os.path.join(ROOT, "build/tools/embed"))
    cache = os.environ.get("EMBED_CACHE", os.path.expanduser("~/.cache/embed"))
    ap.add_argument("--llama-python", default=os.path.join(cache, "venv-server-llama/bin/python"))
    ap.add_argument("--infinity-python", default=os.path.join(cache, "venv-server-infinity/bin/python"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build/server_bench"))
    a = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is not installed: apt-get install wrk")
    if not a.model:
        sys.exit("--model (or $EMBED_MINILM_GGUF_F16) is required")
    os.makedirs(a.out, exist_ok=True)
    texts = a.texts and [l.rstrip("\n") for l in open(a.texts, encoding="utf-8") if l.strip()]
    if not texts:
        import csv
        stsb = os.path.join(ROOT, "../shared/data/stsb/stsb-en-dev.csv")
        if not os.path.exists(stsb):
            stsb = "/work/shared/data/stsb/stsb-en-dev.csv"
        with open(stsb, encoding="utf-8") as f:
            rows = list(csv.reader(f))
        texts = [r[i] for r in rows if len(r) >= 3 for i in (0, 1)][:2048]  # sentence 1, sentence 2, score
    texts_file = os.path.join(a.out, "texts.txt")
    with open(texts_file, "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in texts))
    tokens = token_counts(a.embed, a.model, texts)
    cores = f"0-{a.threads - 1}"
    bench = subprocess.run(["taskset", "-c", cores, a.embed, "bench", a.model, texts_file, "-t", str(a.threads), "--json", "--latency", "0",
                            "--min-seconds", str(min(a.duration, 20))], capture_output=True, text=True, check=True)
    bench_tps = json.loads(bench.stdout)["batch"]["tokens_per_s"]
    engines = {
        "embed": Engine("embed", [a.embed, "serve", a.model, "-p", "{port}", "-t", str(a.threads)], "/v1/embeddings", "embed", "/health"),
        "llama": Engine("llama", [a.llama_python, "-m", "llama_cpp.server", "--model", a.model, "--embedding", "true", "--n_threads",
                                  str(a.threads), "--n_threads_batch", str(a.threads), "--n_ctx", "512", "--n_batch", "512", "--n_ubatch", "512",
                                  "--host", "127.0.0.1", "--port", "{port}"], "/v1/embeddings", "llama", "/v1/models"),
        "infinity": Engine("infinity", [os.path.join(os.path.dirname(a.infinity_python), "infinity_emb"), "v2", "--model-id", a.hf_dir or "", "--engine",
                                        "torch", "--device", "cpu", "--batch-size", str(a.batch), "--port", "{port}", "--url-prefix", ""],
                           "/embeddings", a.hf_dir or "", "/health", env={"OMP_NUM_THREADS": str(a.threads), "HF_HUB_OFFLINE": "1"}),
    }
    results = []
    for name in a.engines.split(","):
        e = engines[name]
        print(f"server bench: {name} ...", file=sys.stderr, flush=True)
        e.start(free_port(), cores)
        try:
            results.append(measure(e, texts, tokens, a))
        finally:
            e.stop()
    doc = {"model": a.model, "threads": a.threads, "duration_s": a.duration, "embed_bench_tokens_per_s": bench_tps, "results": results}
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)
    md = table(results, bench_tps, a)
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(md)
    print(md)


if __name__ == "__main__":
    main()
