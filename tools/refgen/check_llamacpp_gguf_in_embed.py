#!/usr/bin/env python3
"""The tiny folders converted by llama.cpp's own converter (convert_reference.py's driver, its
SentencePiece copies and hooks), then run by `embed` (the CLI, f32 file, each variant's prompt
written into the text, no model prompt): the vectors against
tests/convert/fixtures/vectors/<case>.json (sentence-transformers, or the family's PyTorch
reference). Prints one line per case and variant for docs/convert.md.

With --write-fixtures it also writes llama.cpp's f16 files of FIXTURE_CASES to
tests/convert/fixtures/llama-cpp/<case>-f16.gguf, which tests/convert/convert_vectors_test.cpp loads
(CI has neither llama.cpp nor torch). The committed test of the tensor bytes and keys is
tests/convert/convert_reference_test.cpp (embed convert writes llama.cpp's tensors byte for byte).
Usage:  $(tools/refgen/setup_venv.sh) tools/refgen/check_llamacpp_gguf_in_embed.py [--embed build/tools/embed] [--write-fixtures]
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import convert_reference as cr  # noqa: E402

CASES = ("xlmr-tiny", "bge-m3-tiny", "qwen2-bidir-tiny", "jina-bert-v2-tiny", "nomic-bert-tiny", "modern-bert-tiny",
         "modern-bert-cls-tiny", "t5-gated-tiny", "t5-gtr-tiny")
# The issue #25 families llama.cpp converts, committed as llama.cpp's f16 files (t5-gtr-tiny is
# left out: its file is refused like t5-gated-tiny's, which the test shows).
FIXTURE_CASES = ("nomic-bert-tiny", "modern-bert-tiny", "modern-bert-cls-tiny", "t5-gated-tiny")
OUT = cr.FIXTURES / "llama-cpp"


def run_case(embed, gguf, case, tmp):
    ref = json.loads((cr.FIXTURES / "vectors" / f"{case}.json").read_text())
    for v in ref["variants"]:
        texts = tmp / f"{case}.txt"
        texts.write_text("\n".join(v["prompt"] + t for t in ref["texts"]) + "\n", encoding="utf-8")
        out = tmp / f"{case}.npy"
        rank = v.get("pooling") == "rank"
        extra = ["--pooling", "rank", "--normalize", "-1"] if rank else []
        r = subprocess.run([embed, str(gguf), str(texts), "-f", "npy", "-o", str(out), "--prefix", ""] + extra,
                           capture_output=True, text=True)
        label = f"{case} ({v['label']})"
        if r.returncode:
            print(f"{label}: embed refuses llama.cpp's GGUF: {r.stderr.strip().splitlines()[-1]}")
            return
        got = np.load(out).astype(np.float64)
        want = np.asarray(v["vectors"], dtype=np.float64)
        if rank:
            diff = np.abs(got - want).max() / max(1.0, np.abs(want).max())
            print(f"{label}: llama.cpp's GGUF in embed, {len(got)} texts, max |logit diff| / max(1, |ref|) {diff:.3g}")
            continue
        got /= np.linalg.norm(got, axis=1, keepdims=True)
        want /= np.linalg.norm(want, axis=1, keepdims=True)
        cos = np.sum(got * want, axis=1)
        print(f"{label}: llama.cpp's GGUF in embed, {len(cos)} texts, min cosine to the reference {cos.min():.9f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--embed", default=str(cr.ROOT / "build" / "tools" / "embed"))
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--write-fixtures", action="store_true")
    args = ap.parse_args()
    vendor = cr.vendor_dir()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for case in args.cases:
            gguf = tmp / f"{case}.gguf"
            cr.run_reference(vendor, cr.FIXTURES / case, "f32", gguf)
            run_case(args.embed, gguf, case, tmp)
        if args.write_fixtures:
            OUT.mkdir(exist_ok=True)
            for case in FIXTURE_CASES:
                gguf = tmp / f"{case}-f16.gguf"
                cr.run_reference(vendor, cr.FIXTURES / case, "f16", gguf)
                shutil.copyfile(gguf, OUT / gguf.name)
                print(f"wrote {OUT / gguf.name} ({gguf.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
