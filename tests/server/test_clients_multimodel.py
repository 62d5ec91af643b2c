#!/usr/bin/env python3
"""The official `openai` and `ollama` clients (pinned in tools/server/requirements.txt) and plain
HTTP in TEI's, llama.cpp's and Jina's shapes, unchanged against one `embed serve` serving two
embedding models and a reranker (--model NAME=PATH): each request's answer equals the `embed` CLI's
for the model it names, bit for bit (float32); TEI's routes and requests without a model get the
first; an unknown model reaches each client as its 404.

    $EMBED_SERVER_PYTHON tests/server/test_clients_multimodel.py FIXTURES_MODELS_DIR   (EMBED_BIN: the embed binary)

Run by ctest (label server) with the virtualenv of tools/server/setup_venv.sh, as test_ollama_clients.py."""
import base64
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

if os.environ.get("EMBED_IN_SERVER_VENV") != "1":
    python = os.environ.get("EMBED_SERVER_PYTHON", os.path.expanduser("~/.cache/embed/venv-server/bin/python"))
    if not os.access(python, os.X_OK):
        raise SystemExit(f"the server clients' virtualenv is missing ({python}): run tools/server/setup_venv.sh (tools/test.sh does)")
    os.environ["EMBED_IN_SERVER_VENV"] = "1"
    os.execv(python, [python, os.path.abspath(__file__), *sys.argv[1:]])

import numpy as np  # noqa: E402
import ollama  # noqa: E402
import openai  # noqa: E402
import requests  # noqa: E402

EMBED = os.environ.get("EMBED_BIN", "build/tools/embed")
MODELS_DIR = sys.argv.pop(1) if len(sys.argv) > 1 else "tests/fixtures/models"
MODELS = {"bert": f"{MODELS_DIR}/tiny-bert-rank/model.gguf", "qwen": f"{MODELS_DIR}/tiny-qwen3-embed/model.gguf",
          "rerank": f"{MODELS_DIR}/tiny-qwen3-rerank/model.gguf"}
TEXTS = ["A man is playing a guitar.", "Someone plays the guitar!", "The stock market fell 3% today.", "short"]


def lines_file(texts):
    f = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8")
    f.write("".join(t + "\n" for t in texts))
    f.close()
    return f.name


def cli_vectors(model):
    path = lines_file(TEXTS)
    try:
        out = subprocess.run([EMBED, MODELS[model], path, "-f", "jsonl", "-t", "2"], check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(path)
    return [np.array(json.loads(line)["embedding"], dtype=np.float32) for line in out.splitlines()]


def same(a, b):
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


class TwoModels(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        args = [a for name, path in MODELS.items() for a in ("--model", f"{name}={path}")]
        cls.server = subprocess.Popen([EMBED, "serve", *args, "-p", "0", "-t", "2"], stderr=subprocess.PIPE, text=True)
        for line in cls.server.stderr:
            m = re.search(r"listening on (http://[0-9.]+:\d+)", line)
            if m:
                cls.url = m.group(1)
                break
        else:
            raise RuntimeError("embed serve did not start")
        os.environ["no_proxy"] = "127.0.0.1"
        cls.want = {m: cli_vectors(m) for m in ("bert", "qwen")}
        assert not all(same(a, b) for a, b in zip(cls.want["bert"], cls.want["qwen"])), "the two models must differ"

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.wait(timeout=30)
        cls.server.stderr.close()

    def test_openai(self):
        client = openai.OpenAI(base_url=self.url + "/v1", api_key="unused")
        for model in ("qwen", "bert"):
            for encoding in ("float", "base64"):
                r = client.embeddings.create(model=model, input=TEXTS, encoding_format=encoding)
                self.assertEqual(r.model, model)
                for got, want in zip(r.data, self.want[model]):
                    # Asked for explicitly, base64 comes back as the string: little-endian float32 bytes.
                    v = np.frombuffer(base64.b64decode(got.embedding), dtype="<f4") if encoding == "base64" else got.embedding
                    self.assertTrue(same(v, want), (model, encoding))
        self.assertEqual([m.id for m in client.models.list()], ["bert", "qwen", "rerank"])
        # Errors in OpenAI's shape {"error": {"message", "type", "param", "code"}}: the client raises
        # the class of the status, with the server's message, type, param and code.
        with self.assertRaises(openai.NotFoundError) as e:
            client.embeddings.create(model="nope", input=["a"])
        self.assertIn("'bert', 'qwen', 'rerank'", e.exception.body["message"])
        self.assertEqual((e.exception.type, e.exception.param, e.exception.code), ("not_found_error", "model", "not_found"))
        self.assertIn("'bert', 'qwen', 'rerank'", e.exception.message)
        with self.assertRaises(openai.BadRequestError) as e:  # 400: an empty input
            client.embeddings.create(model="bert", input=["a", ""])
        self.assertEqual(e.exception.body["message"], "field 'input': input 1 is an empty string")
        self.assertEqual((e.exception.type, e.exception.param, e.exception.code), ("invalid_request_error", "input", "empty"))
        with self.assertRaises(openai.UnprocessableEntityError) as e:  # 422: a value of the wrong type
            client.embeddings.create(model="bert", input="a", extra_body={"user": 5})
        self.assertEqual(e.exception.body["message"], "field 'user' must be a string")
        self.assertEqual((e.exception.type, e.exception.param, e.exception.code), ("invalid_request_error", "user", "validation"))
        with self.assertRaises(openai.APIStatusError) as e:  # 413: more inputs than --max-client-batch-size
            client.embeddings.create(model="bert", input=["a"] * 33)
        self.assertEqual(e.exception.status_code, 413)
        self.assertIn("more than the server's limit of 32", e.exception.body["message"])

    def test_ollama(self):
        client = ollama.Client(host=self.url)
        for model in ("qwen", "bert:latest"):
            r = client.embed(model=model, input=TEXTS)
            for got, want in zip(r.embeddings, self.want[model.split(":")[0]]):
                self.assertTrue(same(got, want), model)
        self.assertEqual([m.model for m in client.list().models], ["bert:latest", "qwen:latest", "rerank:latest"])
        with self.assertRaises(ollama.ResponseError) as e:
            client.embed(model="nope", input="a")
        self.assertEqual(e.exception.status_code, 404)

    def test_tei_llama_jina(self):
        # TEI's /embed: the first model, whatever the body says.
        for body in ({"inputs": TEXTS}, {"inputs": TEXTS, "model": "qwen"}):
            got = requests.post(self.url + "/embed", json=body, timeout=30).json()
            self.assertTrue(all(same(g, w) for g, w in zip(got, self.want["bert"])))
        # llama.cpp's /embedding: by model.
        got = requests.post(self.url + "/embedding", json={"content": TEXTS, "model": "qwen"}, timeout=30).json()
        self.assertTrue(all(same(g["embedding"][0], w) for g, w in zip(got, self.want["qwen"])))
        # Jina's /v1/rerank: by model, the CLI's scores.
        docs = ["The cat sat on the mat.", "Stocks fell sharply."]
        path = lines_file(docs)
        try:
            out = subprocess.run([EMBED, "rerank", MODELS["rerank"], path, "--query", "Where is the cat?", "-f", "jsonl", "-t", "2"],
                                 check=True, capture_output=True, text=True).stdout
        finally:
            os.unlink(path)
        want = {json.loads(line)["index"]: json.loads(line)["relevance_score"] for line in out.splitlines()}
        r = requests.post(self.url + "/v1/rerank", json={"model": "rerank", "query": "Where is the cat?", "documents": docs}, timeout=30).json()
        self.assertEqual(r["model"], "rerank")
        self.assertEqual({x["index"]: np.float32(x["relevance_score"]) for x in r["results"]}, {i: np.float32(s) for i, s in want.items()})


if __name__ == "__main__":
    unittest.main()
