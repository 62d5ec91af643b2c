#!/usr/bin/env python3
"""One benchmark run of a peer engine, printed as one JSON object with the same fields as
`embed bench --json` (load_s, warmup_s, batch.passes_s / median_s / texts_per_s / tokens_per_s,
latency.p50_ms / p99_ms, peak_rss_mib). tools/bench/compare.py starts one process per run so that
each engine has its own threads, memory and RSS.

Engines:
  llama  llama.cpp through llama-cpp-python: the same GGUF, embedding mode, the given pooling,
         L2-normalized; all texts packed into decode calls of up to --batch-tokens tokens and 256
         sequences (as Llama.embed does), texts cut to --max-tokens tokens keeping a trailing
         [SEP] (as HF and embed cut).
  st     sentence-transformers on PyTorch CPU (torch.set_num_threads), the HF folder, encode()
         with its default batch_size 32 and the model's own Normalize module; max_seq_length =
         --max-tokens.
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

POOLING = {"none": 0, "mean": 1, "cls": 2, "last": 3}


def read_texts(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class LlamaEngine:
    """llama.cpp: packs tokenized texts into batches itself so the text limit is --max-tokens,
    not n_batch (Llama.embed cuts at n_batch)."""

    def __init__(self, args):
        import llama_cpp
        import numpy as np
        self.lib, self.np = llama_cpp, np
        self.max_tokens = args.max_tokens
        self.batch_tokens = args.batch_tokens
        t0 = time.perf_counter()
        self.llm = llama_cpp.Llama(
            model_path=args.model, embedding=True, pooling_type=POOLING[args.pooling],
            n_ctx=args.batch_tokens, n_batch=args.batch_tokens, n_ubatch=args.batch_tokens,
            n_threads=args.threads, n_threads_batch=args.threads, verbose=False)
        self.load_s = time.perf_counter() - t0
        if self.llm.pooling_type() != POOLING[args.pooling]:
            raise SystemExit(f"llama.cpp pooling {self.llm.pooling_type()} != {args.pooling}")
        self.n_embd = self.llm.n_embd()
        # Special tokens the tokenizer appends after the text ([SEP] for BERT, none for gemma):
        # kept when a text is cut, as HF and embed cut.
        self.tail = self.llm.tokenize(b"", add_bos=True, special=False)[1:]
        self.n_seq_max = self.llm.context_params.n_seq_max
        info = llama_cpp.llama_print_system_info().decode()
        self.isa = ",".join(k for k in ("AVX2", "F16C", "FMA", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16", "AMX_INT8")
                            if f"{k} = 1" in info)
        self.version = f"llama-cpp-python {llama_cpp.__version__}"

    def tokenize(self, text):
        ids = self.llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
        if len(ids) > self.max_tokens:
            ids = ids[: self.max_tokens - len(self.tail)] + self.tail
        return ids

    def _decode(self, seqs, out):
        llm = self.llm
        llm._batch.reset()
        for i, ids in enumerate(seqs):
            llm._batch.add_sequence(ids, i, True)
        llm._ctx.kv_cache_clear()
        llm._ctx.decode(llm._batch)
        for i in range(len(seqs)):
            ptr = self.lib.llama_get_embeddings_seq(llm._ctx.ctx, i)
            v = self.np.ctypeslib.as_array(ptr, shape=(self.n_embd,)).copy()
            out.append(v / max(float(self.np.linalg.norm(v)), 1e-12))

    def count_tokens(self, texts):
        return sum(len(self.tokenize(t)) for t in texts)

    def embed(self, texts):
        out, batch, used = [], [], 0
        for text in texts:
            ids = self.tokenize(text)
            if batch and (used + len(ids) > self.batch_tokens or len(batch) >= self.n_seq_max):
                self._decode(batch, out)
                batch, used = [], 0
            batch.append(ids)
            used += len(ids)
        if batch:
            self._decode(batch, out)
        return out


class SentenceTransformersEngine:
    def __init__(self, args):
        import torch
        torch.set_num_threads(args.threads)
        import sentence_transformers
        t0 = time.perf_counter()
        self.model = sentence_transformers.SentenceTransformer(args.hf_folder, device="cpu")
        self.model.max_seq_length = args.max_tokens
        self.load_s = time.perf_counter() - t0
        self.isa = f"torch {torch.backends.cpu.get_cpu_capability()}"
        self.version = f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}"

    def count_tokens(self, texts):
        return int(self.model.tokenize(texts)["attention_mask"].sum())

    def embed(self, texts):
        return self.model.encode(texts, convert_to_numpy=True)


def time_passes(engine, texts, repeat, warm, warmup):
    tokens = engine.count_tokens(texts)  # untimed
    t0 = time.perf_counter()
    engine.embed(warm[:warmup] if warmup > 0 else warm)
    first = time.perf_counter() - t0
    passes = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        engine.embed(texts)
        passes.append(time.perf_counter() - t0)
    return tokens, first, passes


def percentile(values, p):
    """Nearest rank, as embed bench."""
    s = sorted(values)
    rank = max(1, min(len(s), -(-len(s) * p // 100)))
    return s[int(rank) - 1]


def time_single(engine, texts, n):
    """Each of the first n texts embedded alone, after one untimed call (as embed bench)."""
    if n <= 0:
        return None
    engine.embed(texts[:1])
    ms, tokens = [], 0
    for text in texts[:n]:
        t0 = time.perf_counter()
        engine.embed([text])
        ms.append((time.perf_counter() - t0) * 1e3)
        tokens += engine.count_tokens([text])
    return {"texts": len(ms), "tokens_mean": tokens / len(ms), "p50_ms": percentile(ms, 50),
            "p99_ms": percentile(ms, 99), "max_ms": max(ms)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", choices=("llama", "st"), required=True)
    ap.add_argument("--model", help="GGUF file (llama)")
    ap.add_argument("--hf-folder", help="sentence-transformers folder (st)")
    ap.add_argument("--input", required=True, help="texts, one per line")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--pooling", default="mean", choices=tuple(POOLING))
    ap.add_argument("--max-tokens", type=int, required=True, help="tokens per text; longer texts are cut")
    ap.add_argument("--batch-tokens", type=int, default=4096, help="llama: n_ctx = n_batch = n_ubatch")
    ap.add_argument("--repeat", type=int, default=1, help="timed passes over all texts")
    ap.add_argument("--warmup", type=int, default=0, help="texts in the untimed warm-up call (0: all)")
    ap.add_argument("--warmup-input", help="texts for the warm-up call instead of --input")
    ap.add_argument("--latency", type=int, default=0)
    args = ap.parse_args()
    texts = read_texts(args.input)
    warm = read_texts(args.warmup_input) if args.warmup_input else texts
    t0 = time.perf_counter()
    engine = LlamaEngine(args) if args.engine == "llama" else SentenceTransformersEngine(args)
    startup_s = time.perf_counter() - t0 - engine.load_s  # imports
    rss_load = rss_mib()
    tokens, first, passes = time_passes(engine, texts, args.repeat, warm, args.warmup)
    med = statistics.median(passes)
    result = {"engine": args.engine, "version": engine.version, "isa": engine.isa, "model": args.model or args.hf_folder,
              "input": args.input, "threads": args.threads, "pooling": args.pooling, "texts": len(texts), "tokens": tokens,
              "import_s": startup_s, "load_s": engine.load_s, "rss_after_load_mib": rss_load, "warmup_s": first,
              "batch": {"passes_s": passes, "median_s": med, "texts_per_s": len(texts) / med, "tokens_per_s": tokens / med}}
    latency = time_single(engine, texts, args.latency)
    if latency:
        result["latency"] = latency
    result["peak_rss_mib"] = peak_rss_mib()
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
