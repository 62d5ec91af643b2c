# Validates every fixture folder under tests/fixtures/models/ against the format contract in
# docs/reference-data.md: shapes agree with cases.json, values are finite float32, files stay
# under the size limits. It reads the fixtures only; it never regenerates them.
import json
import sys

import numpy as np

import common

TOTAL_LIMIT = 15 * 1024 * 1024


def fail(folder, msg):
    raise SystemExit(f"check_fixtures: {folder.name}: {msg}")


def load_f32(folder, name):
    arr = np.load(folder / name, allow_pickle=False)
    if arr.dtype != np.float32:
        fail(folder, f"{name} has dtype {arr.dtype}, expected float32")
    if not np.all(np.isfinite(arr)):
        fail(folder, f"{name} has non-finite values")
    return arr


def check_cases(folder, doc):
    for key in ("model", "source", "d_model", "cases"):
        if key not in doc:
            fail(folder, f"cases.json lacks {key!r}")
    cases = doc["cases"]
    if len(cases) < 50:
        fail(folder, f"{len(cases)} cases, at least 50 required")
    for i, case in enumerate(cases):
        if not isinstance(case.get("text"), str) or not case.get("ids"):
            fail(folder, f"case {i} lacks text or ids")
        if "type_ids" in case and len(case["type_ids"]) != len(case["ids"]):
            fail(folder, f"case {i}: {len(case['type_ids'])} type_ids for {len(case['ids'])} ids")
    return cases


def check_arrays(folder, doc, cases):
    n, d = len(cases), doc["d_model"]
    for path in sorted(folder.glob("*.npy")):
        arr = load_f32(folder, path.name)
        name = path.name
        if name == "hidden.npy":
            want = (sum(len(c["ids"]) for c in cases), d)
        elif name.startswith("llamacpp_"):
            m = len(doc["llamacpp"]["cases"])
            want = (m,) if "scores" in name else (m, d)
        elif name.startswith("scores_"):
            want = (n,)
        elif name == "layer_last.npy":  # make_kv_embedding.py: layer-major, one row per layer and case
            want = (doc["config"]["num_hidden_layers"] * n, d)
        elif name == "stsb_cosines.npy":
            want = (json.loads((folder / "stsb.json").read_text())["n_pairs"],)
        else:
            want = (n, d)
        if arr.shape != want:
            fail(folder, f"{name} has shape {arr.shape}, expected {want}")


def main():
    total = 0
    folders = sorted(p for p in common.FIXTURES.iterdir() if p.is_dir())
    for folder in folders:
        doc = json.loads((folder / "cases.json").read_text(encoding="utf-8"))
        cases = check_cases(folder, doc)
        check_arrays(folder, doc, cases)
        for path in folder.iterdir():
            common.check_size(path)
            total += path.stat().st_size
        common.log(f"{folder.name}: {len(cases)} cases ok")
    if total > TOTAL_LIMIT:
        raise SystemExit(f"check_fixtures: fixtures total {total} bytes, over {TOTAL_LIMIT}")
    common.log(f"{len(folders)} fixture folders, {total} bytes in all")


if __name__ == "__main__":
    sys.exit(main())
