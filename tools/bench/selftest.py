#!/usr/bin/env python3
"""Checks of the benchmark scripts' arithmetic that need no engine (ctest unit:bench_scripts):
FLOPs per token against hand calculations, the nearest-rank percentile, paired ratios, goal
verdicts, the roofline against the AMX and FMA peaks, which engine runs which model, cosines, the
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


def fake_run(tokens_per_s, p50=None, texts=10, tokens=100, **extra):
    run = {"texts": texts, "tokens": tokens, "load_s": 0.1, "peak_rss_mib": 100.0,
           "batch": {"tokens_per_s": tokens_per_s}, **extra}
    if p50 is not None:
        run["latency"] = {"p50_ms": p50, "p99_ms": 2 * p50}
    return run


def result(engine, model, speeds, family="minilm", workload="stsb", threads=2, **extra):
    return {"engine": engine, "model": model, "family": family, "workload": workload, "threads": threads,
            "runs": [fake_run(v, **extra) for v in speeds]}


# Peaks as embed-bench-peak prints them (2 threads).
PEAKS = {"amx_bf16_gflops": {"2": 5400.0}, "amx_int8_gops": {"2": 14000.0},
         "avx512_fma_gflops": {"2": 474.0}, "avx2_fma_gflops": {"2": 256.0}}


class Engines(unittest.TestCase):
    def test_which_models(self):
        runs = lambda label: [m for m, spec in bench_models.MODELS.items()
                              if bench_models.engine_runs_model(bench_models.ENGINES[label], spec)]
        self.assertEqual(runs("embed-bf16"), ["minilm-f32", "minilm-f16"])
        self.assertEqual(runs("embed-int8"), ["minilm-q8_0", "gemma3-270m-q4km"])
        self.assertEqual(runs("llama-amx"), list(bench_models.MODELS))
        self.assertEqual(runs("st-bf16"), [])  # runs the HF folder, once per family
        self.assertTrue(set(bench_models.DEFAULT_ENGINES) <= set(bench_models.ENGINES))

    def test_cosines(self):
        # (1,0)·(1,0) = 1; (0.6,0.8)·(1,0) = 0.6; (3,4) against (4,3): 24/25
        self.assertEqual(compare.cosines([[1, 0], [0.6, 0.8], [3, 4]], [[1, 0], [1, 0], [4, 3]]), [1.0, 0.6, 0.96])

    def test_last_json(self):
        out = "onednn_verbose,v1,info,cpu\n{\"a\": 1}\nonednn_verbose,v1,primitive,exec\n"
        self.assertEqual(compare.last_json(out), {"a": 1})


class Verdicts(unittest.TestCase):
    def test_verdict(self):
        self.assertEqual(report.verdict(2.4, 2.0), "met (+20%)")
        self.assertEqual(report.verdict(1.0, 1.0), "met (+0%)")
        # 1.5 of 2: a quarter short; 2 / 1.5 = 1.33x still needed
        self.assertEqual(report.verdict(1.5, 2.0), "missed by 25% (needs 1.33× more)")
        # 0.6 of 1.5: 60% short; 1.5 / 0.6 = 2.5x
        self.assertEqual(report.verdict(0.6, 1.5), "missed by 60% (needs 2.50× more)")

    def test_effective_peaks(self):
        amx = {"isa": "amx"}
        # f32-grade on AMX: three bf16 tile products per multiply-add, 5400 / 3 = 1800
        self.assertEqual(report.effective_peaks(dict(amx, compute_type="f32"), PEAKS, 2),
                         ((1800.0, "AMX bf16 ÷ 3"), (474.0, "AVX-512 FMA")))
        self.assertEqual(report.effective_peaks(dict(amx, compute_type="bf16"), PEAKS, 2)[0], (5400.0, "AMX bf16"))
        self.assertEqual(report.effective_peaks(dict(amx, compute_type="int8"), PEAKS, 2)[0], (14000.0, "AMX int8"))
        self.assertEqual(report.effective_peaks({"isa": "avx512", "compute_type": "f32"}, PEAKS, 2), (None, (474.0, "AVX-512 FMA")))
        self.assertEqual(report.effective_peaks({"isa": "avx2", "compute_type": "f32"}, PEAKS, 2), (None, (256.0, "AVX2 FMA")))
        # an embed from before issue 13 reported its ISA as text
        self.assertEqual(report.effective_peaks({"isa": "AVX-512F (+AVX2,FMA,F16C)"}, PEAKS, 2)[1], (474.0, "AVX-512 FMA"))
        self.assertEqual(report.effective_peaks(dict(amx, compute_type="f32"), {}, 2), (None, None))


class Report(unittest.TestCase):
    def results(self):
        return [
            result("embed", "minilm-f16", [1000, 900, 1100], isa="amx", compute_type="f32"),
            result("embed-bf16", "minilm-f16", [1200, 1200, 1200], isa="amx", compute_type="bf16"),
            result("embed-avx512", "minilm-f16", [800, 720, 880], isa="avx512", compute_type="f32"),
            result("embed-baseline", "minilm-f16", [800, 800, 800]),
            result("st-f32", "hf", [500, 600, 500]),
            result("st-bf16", "hf", [1000, 1000, 1000]),
            result("embed", "gemma3-270m-q4km", [300, 300, 300], family="gemma3-270m", isa="amx", compute_type="f32"),
            result("llama-amx", "gemma3-270m-q4km", [100, 150, 300], family="gemma3-270m"),
            result("embed", "minilm-f16", [500, 500, 500], threads=1, isa="amx", compute_type="f32"),
        ]

    def test_goals(self):
        text = report.goals_table(self.results())
        # embed / st-f32 per repetition: 1000/500 = 2.0, 900/600 = 1.5, 1100/500 = 2.2 -> median 2.0
        self.assertIn("| default ≥ 2× sentence-transformers f32 | minilm-f16 | stsb | 1000 | 500 | **2.00×** (1.50–2.20) | met (+0%) |", text)
        # embed / st-bf16: 1.0, 0.9, 1.1 -> median 1.0, target 1
        self.assertIn("| default ≥ 1× sentence-transformers bf16 | minilm-f16 | stsb | 1000 | 1000 | **1.00×** (0.90–1.10) | met (+0%) |", text)
        # embed-bf16 / st-bf16: 1.2 each, target 1.5: 20% short, 1.25x needed
        self.assertIn("| **1.20×** | missed by 20% (needs 1.25× more) |", text)
        # gemma: 300/100, 300/150, 300/300 -> 3, 2, 1: median 2, target 1.5
        self.assertIn("| gemma3-270m-q4km | stsb | 300 | 150 | **2.00×** (1.00–3.00) | met (+33%) |", text)
        # only the goals' thread count: the 1-thread run gives no row
        self.assertEqual(text.count("| minilm-f16 |"), 3)
        # no int8 engine ran: those goals say so instead of giving a ratio
        self.assertIn("| --compute-type int8 ≥ 1.5× ONNX Runtime int8 | — | — | — | — | — | not measured: its engines or models "
                      "were not in this run |", text)

    def test_roofline(self):
        text = report.roofline_table(self.results(), PEAKS)
        # 1000 tok/s x minilm_flops(10) = 21,325,824 x 1000 = 21.3 GFLOP/s;
        # 21.33 / 1800 = 1.2% (AMX bf16 / 3), 21.33 / 474 = 4.5%
        self.assertIn("| minilm-f16 | stsb | 2 | embed | amx, f32 | 21.3 | 21.3 | 1.2% of 1800 (AMX bf16 ÷ 3) | 4.5% of 474 (AVX-512 FMA) |", text)
        # bf16: 1200 x 21,325,824 = 25.6 GFLOP/s; 25.59 / 5400 = 0.5%, / 474 = 5.4%
        self.assertIn("| embed-bf16 | amx, bf16 | 21.3 | 25.6 | 0.5% of 5400 (AMX bf16) | 5.4% of 474 (AVX-512 FMA) |", text)
        # forced AVX-512: 800 x 21,325,824 = 17.1 GFLOP/s, no AMX column; 17.06 / 474 = 3.6%
        self.assertIn("| embed-avx512 | avx512, f32 | 21.3 | 17.1 | — | 3.6% of 474 (AVX-512 FMA) |", text)
        self.assertNotIn("st-f32", text)  # embed runs only

    def test_without_amx(self):
        text = report.without_amx_table(self.results())
        # avx512 / baseline: 800/800, 720/800, 880/800 -> 1.0 (0.9-1.1); / embed: 0.8 each; / st-f32: 1.6, 1.2, 1.76
        self.assertIn("| minilm-f16 | stsb | 2 | embed-avx512 | 800 | **1.00×** (0.90–1.10) | **0.80×** | **1.60×** (1.20–1.76) |", text)

    def test_render(self):
        data = {"results": self.results(), "peaks": PEAKS, "skipped": [{"engine": "embed-int8", "model": "minilm-q8_0",
                                                                      "why": "compute type int8 has no kernels"}],
                "agreement": [{"engine": "st-bf16", "model": "hf", "family": "minilm", "evidence": "oneDNN ran 36 of 36",
                               "vs_embed": {"min": 0.99981, "median": 0.99994, "reference": "embed minilm-f32"},
                               "vs_st_f32": {"min": 0.99979, "median": 0.99993}}]}
        text = report.render(data)
        self.assertIn("- embed-int8 on minilm-q8_0: compute type int8 has no kernels", text)
        self.assertIn("| not measured: embed-int8 skipped on minilm-q8_0: compute type int8 has no kernels |", text)
        self.assertIn("| hf | st-bf16 | 0.99981 / 0.99994 (embed minilm-f32) | 0.99979 / 0.99993 | oneDNN ran 36 of 36 |", text)
        # the HF peers' figures appear on every MiniLM row; gemma rows have none
        self.assertIn("| minilm-f16 | stsb | 10 × 10 | 2 | 1000 | 1200 | 800 | 800 | 500 | 1000 | — |", text)
        self.assertIn("| gemma3-270m-q4km | stsb | 10 × 10 | 2 | 300 | — | — | — | — | — | 150 |", text)
        self.assertTrue(text.rstrip().splitlines()[-1].startswith("| gemma-3-270m Q4_K_M ≥ 1.5× llama.cpp with AMX (--compute-type int8) | — |"))

    def test_paired_ratio(self):
        ours = [{"v": 10.0}, {"v": 12.0}, {"v": 9.0}]
        theirs = [{"v": 5.0}, {"v": 4.0}, {"v": 6.0}]
        self.assertEqual(report.paired_ratio(ours, theirs, lambda r: r["v"]), (2.0, 1.5, 3.0))


if __name__ == "__main__":
    unittest.main()
