#!/usr/bin/env python3
"""The tiny XLM-R / BGE-M3 / bidirectional Qwen2 folders converted by llama.cpp's own converter
(convert_reference.py's driver and SentencePiece copy), then run by `embed` (the CLI, f32 file,
no prompt): the vectors against tests/convert/fixtures/vectors/<case>.json (sentence-transformers).
Prints one line per case for docs/convert.md. The committed test of the same fact is
tests/convert/convert_reference_test.cpp (embed convert writes these files' tensors and keys byte
for byte) with convert_vectors_test.cpp (embed's file gives the references).
Usage:  $(tools/refgen/setup_venv.sh) tools/refgen/check_llamacpp_gguf_in_embed.py [--embed build/tools/embed]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import convert_reference as cr  # noqa: E402

CASES = ("xlmr-tiny", "bge-m3-tiny", "qwen2-bidir-tiny")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--embed", default=str(cr.ROOT / "build" / "tools" / "embed"))
    args = ap.parse_args()
    vendor = cr.vendor_dir()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for case in CASES:
            ref = json.loads((cr.FIXTURES / "vectors" / f"{case}.json").read_text())
            variant = next(v for v in ref["variants"] if v["prompt_name"] is None)
            gguf = tmp / f"{case}.gguf"
            cr.run_reference(vendor, cr.FIXTURES / case, "f32", gguf)
            texts = tmp / f"{case}.txt"
            texts.write_text("\n".join(ref["texts"]) + "\n", encoding="utf-8")
            out = tmp / f"{case}.npy"
            subprocess.run([args.embed, str(gguf), str(texts), "-f", "npy", "-o", str(out), "--prefix", ""], check=True,
                           stdout=subprocess.DEVNULL)
            got = np.load(out).astype(np.float64)
            want = np.asarray(variant["vectors"], dtype=np.float64)
            got /= np.linalg.norm(got, axis=1, keepdims=True)
            want /= np.linalg.norm(want, axis=1, keepdims=True)
            cos = np.sum(got * want, axis=1)
            print(f"{case}: llama.cpp's GGUF in embed, {len(cos)} texts, min cosine to sentence-transformers {cos.min():.9f}")


if __name__ == "__main__":
    main()
