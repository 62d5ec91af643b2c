#!/usr/bin/env python3
"""Writes tests/fixtures/dequant/<type>.gguf: for each tensor type the engine decodes, a small
quantized tensor written by gguf-py and, beside it, gguf-py's own dequantization of it (F32).
tests/unit/dequant_test.cpp checks gguf::dequantize_row against it bit for bit.

Run with the reference virtualenv:  $(tools/refgen/setup_venv.sh) tools/refgen/gguf_dequant_fixtures.py
Rows come from gguf.quants.quantize on seeded random data where gguf-py has a quantizer, plus
rows of random block bytes (with finite f16 scales) that reach every bit pattern of the packed
fields; K-quants have no gguf-py quantizer, so their rows are all random valid blocks.
"""
import argparse
import importlib.metadata
import os

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

SEED = 20240601
# Byte offsets of the f16 scale fields inside one block (ggml-common.h layouts).
F16_FIELDS = {
    T.Q4_0: [0], T.Q5_0: [0], T.Q8_0: [0],
    T.Q4_1: [0, 2], T.Q5_1: [0, 2],
    T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}
LEGACY = [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0]
K_QUANTS = [T.Q4_K, T.Q5_K, T.Q6_K]


def random_f16(rng, n):
    """Finite f16 values over a wide range, with some subnormals, zeros and negatives."""
    mags = np.exp2(rng.uniform(-26.0, 8.0, n)).astype(np.float32)
    signs = rng.choice(np.array([-1.0, 1.0], dtype=np.float32), n)
    vals = (mags * signs).astype(np.float16)  # exp2(-26) rounds to 0 or a subnormal
    vals[rng.random(n) < 0.05] = np.float16(0.0)
    return vals


def random_blocks(rng, qtype, n_rows, n_cols):
    """Random bytes for n_rows rows of n_cols elements, every f16 field set to a finite value."""
    block_elems, block_bytes = GGML_QUANT_SIZES[qtype]
    n_blocks = n_rows * n_cols // block_elems
    blocks = rng.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)
    for off in F16_FIELDS[qtype]:
        blocks[:, off:off + 2] = random_f16(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    return blocks.reshape(n_rows, -1)


def source_rows(rng, n_rows, n_cols):
    """Seeded float rows of different scales; row 0 is all zeros (the d == 0 path)."""
    scales = np.array([0.0, 1.0, 1e-3, 30.0, 0.2, 7.0, 1e-5][:n_rows], dtype=np.float32)
    rows = rng.standard_normal((n_rows, n_cols)).astype(np.float32) * scales[:, None]
    rows[min(2, n_rows - 1), :5] += np.float32(4.0)  # an outlier that dominates its block
    return rows


def float_tensor(rng, qtype):
    """F32 / F16 / BF16: 3 rows of 40 with specials (signed zero, subnormals, inf, NaN)."""
    x = rng.standard_normal((3, 40)).astype(np.float32) * np.float32(3.0)
    x[0, :6] = [0.0, -0.0, 1e-6, -7e-8, 65504.0, 1e5]
    x[1, :3] = [np.inf, -np.inf, 3.4e38]
    if qtype == T.F32:
        return x, x
    if qtype == T.F16:
        with np.errstate(over="ignore"):  # 1e5 and 3.4e38 become inf on purpose
            h = x.astype(np.float16)
        h.view(np.uint16)[2, :3] = [0x7C01, 0xFE00, 0x0001]  # signalling NaN, quiet -NaN, min subnormal
        return h, gguf.quants.dequantize(h.view(np.uint8), T.F16)
    q = gguf.quants.quantize(x, T.BF16)
    q.view(np.uint16)[2, :2] = [0x7F81, 0x0001]  # NaN with payload, bf16 subnormal
    return q, gguf.quants.dequantize(q, T.BF16)


def quant_tensor(rng, qtype):
    if qtype in LEGACY:
        n_cols = 96  # 3 blocks per row
        q = gguf.quants.quantize(source_rows(rng, 5, n_cols), qtype)
        q = np.concatenate([q, random_blocks(rng, qtype, 2, n_cols)])  # 7 rows: odd
    else:
        q = random_blocks(rng, qtype, 3, 512)  # 2 super-blocks per row, 3 rows
    return q, gguf.quants.dequantize(q, qtype)


def write_fixture(out_dir, qtype, rng):
    data, expected = float_tensor(rng, qtype) if qtype in (T.F32, T.F16, T.BF16) else quant_tensor(rng, qtype)
    expected = np.ascontiguousarray(expected, dtype=np.float32)
    path = os.path.join(out_dir, f"{qtype.name.lower()}.gguf")
    w = gguf.GGUFWriter(path, arch="dequant-fixture")
    w.add_string("fixture.generator", "tools/refgen/gguf_dequant_fixtures.py")
    w.add_string("fixture.gguf_py_version", importlib.metadata.version("gguf"))
    w.add_uint32("fixture.seed", SEED)
    raw_dtype = None if data.dtype in (np.float32, np.float16) else qtype
    w.add_tensor("quantized", data, raw_dtype=raw_dtype)
    w.add_tensor("expected", expected)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{path}: {expected.shape[0]} rows x {expected.shape[1]}, {os.path.getsize(path)} bytes")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.normpath(os.path.join(here, "..", "..", "tests", "fixtures", "dequant")))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(SEED)
    for qtype in [T.F32, T.F16, T.BF16] + LEGACY + K_QUANTS:
        write_fixture(args.out, qtype, rng)


if __name__ == "__main__":
    main()
