#!/usr/bin/env python3
"""Embeds a Parquet file of texts with Ray Data on a local cluster: ds.map_batches(EmbedActor,
compute=ActorPoolStrategy(size=ACTORS)) where each actor loads the model once, writing Parquet with a
fixed_size_list<float> `embedding` column. Checks the vectors equal the `embed` command's, and
times the pipeline against the command with as many threads as the actors have in all.

  ~/.cache/embed/venv-ray/bin/python tools/scale/ray_embed.py MODEL.gguf [--actors 2] [--threads 1]
      [--repeat 10] [--batch-size 1024] [--runs 3] [--embed-bin build/tools/embed] [--work DIR]
      [--check --nodes 2]

The venv comes from tools/scale/setup_venv.sh ray. The numbers are only meaningful on a quiet
machine (docs/python.md). --check (CI: tools/scale/ray_ci.sh) runs the pipeline once on a local
cluster of --nodes worker nodes (each its own raylet and worker processes, beside a head node that
runs no actor), checks the vectors and that the actors ran on more than one node, and times nothing."""

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


def check_on_cluster(a: argparse.Namespace) -> None:
    """CI: the pipeline once on a head node (the Parquet read and write tasks) and a.nodes worker
    nodes with a.threads CPUs and one custom "embed_worker" slot each, every actor needing one, so
    the actors are spread over the worker nodes; vectors equal the command's, bit for bit."""
    import ray
    from ray.cluster_utils import Cluster

    work = pathlib.Path(a.work or tempfile.mkdtemp(prefix="embed-ray-"))
    parquet, lines, n = corpus.write_corpus(work, a.repeat)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False,
                                                            "object_store_memory": 256 << 20})
    for _ in range(a.nodes):
        cluster.add_node(num_cpus=a.threads, resources={"embed_worker": 1}, object_store_memory=256 << 20)
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        nodes = [x for x in ray.nodes() if x["Alive"]]
        if len(nodes) != a.nodes + 1:
            raise SystemExit(f"ray: {len(nodes)} live nodes, want {a.nodes + 1}")
        start = time.perf_counter()
        ds = ray.data.read_parquet(str(parquet)).repartition(target_num_rows_per_block=a.batch_size)
        ds = ds.map_batches(
            NodeTaggedEmbedActor,
            fn_constructor_kwargs={"model_path": os.path.abspath(a.model), "threads": a.threads},
            compute=ray.data.ActorPoolStrategy(size=a.actors),
            num_cpus=a.threads,
            resources={"embed_worker": 1},
            batch_size=a.batch_size,
            batch_format="pyarrow",
        )
        ds.write_parquet(str(work / "ray-out"))
        seconds = time.perf_counter() - start
    finally:
        ray.shutdown()
        cluster.shutdown()
    import pyarrow.parquet as pq

    used = set(pq.read_table(work / "ray-out", columns=["node"]).column("node").to_pylist())
    got = corpus.read_vectors(work / "ray-out", n)
    want, _ = corpus.cli_vectors(a.embed_bin, a.model, lines, a.threads)
    corpus.check_same("ray", got, want)
    if len(used) < min(a.nodes, a.actors):
        raise SystemExit(f"ray: the actors ran on {len(used)} node(s), want {min(a.nodes, a.actors)}")
    print(f"ray: {n} texts on {a.actors} actors over {len(used)} worker nodes in {seconds:.1f} s")


class NodeTaggedEmbedActor(EmbedActor):
    """EmbedActor that also writes the id of the node it ran on (the check that work was spread)."""

    def __call__(self, batch: pa.Table) -> pa.Table:
        import ray

        out = super().__call__(batch)
        node = ray.get_runtime_context().get_node_id()
        return out.append_column("node", pa.array([node] * out.num_rows, pa.string()))


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
    p.add_argument("--check", action="store_true", help="CI: one run on a local cluster of --nodes worker nodes, vectors checked, no timing")
    p.add_argument("--nodes", type=int, default=2, help="worker nodes of the --check cluster")
    a = p.parse_args()
    if a.check:
        check_on_cluster(a)
        return

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
