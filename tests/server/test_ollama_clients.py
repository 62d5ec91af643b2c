#!/usr/bin/env python3
"""The official `ollama` Python client and LangChain's `OllamaEmbeddings` (langchain-ollama), both
pinned in tools/server/requirements.txt, unchanged against `embed serve`: every vector equals the
`embed` CLI's for the same texts bit for bit (float32), the listings describe the served GGUF (its
sha256 from hashlib), and errors reach the client as Ollama's.

    $EMBED_SERVER_PYTHON tests/server/test_ollama_clients.py MODEL.gguf   (EMBED_BIN: the embed binary)

Run by ctest (label server) with the virtualenv of tools/server/setup_venv.sh; tools/test.sh
creates it and passes its interpreter as EMBED_SERVER_PYTHON."""
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

# ctest runs this file with the system Python; the clients live in the server clients' virtualenv.
if os.environ.get("EMBED_IN_SERVER_VENV") != "1":
    python = os.environ.get("EMBED_SERVER_PYTHON", os.path.expanduser("~/.cache/embed/venv-server/bin/python"))
    if not os.access(python, os.X_OK):
        raise SystemExit(f"the server clients' virtualenv is missing ({python}): run tools/server/setup_venv.sh (tools/test.sh does)")
    os.environ["EMBED_IN_SERVER_VENV"] = "1"
    os.execv(python, [python, os.path.abspath(__file__), *sys.argv[1:]])

import numpy as np  # noqa: E402
import ollama  # noqa: E402
from langchain_ollama import OllamaEmbeddings  # noqa: E402

EMBED = os.environ.get("EMBED_BIN", "build/tools/embed")
MODEL = sys.argv.pop(1) if len(sys.argv) > 1 else "tests/fixtures/models/tiny-bert-rank/model.gguf"
TEXTS = ["A man is playing a guitar.", "Someone plays the guitar!", "The stock market fell 3% today.",
         "Ünïcödé and emoji 🎸 too", "short"]


def cli_vectors(texts, *flags):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in texts))
    try:
        out = subprocess.run([EMBED, MODEL, f.name, "-f", "jsonl", "-t", "2", *flags], check=True, capture_output=True,
                             text=True).stdout
    finally:
        os.unlink(f.name)
    return [np.array(json.loads(line)["embedding"], dtype=np.float32) for line in out.splitlines()]


def same(a, b):
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


class OllamaClients(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = subprocess.Popen([EMBED, "serve", MODEL, "-p", "0", "-t", "2"], stderr=subprocess.PIPE, text=True)
        for line in cls.server.stderr:
            m = re.search(r"listening on (http://[0-9.]+:\d+)", line)
            if m:
                cls.url = m.group(1)
                break
        else:
            raise RuntimeError("embed serve did not start")
        os.environ["no_proxy"] = "127.0.0.1"  # a proxy in the environment must not intercept loopback
        cls.client = ollama.Client(host=cls.url)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.wait(timeout=30)
        cls.server.stderr.close()

    def test_embed(self):
        want = cli_vectors(TEXTS)
        r = self.client.embed(model="model", input=TEXTS)
        self.assertEqual(r.model, "model")
        self.assertEqual(len(r.embeddings), len(TEXTS))
        for got, w in zip(r.embeddings, want):
            self.assertTrue(same(got, w))
        self.assertGreater(r.prompt_eval_count, len(TEXTS))
        self.assertGreater(r.total_duration, 0)
        one = self.client.embed(model="model:latest", input=TEXTS[3], truncate=True, keep_alive="10m", options={"num_ctx": 512})
        self.assertTrue(same(one.embeddings[0], want[3]))
        cut = self.client.embed(model="model", input=TEXTS[:2], dimensions=8)
        for got, w in zip(cut.embeddings, cli_vectors(TEXTS[:2], "--dims", "8")):
            self.assertTrue(same(got, w))

    def test_embeddings_legacy(self):
        want = cli_vectors([TEXTS[2]], "--normalize", "-1")[0]
        self.assertTrue(same(self.client.embeddings(model="model", prompt=TEXTS[2]).embedding, want))

    def test_listings(self):
        with open(MODEL, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        models = self.client.list().models
        self.assertEqual(len(models), 1)
        self.assertEqual(models[0].model, "model:latest")
        self.assertEqual(models[0].digest, digest)
        self.assertEqual(models[0].size, os.path.getsize(MODEL))
        self.assertEqual(models[0].details.format, "gguf")
        self.assertIsNotNone(models[0].modified_at)
        show = self.client.show("model")
        self.assertEqual(show.capabilities, ["embedding"])
        self.assertEqual(show.details.family, show.modelinfo["general.architecture"])
        running = self.client.ps().models
        self.assertEqual([m.model for m in running], ["model:latest"])
        self.assertEqual(running[0].digest, digest)

    def test_errors(self):
        with self.assertRaises(ollama.ResponseError) as e:
            self.client.embed(model="nomic-embed-text", input="a")
        self.assertEqual(e.exception.status_code, 404)
        self.assertIn("model 'nomic-embed-text' not found", e.exception.error)
        with self.assertRaises(ollama.ResponseError) as e:
            self.client.embed(model="model", input=["a", "word " * 600], truncate=False)
        self.assertEqual(e.exception.status_code, 400)
        self.assertIn("input[1]", e.exception.error)

    def test_langchain(self):
        want = cli_vectors(TEXTS)
        for validate in (False, True):  # True: the model is looked up in /api/tags first
            emb = OllamaEmbeddings(model="model", base_url=self.url, validate_model_on_init=validate)
            docs = emb.embed_documents(TEXTS)
            self.assertEqual(len(docs), len(TEXTS))
            for got, w in zip(docs, want):
                self.assertTrue(same(got, w))
            self.assertTrue(same(emb.embed_query(TEXTS[1]), want[1]))
        with self.assertRaises(ollama.ResponseError):
            OllamaEmbeddings(model="not-served", base_url=self.url).embed_query("a")
        with self.assertRaisesRegex(ValueError, "Available local models: model:latest"):
            OllamaEmbeddings(model="not-served", base_url=self.url, validate_model_on_init=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
