# Shared fixtures of the Python package's tests (tools/python_test.sh runs them against the built
# wheel): the committed tiny models, MiniLM from the cache (EMBED_MINILM_GGUF_F32), and the
# `embed` command (EMBED_BIN) whose output the package must reproduce bit for bit.
import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "models"

# Texts with accents, CJK, emoji and different lengths (one batch mixes them).
TEXTS = [
    "A man is playing a guitar.",
    "Someone is playing an acoustic guitar on a stage, and the crowd sings along with every word.",
    "Café crème, naïve résumé.",
    "東京は日本の首都です。",
    "emoji 🎸🎶 at the end",
    "a",
    "The quick brown fox jumps over the lazy dog. " * 3,
]


def tiny(name: str) -> str:
    return str(FIXTURES / name / "model.gguf")


@pytest.fixture(scope="session")
def embed_bin() -> str:
    path = os.environ.get("EMBED_BIN", str(ROOT / "build" / "tools" / "embed"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"the embed command is needed to compare against ({path}); set EMBED_BIN")
    return path


@pytest.fixture(scope="session")
def minilm() -> str:
    path = os.environ.get("EMBED_MINILM_GGUF_F32", "")
    if not path:
        if os.environ.get("CI"):
            pytest.fail("EMBED_MINILM_GGUF_F32 is not set (tools/python_test.sh sets it)")
        pytest.skip("EMBED_MINILM_GGUF_F32 is not set (tools/models.sh minilm-gguf f32)")
    return path


class Cli:
    """The `embed` command on a file of lines, its outputs parsed."""

    def __init__(self, binary: str, tmp: pathlib.Path):
        self.binary = binary
        self.tmp = tmp

    def lines_file(self, lines, name="input.txt") -> str:
        path = self.tmp / name
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return str(path)

    def run(self, *args) -> str:
        done = subprocess.run([self.binary, *args], capture_output=True, text=True)
        assert done.returncode == 0, f"embed {' '.join(args)} failed: {done.stderr}"
        return done.stdout

    def embed(self, model: str, texts, *flags) -> np.ndarray:
        out = self.tmp / "rows.npy"
        self.run(model, self.lines_file(texts), "-f", "npy", "-o", str(out), "--threads", "2", *flags)
        return np.load(out)

    def rerank(self, model: str, query: str, docs, *flags):
        stdout = self.run("rerank", model, "--query", query, self.lines_file(docs, "docs.txt"), "--format", "jsonl", *flags)
        rows = [json.loads(line) for line in stdout.splitlines()]
        return [(r["index"], np.float32(r["relevance_score"])) for r in rows]

    def tokenize(self, model: str, texts, *flags):
        return [[int(t) for t in line.split()] for line in self.run("tokenize", model, self.lines_file(texts), *flags).splitlines()]


@pytest.fixture
def cli(embed_bin, tmp_path) -> Cli:
    return Cli(embed_bin, tmp_path)


def same_bits(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape, f"{a.dtype}{a.shape} vs {b.dtype}{b.shape}"
    if a.tobytes() != b.tobytes():
        unsigned = np.dtype(f"u{a.dtype.itemsize}")
        bad = np.argwhere(a.view(unsigned) != b.view(unsigned))
        pytest.fail(f"{len(bad)} values differ, first at {tuple(bad[0])}: {a[tuple(bad[0])]!r} vs {b[tuple(bad[0])]!r}")
