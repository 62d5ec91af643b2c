#!/usr/bin/env python3
"""Embeds a Parquet file of texts with Spark (local[N]) through pyspark.ml.functions.
predict_batch_udf: make_predict_fn loads the model once per Python worker and gets numpy batches
of texts. Writes Parquet with an array<float> `embedding` column and checks the vectors equal
the `embed` command's.

  ~/.cache/embed/venv-spark/bin/python tools/scale/spark_embed.py MODEL.gguf [--workers 2]
      [--threads 1] [--repeat 2] [--batch-size 1024] [--embed-bin build/tools/embed] [--work DIR]

The venv comes from tools/scale/setup_venv.sh spark; Spark needs a JRE (java 17)."""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import corpus  # noqa: E402


def make_predict_fn_factory(model_path: str, threads: int):
    def make_predict_fn():
        import embed

        model = embed.Model(model_path, threads=threads)

        def predict(texts):  # numpy array of str -> float32 [batch, dim]
            return model.encode(texts)

        return predict

    return make_predict_fn


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--workers", type=int, default=2, help="Spark local[N] task slots")
    p.add_argument("--threads", type=int, default=1, help="engine threads per Python worker")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=1024, help="rows per predict call")
    p.add_argument("--embed-bin", default=str(corpus.ROOT / "build" / "tools" / "embed"))
    p.add_argument("--work", default="")
    a = p.parse_args()

    from pyspark.ml.functions import predict_batch_udf
    from pyspark.sql import SparkSession
    from pyspark.sql.types import ArrayType, FloatType

    # Spark's Python workers run `python3` from PATH unless told otherwise: this interpreter has
    # embed and numpy.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = pathlib.Path(a.work or tempfile.mkdtemp(prefix="embed-spark-"))
    parquet, lines, n = corpus.write_corpus(work, a.repeat)
    print(f"corpus: {n} texts ({parquet})")
    spark = (
        SparkSession.builder.master(f"local[{a.workers}]")
        .appName("embed-spark")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    embed_udf = predict_batch_udf(
        make_predict_fn_factory(os.path.abspath(a.model), a.threads), return_type=ArrayType(FloatType()), batch_size=a.batch_size
    )
    out = work / "spark-out"
    start = time.perf_counter()
    df = spark.read.parquet(str(parquet)).repartition(a.workers)
    df.withColumn("embedding", embed_udf("text")).write.mode("overwrite").parquet(str(out))
    seconds = time.perf_counter() - start
    spark.stop()
    print(f"spark: {n} texts in {seconds:.2f} s ({n / seconds:.0f} texts/s, {a.workers} workers x {a.threads} thread(s))")
    want, _ = corpus.cli_vectors(a.embed_bin, a.model, lines, a.workers * a.threads)
    corpus.check_same("spark", corpus.read_vectors(out, n), want)


if __name__ == "__main__":
    main()
