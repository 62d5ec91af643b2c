"""What the scale-out examples (ray_embed.py, spark_embed.py) share: the corpus (the STS-B English
dev sentences committed in tests/fixtures/stsb, repeated) as a Parquet file of (id, text) and as
lines for the `embed` command, the command's own vectors and time for the same lines, and the
check that two sets of vectors are bit-identical."""

from __future__ import annotations

import csv
import pathlib
import subprocess
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = pathlib.Path(__file__).resolve().parents[2]
STSB = ROOT / "tests" / "fixtures" / "stsb" / "stsb-en-dev.csv"


def sentences() -> list[str]:
    """The distinct sentences of STS-B en dev, in file order."""
    seen: dict[str, None] = {}
    with STSB.open(encoding="utf-8", newline="") as f:
        for row in csv.reader(f):
            for text in row[:2]:
                seen.setdefault(text.strip(), None)
    return [t for t in seen if t]


def write_corpus(folder: pathlib.Path, repeat: int) -> tuple[pathlib.Path, pathlib.Path, int]:
    """corpus.parquet (id int64, text string) and corpus.txt (the same texts, one per line)."""
    texts = sentences() * repeat
    folder.mkdir(parents=True, exist_ok=True)
    parquet, lines = folder / "corpus.parquet", folder / "corpus.txt"
    pq.write_table(pa.table({"id": pa.array(range(len(texts)), pa.int64()), "text": texts}), parquet, row_group_size=4096)
    lines.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
    return parquet, lines, len(texts)


def read_vectors(path: pathlib.Path, n: int) -> np.ndarray:
    """The `embedding` column of a Parquet file or folder as [n, dim] float32, in id order."""
    table = pq.read_table(path, columns=["id", "embedding"])
    ids = table.column("id").to_numpy()
    assert len(ids) == n and np.array_equal(np.sort(ids), np.arange(n)), "every id exactly once"
    column = table.column("embedding").combine_chunks()
    dim = column.type.list_size if pa.types.is_fixed_size_list(column.type) else len(column[0])
    rows = column.flatten().to_numpy().astype(np.float32, copy=False).reshape(-1, dim)
    return rows[np.argsort(ids)]


def cli_vectors(embed_bin: str, model: str, lines: pathlib.Path, threads: int) -> tuple[np.ndarray, float]:
    """The `embed` command's vectors for the lines, and its wall time (model load included)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "rows.npy"
        start = time.perf_counter()
        subprocess.run([embed_bin, model, str(lines), "-f", "npy", "-o", str(out), "--threads", str(threads)], check=True)
        seconds = time.perf_counter() - start
        return np.load(out), seconds


def check_same(name: str, got: np.ndarray, want: np.ndarray) -> None:
    if got.shape != want.shape or got.tobytes() != want.tobytes():
        diff = int(np.sum(got != want)) if got.shape == want.shape else -1
        raise SystemExit(f"{name}: vectors differ from the embed command's ({got.shape} vs {want.shape}, {diff} values differ)")
    print(f"{name}: {got.shape[0]} vectors bit-identical to the embed command's")
