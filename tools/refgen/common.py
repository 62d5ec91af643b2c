# Shared plumbing for the reference generators: cache and fixture paths, deterministic torch
# settings, package versions, and the writer for the fixture format documented in
# docs/reference-data.md. It holds no model logic.
import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "models"
CACHE = Path(os.environ.get("EMBED_CACHE", Path.home() / ".cache" / "embed"))
WORK = CACHE / "refgen"  # HF folders and raw converter output; never committed

MAX_FILE_BYTES = 2 * 1024 * 1024


def llama_cpp_src():
    """Folder of llama.cpp's sources (converter, gguf-py) from the pinned llama-cpp-python sdist."""
    script = REPO_ROOT / "tools" / "refgen" / "fetch_llama_cpp_src.sh"
    return subprocess.run([str(script)], check=True, capture_output=True, text=True).stdout.strip()


def deterministic_torch(threads=1):
    """Single-threaded deterministic fp32 CPU torch: reruns give identical bytes."""
    import torch
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    torch.set_default_dtype(torch.float32)
    return torch


def package_versions(names=("torch", "transformers", "sentence-transformers", "tokenizers",
                            "sentencepiece", "numpy", "llama-cpp-python")):
    """Versions of those installed in this virtualenv (the bench one has no torch)."""
    out = {}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            pass
    return out


def source_line(script, extra=""):
    vers = ", ".join(f"{k}=={v}" for k, v in package_versions().items())
    return f"tools/refgen/{script} with {vers}" + (f"; {extra}" if extra else "")


def save_npy(path, array):
    array = np.ascontiguousarray(np.asarray(array, dtype=np.float32))
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{path}: non-finite values in reference data")
    np.save(path, array, allow_pickle=False)
    check_size(path)


def check_size(path):
    size = Path(path).stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"{path}: {size} bytes is over the {MAX_FILE_BYTES}-byte fixture limit")


def write_cases(out_dir, model, source, d_model, cases, extra=None):
    """cases.json: {"model", "source", "d_model", "cases": [{"text", "ids", ...}], ...extra}."""
    doc = {"model": model, "source": source, "d_model": int(d_model)}
    doc.update(extra or {})
    doc["cases"] = cases
    path = Path(out_dir) / "cases.json"
    with path.open("w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    check_size(path)


def cosine_rows(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    num = (a * b).sum(axis=-1)
    den = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return num / den


def agreement(ref, other):
    """Max abs difference and min row cosine between two [n, d] arrays (1-D arrays: scalars)."""
    ref = np.asarray(ref, dtype=np.float64)
    other = np.asarray(other, dtype=np.float64)
    out = {"max_abs_diff": float(np.max(np.abs(ref - other)))}
    if ref.ndim == 2:
        out["min_cosine"] = float(np.min(cosine_rows(ref, other)))
    return out


def log(*args):
    print(*args, file=sys.stderr, flush=True)
