#!/usr/bin/env python3
"""`embed serve` under well-formed and abusive clients at once (issue #28 §3).

wrk (Debian's) drives --clients keep-alive connections that POST the same /embed request; every
answer must be byte for byte the reference answer, which is first checked against the `embed` CLI's
vectors. A clean run gives the baseline p50/p99. Then the same wrk run again while --abusers Python
clients cycle through abuse: slowloris headers, bodies cut short, requests abandoned before their
answer, bodies over --payload-limit, headers over 16 KiB, too many inputs, an input over the token
limit, garbage bytes and invalid JSON; each refusal must carry its documented status code. Checked:
every well-formed answer correct, RSS flat, the process alive and idle afterwards, and with
--p99-ratio the mixed p99 within that multiple of the clean one (the 60 s benchmark run); then
kill -9 under load and a restart on the same port that serves correct answers at once. Stdlib only
(plus wrk).

    abuse_test.py EMBED_BIN [--model M] [--duration 5] [--json OUT]   # CI: a few seconds per run
    abuse_test.py build/tools/embed --duration 60 --p99-ratio 2 --json results.json  # docs/benchmarks.md
"""
import argparse, json, os, random, re, signal, socket, subprocess, sys, tempfile, threading, time, urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
HERE = os.path.dirname(os.path.abspath(__file__))
TEXTS = ["A man is playing a guitar.", "Someone plays the guitar!", "The stock market fell 3% today.", "Ünïcödé and emoji 🎸 too"]
PAYLOAD_LIMIT = 100000
READ_TIMEOUT = 2

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def cli_rows(embed, model, texts):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(texts) + "\n")
    out = subprocess.run([embed, model, f.name, "-t", "2", "-f", "jsonl"], check=True, capture_output=True, text=True).stdout
    os.unlink(f.name)
    return [json.loads(line)["embedding"] for line in out.splitlines() if line.strip()]


class Server:
    def __init__(self, embed, model, port=0, extra=()):
        self.log = tempfile.NamedTemporaryFile(prefix="embed_abuse_", suffix=".log", delete=False)
        args = [embed, "serve", model, "-p", str(port), "-t", "2", "--read-timeout", str(READ_TIMEOUT),
                "--payload-limit", str(PAYLOAD_LIMIT), "--max-connections", "1024", *extra]
        self.started = time.time()
        self.proc = subprocess.Popen(args, stderr=self.log, stdout=subprocess.DEVNULL)
        self.port = None
        while time.time() < self.started + 60 and self.port is None:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", open(self.log.name).read())
            if m:
                self.port = int(m.group(1))
            elif self.proc.poll() is not None:
                break
            else:
                time.sleep(0.01)
        if self.port is None:
            raise RuntimeError("embed serve did not start: " + open(self.log.name).read())

    def request(self, path, body=None):
        data = None if body is None else body.encode() if isinstance(body, str) else body
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read()


def run_wrk(port, seconds, clients, env):
    cmd = ["wrk", "-t2", f"-c{clients}", f"-d{seconds}s", "--timeout", "10s", "-s", os.path.join(HERE, "abuse_wrk.lua"),
           f"http://127.0.0.1:{port}"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=seconds + 60)
    m = re.search(r"WRK_JSON (\{.*\})", out.stdout)
    if not m:
        raise RuntimeError("wrk failed: " + out.stdout + out.stderr)
    if out.stderr.strip():
        print(out.stderr.strip(), flush=True)
    return json.loads(m.group(1))


# ---- abusive clients: each returns (kind, status seen or None for a closed connection) ----

def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.settimeout(10)
    return s


def status_of(s):
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        return None
    m = re.match(rb"HTTP/1\.1 (\d+)", data)
    return int(m.group(1)) if m else None


def post_raw(port, body, extra_headers=""):
    s = connect(port)
    try:
        s.sendall(f"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{extra_headers}Content-Length: {len(body)}\r\n\r\n"
                  .encode() + body)
        return status_of(s)
    except OSError:
        return None
    finally:
        s.close()


def slowloris(port, stop):
    """Headers one byte at a time: the server must hang up after --read-timeout."""
    s = connect(port)
    start = time.time()
    try:
        s.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\n")
        s.settimeout(0.3)
        while not stop.is_set() and time.time() - start < READ_TIMEOUT + 10:
            try:
                s.sendall(b"X")
                if s.recv(1) == b"":
                    return "slowloris", time.time() - start
            except socket.timeout:
                continue
            except OSError:
                return "slowloris", time.time() - start
        return "slowloris", None if not stop.is_set() else -1.0
    finally:
        s.close()


def cut_body(port, stop):
    s = connect(port)
    s.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n{\"inputs\": [\"a b c")
    s.close()
    return "cut body", None


def abandon(port, stop):
    """A heavy request, then gone before the answer: its work is dropped, no one else's."""
    # truncate: 200 words are over the tiny model's 128 tokens, and without it the request would be
    # refused (413) before any work, which is not what this client is for.
    body = json.dumps({"inputs": [" ".join(["word"] * 200)] * 32, "truncate": True}).encode()
    s = connect(port)
    s.sendall(f"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    s.close()
    return "abandoned", None


def oversized_body(port, stop):
    return "body over --payload-limit", post_raw(port, b'{"inputs": "' + b"a" * (PAYLOAD_LIMIT + 10) + b'"}')


def oversized_headers(port, stop):
    return "headers over 16 KiB", post_raw(port, b'{"inputs": "a"}', "X-Filler: " + "h" * 20000 + "\r\n")


def too_many_inputs(port, stop):
    return "inputs over --max-client-batch-size", post_raw(port, json.dumps({"inputs": ["a"] * 33}).encode())


def too_many_tokens(port, stop):
    return "input over --max-input-tokens", post_raw(port, json.dumps({"inputs": " ".join(["token"] * 5000), "truncate": False}).encode())


def garbage(port, stop):
    s = connect(port)
    try:
        s.sendall(bytes(random.getrandbits(8) for _ in range(200)) + b"\r\n\r\n")
        return "garbage bytes", status_of(s)
    except OSError:
        return "garbage bytes", None
    finally:
        s.close()


def bad_json(port, stop):
    return "invalid JSON", post_raw(port, b'{"inputs": ["a", }')


ABUSE = [slowloris, cut_body, abandon, oversized_body, oversized_headers, too_many_inputs, too_many_tokens, garbage, bad_json]
# The documented answer of each refusal (docs/server.md, "Errors"); None: the connection is closed.
WANT = {"body over --payload-limit": 413, "headers over 16 KiB": 431, "inputs over --max-client-batch-size": 413,
        "input over --max-input-tokens": 413, "garbage bytes": 400, "invalid JSON": 400}


def abuser(port, index, stop, seen, lock):
    k = index
    while not stop.is_set():
        fn = ABUSE[k % len(ABUSE)]
        k += 1
        try:
            kind, got = fn(port, stop)
        except OSError as e:
            kind, got = fn.__name__, f"socket error {e}"
        with lock:
            seen.setdefault(kind, []).append(got)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("embed")
    p.add_argument("--model", default=os.path.join(ROOT, "tests/fixtures/models/tiny-bert-rank/model.gguf"))
    p.add_argument("--duration", type=int, default=5)
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--abusers", type=int, default=16)
    # Latency is a benchmark figure, not a test verdict (a timed assertion on a shared CI machine
    # measures the neighbours): checked only when asked, as in docs/benchmarks.md's 60 s run.
    p.add_argument("--p99-ratio", type=float, help="fail when the mixed p99 exceeds the clean p99 times this")
    p.add_argument("--json", help="write the figures here")
    a = p.parse_args()

    want = cli_rows(a.embed, a.model, TEXTS)
    server = Server(a.embed, a.model)
    body = json.dumps({"inputs": TEXTS})
    status, answer = server.request("/embed", body)
    check(status == 200 and json.loads(answer) == want, "the reference answer equals the CLI's vectors")
    work = tempfile.mkdtemp(prefix="embed_abuse_")
    with open(f"{work}/body.json", "w") as f:
        f.write(body)
    with open(f"{work}/expected.json", "wb") as f:
        f.write(answer)
    env = dict(os.environ, BODY=f"{work}/body.json", EXPECTED=f"{work}/expected.json")

    run_wrk(server.port, 2, a.clients, env)  # warm-up
    rss_start = rss_mib(server.proc.pid)
    clean = run_wrk(server.port, a.duration, a.clients, env)
    rss_clean = rss_mib(server.proc.pid)

    stop, lock, seen = threading.Event(), threading.Lock(), {}
    abusers = [threading.Thread(target=abuser, args=(server.port, i, stop, seen, lock)) for i in range(a.abusers)]
    for t in abusers:
        t.start()
    mixed = run_wrk(server.port, a.duration, a.clients, env)
    stop.set()
    for t in abusers:
        t.join()
    time.sleep(READ_TIMEOUT + 0.5)  # connections of the last abusers time out
    rss_end = rss_mib(server.proc.pid)

    for name, r in (("clean", clean), ("mixed", mixed)):
        e = r["errors"]
        check(r["wrong"] == 0 and r["correct"] == r["requests"] and r["requests"] > 0,
              f"{name}: {r['correct']} of {r['requests']} well-formed answers correct, {r['wrong']} wrong")
        check(e["connect"] + e["read"] + e["write"] + e["timeout"] == 0, f"{name}: no socket errors or timeouts ({e})")
    ratio = mixed["latency_us"]["p99"] / max(1, clean["latency_us"]["p99"])
    p99 = f"p99 {mixed['latency_us']['p99'] / 1000:.1f} ms mixed vs {clean['latency_us']['p99'] / 1000:.1f} ms clean (x{ratio:.2f}"
    if a.p99_ratio:
        check(ratio <= a.p99_ratio, p99 + f", at most x{a.p99_ratio})")
    else:
        print("info " + p99 + ", not checked without --p99-ratio)", flush=True)
    total = sum(len(v) for v in seen.values())
    check(total > 0, f"{total} abusive connections: " + ", ".join(f"{k} {len(v)}" for k, v in sorted(seen.items())))
    for kind, want_status in WANT.items():
        got = seen.get(kind, [])
        check(got and all(g == want_status for g in got), f"{kind}: every one answered {want_status} ({sorted(set(map(str, got)))})")
    held = [g for g in seen.get("slowloris", []) if isinstance(g, float) and g >= 0]
    check(held and max(held) < READ_TIMEOUT + 2, f"slowloris clients cut off after at most {max(held, default=0):.1f} s (--read-timeout {READ_TIMEOUT})")
    # Flat: what the abusive run adds is within the allocator's noise (8 MiB or 10%).
    check(rss_end - rss_clean <= max(8.0, 0.1 * rss_clean), f"RSS {rss_start:.0f} MiB -> {rss_clean:.0f} (clean) -> {rss_end:.0f} MiB (mixed)")
    check(server.proc.poll() is None, "the server is alive")
    _, metrics = server.request("/metrics")
    # One sample per served model (embed_requests_inside{model="..."} N): every one must be 0.
    inside = [line for line in metrics.decode().splitlines() if line.startswith("embed_requests_inside")]
    check(inside and all(line.rsplit(" ", 1)[1] == "0" for line in inside),
          f"no request is left inside (abandoned work freed): {inside}")
    status, again = server.request("/embed", body)
    check(status == 200 and again == answer, "answers after the abuse are still the reference")

    # kill -9 in the middle of load, then a new process on the same port.
    port = server.port
    def load_until_killed():
        try:
            run_wrk(port, 3, a.clients, env)
        except Exception:  # wrk's connections die with the server: its numbers are not the point here
            pass

    load = threading.Thread(target=load_until_killed)
    load.start()
    time.sleep(1)
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait()
    killed_at = time.time()
    restarted = Server(a.embed, a.model, port)
    listening = time.time() - killed_at
    status, again = restarted.request("/embed", body)
    first_answer = time.time() - killed_at
    load.join()
    check(restarted.port == port and status == 200 and again == answer,
          f"kill -9 under load, restart on the same port: listening after {listening:.2f} s, first correct answer after {first_answer:.2f} s")
    restarted.proc.terminate()
    check(restarted.proc.wait(timeout=60) == 0, "the restarted server drains and exits 0")

    figures = {"duration_s": a.duration, "clients": a.clients, "abusers": a.abusers, "model": a.model,
               "clean": clean, "mixed": mixed, "p99_ratio": ratio, "abusive_connections": {k: len(v) for k, v in seen.items()},
               "rss_mib": {"start": rss_start, "after_clean": rss_clean, "after_mixed": rss_end},
               "restart_s": {"listening": listening, "first_answer": first_answer}}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(figures, f, indent=1)
    if failures:
        sys.exit(f"abuse_test: {len(failures)} check(s) failed")
    print("abuse_test: all checks passed")


if __name__ == "__main__":
    main()
