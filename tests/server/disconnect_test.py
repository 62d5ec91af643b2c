#!/usr/bin/env python3
"""Clients that go away mid-request or mid-response cost `embed serve` nothing but their own work
(issue #28 §3).

Well-formed keep-alive clients POST /embed over and over and check every answer against the `embed`
CLI's vectors, while cutting clients, in rounds, open many requests with large answers (/embed_all:
per-token vectors of 64 inputs of 128 tokens, 5.8 MB each: more than a socket's send buffer) and
  - close the socket right after sending the request, before the answer (abandoned);
  - read half of the answer through a small receive buffer, then close (cut mid-response);
  - send the headers and half of the body, then close (cut mid-request).
Checked: every well-formed answer correct, the scheduler empty afterwards (embed_requests_inside
and embed_queue_depth 0 for every model, embed_connections back to the one asking), fewer tokens
computed than accepted (queued work of abandoned requests dropped, not computed), RSS flat (the
last round within the allocator's noise of the highest of the first half), the process alive, and
answers afterwards still the reference. Stdlib only.

    disconnect_test.py EMBED_BIN [--model M] [--rounds 4] [--cutters 24] [--clients 8]
"""
import argparse, http.client, json, os, re, socket, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abuse_test  # noqa: E402  (the server process, the CLI's rows, RSS, check)
from abuse_test import ROOT, TEXTS, READ_TIMEOUT, Server, check, cli_rows, rss_mib  # noqa: E402

# 64 inputs cut to the tiny model's 128 tokens: /embed_all answers 64 x 128 vectors of 64 floats,
# about 5.8 MB, more than the kernel's largest socket send buffer (tcp_wmem's maximum, 4 MiB here),
# so a client that stops reading half-way leaves the server in the middle of writing.
INPUTS = 64
LARGE = json.dumps({"inputs": [" ".join(["word%d" % (i % 50) for i in range(200)])] * INPUTS, "truncate": True}).encode()


def send_request(s, path, body, cut_body=False):
    head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    s.sendall(head + (body[: len(body) // 2] if cut_body else body))


def connect(port, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:  # set before connecting: the window the server may fill before it must wait for us
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(30)
    s.connect(("127.0.0.1", port))
    return s


def abandon(port):
    s = connect(port)
    send_request(s, "/embed_all", LARGE)
    s.close()
    return "abandoned before the answer"


def half_read(port):
    """Reads the status line, the headers and half of the body, then hangs up."""
    s = connect(port, rcvbuf=4096)
    try:
        send_request(s, "/embed_all", LARGE)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                return "half-read: closed before the headers"
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        m = re.search(rb"Content-Length: (\d+)", head, re.I)
        if not head.startswith(b"HTTP/1.1 200") or not m:
            return "half-read: not a 200 with a length: " + head[:80].decode(errors="replace")
        length = int(m.group(1))
        while len(body) < length // 2:
            chunk = s.recv(4096)
            if not chunk:
                return "half-read: closed early"
            body += chunk
        return "cut mid-response"
    finally:
        s.close()


def cut_request(port):
    s = connect(port)
    send_request(s, "/embed_all", LARGE, cut_body=True)
    s.close()
    return "cut mid-request"


CUTS = [abandon, half_read, cut_request]


def well_formed(port, want, stop, tally, lock):
    """Keep-alive /embed requests until stopped; each answer compared with the CLI's vectors."""
    body = json.dumps({"inputs": TEXTS})
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while not stop.is_set():
        try:
            conn.request("POST", "/embed", body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
            ok = r.status == 200 and json.loads(data) == want
            key = "correct" if ok else f"wrong ({r.status}: {data[:120]!r})"
        except (OSError, http.client.HTTPException) as e:
            key = f"error ({e!r})"
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        with lock:
            tally[key] = tally.get(key, 0) + 1
    conn.close()


def metrics(server):
    _, text = server.request("/metrics")
    out = {}
    for line in text.decode().splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def total(m, prefix):
    return sum(v for k, v in m.items() if k.startswith(prefix))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("embed")
    p.add_argument("--model", default=os.path.join(ROOT, "tests/fixtures/models/tiny-bert-rank/model.gguf"))
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--cutters", type=int, default=24, help="cutting clients per round, all at once")
    p.add_argument("--clients", type=int, default=8, help="well-formed clients")
    a = p.parse_args()

    want = cli_rows(a.embed, a.model, TEXTS)
    server = Server(a.embed, a.model, extra=("--max-client-batch-size", str(INPUTS)))
    status, answer = server.request("/embed", json.dumps({"inputs": TEXTS}))
    check(status == 200 and json.loads(answer) == want, "the reference answer equals the CLI's vectors")
    status, whole = server.request("/embed_all", LARGE)
    with open("/proc/sys/net/ipv4/tcp_wmem") as f:
        send_buffer_max = int(f.read().split()[2])
    check(status == 200 and len(whole) > send_buffer_max,
          f"a large answer: /embed_all of {INPUTS} x 128 tokens is {len(whole) / 1e6:.1f} MB (socket send buffers: at most {send_buffer_max / 1e6:.1f} MB)")

    stop, lock, tally, seen = threading.Event(), threading.Lock(), {}, {}
    clients = [threading.Thread(target=well_formed, args=(server.port, want, stop, tally, lock)) for _ in range(a.clients)]
    for t in clients:
        t.start()
    rss_rounds = []
    for r in range(a.rounds):
        def cutter(i):
            kind = CUTS[i % len(CUTS)](server.port)
            with lock:
                seen[kind] = seen.get(kind, 0) + 1
        cutters = [threading.Thread(target=cutter, args=(i,)) for i in range(a.cutters)]
        for t in cutters:
            t.start()
        for t in cutters:
            t.join()
        time.sleep(0.5)
        rss_rounds.append(rss_mib(server.proc.pid))
    stop.set()
    for t in clients:
        t.join()
    # Connections cut mid-request wait out --read-timeout; abandoned work leaves the queue.
    deadline = time.time() + READ_TIMEOUT + 10
    while time.time() < deadline:
        m = metrics(server)
        if total(m, "embed_requests_inside") == 0 and total(m, "embed_queue_depth") == 0 and m.get("embed_connections", 0) <= 1:
            break
        time.sleep(0.1)
    rss_end = rss_mib(server.proc.pid)

    well = sum(tally.values())
    check(well > 0 and tally.get("correct", 0) == well, f"well-formed clients: {tally.get('correct', 0)} of {well} answers correct ({tally})")
    want_each = a.rounds * a.cutters // len(CUTS)
    check(all(seen.get(k, 0) >= want_each for k in ("abandoned before the answer", "cut mid-response", "cut mid-request")),
          f"cutting clients: {seen}")
    inside = {k: v for k, v in m.items() if k.startswith(("embed_requests_inside", "embed_queue_depth", "embed_connections"))}
    check(total(m, "embed_requests_inside") == 0 and total(m, "embed_queue_depth") == 0 and m.get("embed_connections") == 1,
          f"nothing left inside: {inside}")
    accepted, computed = total(m, "embed_tokens_total"), total(m, "embed_batch_tokens_sum")
    check(computed < accepted, f"abandoned work dropped: {computed:.0f} tokens computed of {accepted:.0f} accepted")
    # Flat: the allocator's high-water mark is reached in the first round or two (megabyte answers
    # built at once), so the last round is compared with the highest of the first half; a leak of the
    # cut clients' answers (16 of 5.8 MB per round) would add over 80 MiB a round.
    first_half = max(rss_rounds[: max(1, a.rounds // 2)])
    check(rss_end - first_half <= max(8.0, 0.1 * first_half),
          "RSS flat: " + ", ".join(f"{x:.0f}" for x in rss_rounds) + f" MiB after each round, {rss_end:.0f} MiB at the end")
    check(server.proc.poll() is None, "the server is alive")
    status, again = server.request("/embed", json.dumps({"inputs": TEXTS}))
    check(status == 200 and json.loads(again) == want, "answers afterwards are still the reference")
    status, whole_again = server.request("/embed_all", LARGE)
    check(status == 200 and whole_again == whole, "a large answer afterwards is the same bytes")
    server.proc.terminate()
    check(server.proc.wait(timeout=60) == 0, "the server drains and exits 0")
    if abuse_test.failures:
        sys.exit(f"disconnect_test: {len(abuse_test.failures)} check(s) failed")
    print("disconnect_test: all checks passed")


if __name__ == "__main__":
    main()
