#!/usr/bin/env python3
"""Embeds a Parquet file of texts with Ray Data on a local cluster: ds.map_batches(EmbedActor,
compute=ActorPoolStrategy(size=ACTORS)) where each actor loads the model once, writing Parquet with a
fixed_size_list<float> `embedding` column. Checks the vectors equal the `embed` command's, and
times the pipeline against the command with as many threads as the actors have in all.

  ~/.cache/embed/venv-ray/bin/python tools/scale/ray_embed.py MODEL.gguf [--actors 2] [--threads 1]
      [--repeat 10] [--batch-size 1024] [--runs 3] [--embed-bin build/tools/embed] [--work DIR]

The venv comes from tools/scale/setup_venv.sh ray. The numbers are only meaningful on a quiet
machine (docs/python.md)."""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import corpus  # noqa: E402


class EmbedActor:
    """One per Ray actor: the model is loaded once, then each batch of texts becomes vectors."""

    def __init__(self, model_path: str, threads: int, column: str = "text"):
        import embed

        self.model = embed.Model(model_path, threads=threads)
        self.column = column

    def __call__(self, batch: pa.Table) -> pa.Table:
        rows = self.model.encode(batch.column(self.column).to_numpy(zero_copy_only=False))
        # pyarrow wraps the float32 buffer without copying it.
        vectors = pa.FixedSizeListArray.from_arrays(pa.array(rows.reshape(-1)), rows.shape[1])
        return batch.append_column("embedding", vectors)


def embed_with_ray(model: str, parquet: pathlib.Path, out: pathlib.Path, actors: int, threads: int, batch_size: int) -> float:
    import ray

    start = time.perf_counter()
    # One Parquet file is one block however many row groups it has: blocks of batch_size rows let
    # every actor take work (and balance the tail).
    ds = ray.data.read_parquet(str(parquet)).repartition(target_num_rows_per_block=batch_size)
    ds = ds.map_batches(
        EmbedActor,
        fn_constructor_kwargs={"model_path": model, "threads": threads},
        compute=ray.data.ActorPoolStrategy(size=actors),  # `concurrency=actors` before Ray 2.51
        num_cpus=threads,
        batch_size=batch_size,
        batch_format="pyarrow",
    )
    ds.write_parquet(str(out))
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--actors", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="engine threads per actor")
    p.add_argument("--repeat", type=int, default=10, help="copies of the STS-B sentences in the corpus")
    p.add_argument("--batch-size", type=int, default=1024, help="rows per map_batches call")
    p.add_argument("--runs", type=int, default=3, help="timed runs of each side (the best counts)")
    p.add_argument("--embed-bin", default=str(corpus.ROOT / "build" / "tools" / "embed"))
    p.add_argument("--work", default="", help="folder for the corpus and outputs (default: a temporary one)")
    a = p.parse_args()

    import ray

    import embed

    work = pathlib.Path(a.work or tempfile.mkdtemp(prefix="embed-ray-"))
    parquet, lines, n = corpus.write_corpus(work, a.repeat)
    print(f"corpus: {n} texts ({parquet}); embed {embed.__version__} from {embed.__file__}")
    # The actors hold actors x threads CPUs for the whole run; one more lets the Parquet read and
    # write tasks be scheduled beside them (without it Ray waits forever for a free CPU).
    ray.init(num_cpus=a.actors * a.threads + 1, include_dashboard=False, object_store_memory=512 << 20, log_to_driver=False)
    ray_times = []
    for run in range(a.runs):
        out = work / f"ray-out-{run}"
        ray_times.append(embed_with_ray(os.path.abspath(a.model), parquet, out, a.actors, a.threads, a.batch_size))
        print(f"ray run {run}: {ray_times[-1]:.2f} s")
    ray.shutdown()
    got = corpus.read_vectors(work / "ray-out-0", n)

    cli_threads = a.actors * a.threads
    cli_times = []
    for run in range(a.runs):
        want, seconds = corpus.cli_vectors(a.embed_bin, a.model, lines, cli_threads)
        cli_times.append(seconds)
        print(f"cli run {run}: {seconds:.2f} s")
    corpus.check_same("ray", got, want)

    # The Python path without Ray: one process, one Model, one call (the binding's own overhead).
    py_times = []
    for run in range(a.runs):
        start = time.perf_counter()
        rows = embed.Model(a.model, threads=cli_threads).encode(lines.read_text(encoding="utf-8").splitlines())
        py_times.append(time.perf_counter() - start)
        print(f"python run {run}: {py_times[-1]:.2f} s")
    corpus.check_same("python (one process)", rows, want)

    best_ray, best_cli, best_py = min(ray_times), min(cli_times), min(py_times)
    print(f"throughput, best of {a.runs} (texts/s): embed command {cli_threads} threads {n / best_cli:.0f}; "
          f"Ray {a.actors} actors x {a.threads} thread(s) {n / best_ray:.0f} (ratio {best_cli / best_ray:.3f}); "
          f"Python one process {cli_threads} threads {n / best_py:.0f} (ratio {best_cli / best_py:.3f})")


if __name__ == "__main__":
    main()
