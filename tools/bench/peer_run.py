#!/usr/bin/env python3
"""One benchmark run of a peer engine, printed as one JSON object with the same fields as
`embed bench --json` (load_s, warmup_s, batch.passes_s / median_s / texts_per_s / tokens_per_s,
latency.p50_ms / p99_ms, peak_rss_mib). tools/bench/compare.py starts one process per run so that
each engine has its own threads, memory and RSS.

Engines (docs/benchmarks.md has the table of how each is built and configured):
  llama  llama.cpp through llama-cpp-python (whichever build the running venv has: AVX2, AVX-512
         or AMX): the same GGUF, embedding mode, the given pooling, L2-normalized; all texts
         packed into decode calls of up to --batch-tokens tokens and 256 sequences (as
         Llama.embed does), texts cut to --max-tokens tokens keeping a trailing [SEP] (as HF and
         embed cut).
  st     sentence-transformers on PyTorch CPU (torch.set_num_threads), the HF folder, encode()
         with its default batch_size 32 and the model's own Normalize module; max_seq_length =
         --max-tokens. --dtype bf16: model.to(torch.bfloat16), so PyTorch runs oneDNN's bf16
         kernels (AMX where the CPU has it). --trust-remote-code: the folder's own modeling file
         (config.json auto_map), as users load nomic-bert, jina-bert-v2 and GTE NewModel; off by
         default.
  onnx   ONNX Runtime's CPU provider on an export of the same HF model (tools/bench/onnx_export.py;
         --onnx-model picks the fp32 or the dynamically quantized int8 file), as FastEmbed and
         Infinity run it: the HF fast tokenizer (tokenizer.json), texts sorted by length and
         batched by --batch-size 32 like sentence-transformers, mean pooling over the attention
         mask and L2 normalization in numpy.

--vectors FILE writes the vectors of the input's texts (in input order, from the first timed
pass) as JSON lines {"index": i, "embedding": [...]}, as `embed -f jsonl` does, for compare.py's
agreement check; --verbose lets llama.cpp print its load log (buffer types) to stderr. Every engine reports
`amx_permission`: whether something in the process asked Linux for the AMX tile state
(arch_prctl ARCH_GET_XCOMP_PERM bit 18), which oneDNN, llama.cpp and ONNX Runtime's MLAS do
before they run tile instructions.
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


def amx_permission():
    """True when this process holds the AMX tile-data permission (someone called
    arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)); None where the call is unavailable."""
    import ctypes
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        mask = ctypes.c_uint64(0)
        # SYS_arch_prctl = 158 on x86-64; ARCH_GET_XCOMP_PERM = 0x1022; XFEATURE_XTILEDATA = 18
        if libc.syscall(158, 0x1022, ctypes.byref(mask)) != 0:
            return None
        return bool(mask.value >> 18 & 1)
    except (OSError, AttributeError):
        return None


def normalized(np, v):
    """Rows scaled to unit L2 norm (float32)."""
    v = np.asarray(v, dtype=np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


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
            n_threads=args.threads, n_threads_batch=args.threads, verbose=args.verbose)
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
        self.model = sentence_transformers.SentenceTransformer(args.hf_folder, device="cpu", trust_remote_code=args.trust_remote_code)
        if args.dtype == "bf16":
            self.model.to(torch.bfloat16)
        self.model.max_seq_length = args.max_tokens
        self.load_s = time.perf_counter() - t0
        self.isa = f"torch {torch.backends.cpu.get_cpu_capability()}" + (", oneDNN bf16" if args.dtype == "bf16" else "")
        self.version = f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}"

    def count_tokens(self, texts):
        return int(self.model.tokenize(texts)["attention_mask"].sum())

    def embed(self, texts):
        # A bf16 model returns bf16 vectors: widened to f32 (as encode does for numpy output).
        return self.model.encode(texts, convert_to_tensor=True).float().numpy()


class OnnxEngine:
    """ONNX Runtime on the exported model (last_hidden_state out), with the HF fast tokenizer."""

    def __init__(self, args):
        import numpy as np
        import onnxruntime as ort
        import tokenizers
        self.np = np
        self.batch_size = args.batch_size
        t0 = time.perf_counter()
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(args.onnx_model, options, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.tokenizer = tokenizers.Tokenizer.from_file(os.path.join(args.hf_folder, "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=args.max_tokens)
        self.tokenizer.no_padding()
        self.load_s = time.perf_counter() - t0
        self.isa = "MLAS " + ("int8" if "int8" in os.path.basename(args.onnx_model) else "f32")
        self.version = f"onnxruntime {ort.__version__}, tokenizers {tokenizers.__version__}"

    def count_tokens(self, texts):
        return sum(len(e.ids) for e in self.tokenizer.encode_batch(texts))

    def embed(self, texts):
        np = self.np
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))  # as sentence-transformers
        out = np.zeros((len(texts), 0), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            width = max(len(encodings[i].ids) for i in idx)
            feed = {name: np.zeros((len(idx), width), dtype=np.int64) for name in self.inputs}
            for row, i in enumerate(idx):
                n = len(encodings[i].ids)
                feed["input_ids"][row, :n] = encodings[i].ids
                feed["attention_mask"][row, :n] = 1
                if "token_type_ids" in feed:
                    feed["token_type_ids"][row, :n] = encodings[i].type_ids
            hidden = self.session.run(None, feed)[0]
            mask = feed["attention_mask"][:, :, None].astype(np.float32)
            pooled = normalized(np, (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9))
            if out.shape[1] == 0:
                out = np.zeros((len(texts), pooled.shape[1]), dtype=np.float32)
            out[idx] = pooled
        return out


ENGINES = {"llama": LlamaEngine, "st": SentenceTransformersEngine, "onnx": OnnxEngine}


def time_passes(engine, texts, repeat, warm, warmup):
    """Token count, warm-up seconds, the timed passes' seconds and the first pass's vectors."""
    tokens = engine.count_tokens(texts)  # untimed
    t0 = time.perf_counter()
    engine.embed(warm[:warmup] if warmup > 0 else warm)
    first = time.perf_counter() - t0
    passes, vectors = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        v = engine.embed(texts)
        passes.append(time.perf_counter() - t0)
        vectors = v if vectors is None else vectors
    return tokens, first, passes, vectors


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
    ap.add_argument("--engine", choices=tuple(ENGINES), required=True)
    ap.add_argument("--model", help="GGUF file (llama)")
    ap.add_argument("--hf-folder", help="the HF model folder (st; onnx: its tokenizer.json)")
    ap.add_argument("--dtype", default="f32", choices=("f32", "bf16"), help="st: the model's dtype")
    ap.add_argument("--trust-remote-code", action="store_true",
                    help="st: run the modeling file the folder's config.json names in auto_map (off by default)")
    ap.add_argument("--onnx-model", help="onnx: the .onnx file")
    ap.add_argument("--batch-size", type=int, default=32, help="onnx: texts per session.run (sorted by length)")
    ap.add_argument("--vectors", help="write the texts' vectors (first timed pass, input order) to this JSONL file")
    ap.add_argument("--verbose", action="store_true", help="llama: keep llama.cpp's log on stderr")
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
    engine = ENGINES[args.engine](args)
    startup_s = time.perf_counter() - t0 - engine.load_s  # imports
    rss_load = rss_mib()
    tokens, first, passes, vectors = time_passes(engine, texts, args.repeat, warm, args.warmup)
    if args.vectors:
        import numpy as np
        with open(args.vectors, "w", encoding="utf-8") as f:
            for i, v in enumerate(normalized(np, vectors)):
                f.write(json.dumps({"index": i, "embedding": [float(x) for x in v]}) + "\n")
    med = statistics.median(passes)
    result = {"engine": args.engine + (f" {args.dtype}" if args.engine == "st" else ""), "version": engine.version, "isa": engine.isa, "model": args.model or args.hf_folder,
              "input": args.input, "threads": args.threads, "pooling": args.pooling, "texts": len(texts), "tokens": tokens,
              "import_s": startup_s, "load_s": engine.load_s, "rss_after_load_mib": rss_load, "warmup_s": first,
              "batch": {"passes_s": passes, "median_s": med, "texts_per_s": len(texts) / med, "tokens_per_s": tokens / med}}
    latency = time_single(engine, texts, args.latency)
    if latency:
        result["latency"] = latency
    result["peak_rss_mib"] = peak_rss_mib()
    result["amx_permission"] = amx_permission()
    json.dump(result, sys.stdout)
    print()


if __name__ == "__main__":
    main()
