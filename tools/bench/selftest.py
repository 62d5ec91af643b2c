#!/usr/bin/env python3
"""Checks of the benchmark scripts' arithmetic that need no engine (ctest unit:bench_scripts):
FLOPs per token against hand calculations, the nearest-rank percentile, paired ratios, the
workload builder and the report on made-up runs."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_models  # noqa: E402
import compare  # noqa: E402
import peer_run  # noqa: E402
import report  # noqa: E402


class Flops(unittest.TestCase):
    def test_minilm(self):
        # 6 layers x 2 x (4*384^2 + 2*384*1536) = 12 x (589,824 + 1,179,648) = 21,233,664
        self.assertEqual(bench_models.minilm_flops(0), 21_233_664)
        # + attention 6 layers x 2 FLOPs x 2 products x 384 x n; n = 10: 92,160
        self.assertEqual(bench_models.minilm_flops(10), 21_233_664 + 92_160)

    def test_gemma(self):
        # linear 18 x 2 x (655,360 + 2*163,840 + 655,360 + 3,932,160) = 36 x 5,570,560 = 200,540,160
        # one token sees one key on all 18 layers: 2 x 2 x 1024 x 18 = 73,728
        self.assertEqual(bench_models.gemma_flops(1), 200_540_160 + 73_728)
        # n = 1024: global layers see (n+1)/2 = 512.5 keys on average, local layers
        # (1+...+512 + 512*512)/1024 = 384.25; 4096 x (3 x 512.5 + 15 x 384.25) = 29,905,920
        self.assertEqual(bench_models.gemma_flops(1024), 200_540_160 + 29_905_920)


class Statistics(unittest.TestCase):
    def test_nearest_rank(self):
        v = [5.0, 1.0, 4.0, 2.0, 3.0]
        self.assertEqual(peer_run.percentile(v, 50), 3.0)   # rank ceil(2.5) = 3
        self.assertEqual(peer_run.percentile(v, 99), 5.0)   # rank ceil(4.95) = 5
        self.assertEqual(peer_run.percentile(v, 20), 1.0)   # rank 1
        self.assertEqual(peer_run.percentile(list(range(1, 201)), 99), 198)  # rank 198 of 200

    def test_paired_ratio(self):
        ours = [{"v": 10.0}, {"v": 12.0}, {"v": 9.0}]
        theirs = [{"v": 5.0}, {"v": 4.0}, {"v": 6.0}]
        self.assertEqual(report.paired_ratio(ours, theirs, lambda r: r["v"]), (2.0, 1.5, 3.0))


class Workloads(unittest.TestCase):
    def test_documents(self):
        sentences = compare.stsb_sentences()
        self.assertEqual(len(sentences), 3000)  # 1,500 STS-B dev pairs, both sides
        docs = compare.documents(sentences, 5, 256, start=11)
        self.assertEqual(len(docs), 5)
        self.assertEqual(len(set(docs)), 5)
        for d in docs:
            self.assertGreaterEqual(len(d.split()), 256)
            self.assertNotIn("\n", d)

    def test_llama_batch(self):
        self.assertEqual(compare.llama_batch_tokens(256), 512)
        self.assertEqual(compare.llama_batch_tokens(1024), 1024)


def fake_run(tokens_per_s, p50=None, texts=10, tokens=100):
    run = {"texts": texts, "tokens": tokens, "load_s": 0.1, "peak_rss_mib": 100.0,
           "batch": {"tokens_per_s": tokens_per_s}}
    if p50 is not None:
        run["latency"] = {"p50_ms": p50, "p99_ms": 2 * p50}
    return run


class Report(unittest.TestCase):
    def test_tables(self):
        common = {"family": "minilm", "workload": "stsb", "threads": 2}
        results = [
            dict(common, engine="embed", model="minilm-f32", runs=[fake_run(1000, 4.0), fake_run(900, 5.0)]),
            dict(common, engine="llama-avx2", model="minilm-f32", runs=[fake_run(500, 8.0), fake_run(300, 10.0)]),
            dict(common, engine="sentence-transformers", model="hf-f32", runs=[fake_run(1000, 4.0), fake_run(900, 5.0)]),
        ]
        text = report.render(results, 2, {"2": 100.0})
        # Paired throughput ratios 1000/500 = 2 and 900/300 = 3: median 2.5, range 2-3.
        self.assertIn("**2.50×** (2.00–3.00)", text)
        self.assertIn("**1.00×**", text)  # equal to sentence-transformers in both repetitions
        # Latency: peer p50 over embed's, 8/4 = 2 and 10/5 = 2.
        self.assertIn("**2.00×**", text)
        # Roofline: 950 tok/s x minilm_flops(10) = 20.26 GFLOP/s, 20% of 100.
        self.assertIn("20.3 GFLOP/s, 20% of the 100 GFLOP/s", text)
        self.assertTrue(text.rstrip().splitlines()[-1].startswith("| minilm-f32 | stsb | 10 × 10 | 2 | 950 |"))


if __name__ == "__main__":
    unittest.main()
