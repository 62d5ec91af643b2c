#!/usr/bin/env python3
"""Where `embed`'s time goes, per operation (issue #26): `perf record` over one `embed bench`
process, its samples grouped by the function they fell in.

  python3 tools/bench/op_profile.py [--embed build/tools/embed] MODEL TEXTS [embed bench options...]
  e.g. python3 tools/bench/op_profile.py ~/.cache/embed/models/all-MiniLM-L6-v2-f16.gguf docs.txt \\
         -t 1 --max-tokens 256 --truncate --repeat 3 --latency 0 [--compute-type bf16]

Prints a Markdown row per operation: its share of the process's samples (user and kernel), over
the whole process (load, warm-up and the timed passes; --repeat dilutes the load). Groups, by the
symbol names of cpu/ and engine/ (the first pattern that matches wins):
  GEMM            the matmul micro-kernels and tiles (f32 panels, bf16 pairs, int8 VNNI/AMX)
  GEMM epilogue   Output::store (bias, activation, accumulate of the int8/AMX tiles)
  activation rounding  activations quantized (int8) or rounded to bf16 pairs per call
  attention       attention kernels (their products and softmax; at the avx512 level)
  norms           layer norm, RMS norm
  activations     GELU/SiLU/... run as their own op
  packing         weights packed at load (panels, pairs, tiles), decoding of quantized blocks
  tokenization    embed::tok
  pooling         pooling and normalization of the output rows
  memory (kernel) page faults, zeroing and unmapping pages
  thread pool     waiting for and handing out tasks
  other           everything else (I/O, JSON, the kernel's other work)
Needs Linux perf (Debian's linux-perf). Not a test.
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

GROUPS = [
    ("GEMM epilogue", r"Output::store|store_tile"),
    ("activation rounding", r"quantize_activations|quantize_row_q8|round_row"),
    # At the avx512 level the 6 x 32 kernel of gemm_kernel_avx512.h (micro_kernel<N, Load...>)
    # serves only attention's products; the GEMM's own is micro_kernel<N[, Panel...]>.
    ("attention", r"attention|Attention|micro_kernel<\d+, [^>]*Load(F32|F16|BF16)>"),
    ("GEMM", r"micro_kernel|vnni_tiles|matmul|run_packed|run_panels|TileSums|output_tile|gemm"),
    ("norms", r"layer_norm|rms_norm"),
    ("activations", r"activation|gelu|silu|swiglu|geglu"),
    ("packing", r"pack_|decode_row|dequantize|PanelWeight|integer_row"),
    ("tokenization", r"embed::tok::|utf8proc|WordPiece|Unigram|Bpe"),
    ("pooling", r"pool|normalize"),
    ("memory (kernel)", r"page_fault|clear_page|unmap|do_anonymous_page|handle_mm_fault|alloc_pages|charge_memcg|memset"),
    ("thread pool", r"ThreadPool|sched_yield|futex|finish_task_switch|__schedule"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embed", default=os.environ.get("EMBED_BIN", "build/tools/embed"))
    ap.add_argument("--label", default="", help="the row label (default: the bench options)")
    ap.add_argument("model")
    ap.add_argument("texts")
    args, bench = ap.parse_known_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        run = subprocess.run(["perf", "record", "-q", "-o", data, "--", args.embed, "bench", *bench, args.model, args.texts],
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"perf record / embed bench failed:\n{run.stderr}")
        batch = next((l for l in run.stdout.splitlines() + run.stderr.splitlines() if l.startswith("batch:")), "")
        report = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "symbol", "--stdio",
                                 "--percent-limit", "0"], capture_output=True, text=True, check=True).stdout
    shares = collections.Counter()
    for line in report.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[[.k]\]\s+(.*\S)", line)
        if not m:
            continue
        share, symbol = float(m.group(1)), m.group(2)
        group = next((g for g, pattern in GROUPS if re.search(pattern, symbol)), "other")
        shares[group] += share
    label = args.label or " ".join(bench)
    names = [g for g, _ in GROUPS] + ["other"]
    print(f"<!-- {batch.strip()} -->")
    print("| run | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    print(f"| {label} | " + " | ".join(f"{shares[g]:.1f}%" for g in names) + " |")


if __name__ == "__main__":
    main()
