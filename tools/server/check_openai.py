#!/usr/bin/env python3
"""Drives a running `embed serve` with the official openai client (encoding_format float and
base64, dimensions) and with plain HTTP in TEI's and llama.cpp's shapes, and checks that every
vector equals the `embed` CLI's for the same text and options, bit for bit (float32).

    tools/server/check_openai.py MODEL.gguf            # starts its own server on a free port
    tools/server/check_openai.py MODEL.gguf --url http://127.0.0.1:3000
Run it with the venv of tools/server/setup_venv.sh. Exit 0 when every check passed."""
import argparse, base64, json, os, re, subprocess, sys, tempfile, time

import numpy as np
import requests
from openai import OpenAI

TEXTS = ["A man is playing a guitar.", "Someone plays the guitar!", "The stock market fell 3% today.",
         "Ünïcödé and emoji 🎸 too", "short", "What is the capital of France? " * 20]


def cli_vectors(embed, model, texts, flags):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in texts))
    out = subprocess.run([embed, model, f.name, "-f", "jsonl", "--truncate", *flags], check=True, capture_output=True, text=True).stdout
    os.unlink(f.name)
    return [np.array(json.loads(line)["embedding"], dtype=np.float32) for line in out.splitlines()]


def same(a, b):
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def start_server(embed, model):
    proc = subprocess.Popen([embed, "serve", model, "-p", "0", "--auto-truncate"], stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        m = re.search(r"listening on (http://[0-9.]+:\d+)", line)
        if m:
            return proc, m.group(1)
    raise SystemExit("embed serve did not start")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--url", help="a server already running (started with --auto-truncate)")
    ap.add_argument("--embed", default=os.path.join(os.path.dirname(__file__), "../../build/tools/embed"))
    a = ap.parse_args()
    proc, url = (None, a.url) if a.url else start_server(a.embed, a.model)
    failures, checks = [], 0

    def check(name, got, want):
        nonlocal checks
        checks += 1
        if not same(got, want):
            failures.append(name)

    try:
        client = OpenAI(base_url=url + "/v1", api_key="unused")
        full = cli_vectors(a.embed, a.model, TEXTS, [])
        r = client.embeddings.create(model="m", input=TEXTS)
        for i, d in enumerate(r.data):
            check(f"openai float [{i}]", d.embedding, full[i])
        # The client asks for base64 by default when numpy is there; ask explicitly too.
        raw = client.embeddings.with_raw_response.create(model="m", input=TEXTS, encoding_format="base64")
        for i, d in enumerate(json.loads(raw.text)["data"]):
            check(f"openai base64 [{i}]", np.frombuffer(base64.b64decode(d["embedding"]), dtype="<f4"), full[i])
        dims = cli_vectors(a.embed, a.model, TEXTS, ["--dims", "64"])
        for i, d in enumerate(client.embeddings.create(model="m", input=TEXTS, dimensions=64).data):
            check(f"openai dimensions=64 [{i}]", d.embedding, dims[i])
        # TEI and llama.cpp shapes over plain HTTP.
        tei = requests.post(url + "/embed", json={"inputs": TEXTS}).json()
        for i, v in enumerate(tei):
            check(f"TEI /embed [{i}]", v, full[i])
        raw_cli = cli_vectors(a.embed, a.model, TEXTS, ["--normalize", "-1"])
        for i, v in enumerate(requests.post(url + "/embed", json={"inputs": TEXTS, "normalize": False}).json()):
            check(f"TEI /embed normalize=false [{i}]", v, raw_cli[i])
        for i, v in enumerate(requests.post(url + "/embedding", json={"content": TEXTS}).json()):
            check(f"llama.cpp /embedding [{i}]", v["embedding"][0], full[i])
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=30)
    for f in failures:
        print("MISMATCH", f)
    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures or checks == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
