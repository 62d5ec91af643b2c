# Reference codes for quantized output vectors (engine/quantize.h): sentence-transformers'
# quantize_embeddings on seeded float32 vectors, written to tests/fixtures/quantization/.
# Covers a dimension count that is not a multiple of 8, values on and outside the calibration
# ranges, a constant dimension (step 0 -> 1), exact zeros (not > 0) and negative zeros.
import json
import warnings

import numpy as np
from sentence_transformers.util.quantization import quantize_embeddings

from common import REPO_ROOT, package_versions

OUT = REPO_ROOT / "tests" / "fixtures" / "quantization" / "reference.json"


def main():
    rng = np.random.default_rng(20260116)
    dims = 21
    calibration = rng.standard_normal((40, dims)).astype(np.float32)
    calibration[:, 5] = np.float32(0.25)  # constant: ranges min == max
    calibration /= np.linalg.norm(calibration, axis=1, keepdims=True)
    rows = rng.standard_normal((7, dims)).astype(np.float32) * np.float32(0.3)
    lo, hi = calibration.min(axis=0), calibration.max(axis=0)
    rows[0] = lo          # exactly the minimum: code 0
    rows[1] = hi          # exactly the maximum: code 255
    rows[2] = lo - 1.0    # below: clipped to 0
    rows[3] = hi + 1.0    # above: clipped to 255
    rows[4, :4] = [0.0, -0.0, 1e-30, -1e-30]
    ranges = np.vstack((lo, hi))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        codes = {p: quantize_embeddings(rows, precision=p, ranges=ranges if p.endswith("int8") else None).tolist()
                 for p in ("int8", "uint8", "binary", "ubinary")}
    out = {
        "generator": "tools/refgen/make_quantization.py",
        "versions": package_versions(("sentence-transformers", "numpy")),
        "dims": dims,
        "calibration": calibration.astype(float).tolist(),
        "min": lo.astype(float).tolist(),
        "max": hi.astype(float).tolist(),
        "rows": rows.astype(float).tolist(),
        "codes": codes,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(OUT)


if __name__ == "__main__":
    main()
