"""What tools/bench/compare.py runs: the models (GGUF from tools/models.sh, the HF folder for
sentence-transformers and ONNX Runtime), the engines, the workloads and their sizes, the machine
description, and each model's FLOPs per token for the roofline columns of docs/benchmarks.md."""
import os
import platform
import subprocess

# Sizes keep the whole suite under ~20 minutes on 2 shared cores: the result is a ratio between
# engines on the same texts, so a workload needs enough tokens for a stable pass (seconds), not
# the issue's full counts (200 x 256 tokens on gemma-3-270m through llama.cpp alone would take
# ~20 minutes per pass at the speeds measured here).
WORKLOADS = {
    "stsb": {"tokens": None, "start": 0, "what": "STS-B en dev sentences (~10 tokens)"},
    "doc256": {"tokens": 256, "start": 11, "what": "documents cut to 256 tokens"},
    "maxlen": {"tokens": None, "start": 503, "what": "documents cut to the model's maximum length"},
}

# The counts the benchmark issue names; `compare.py --issue-sizes` uses them (too slow for the
# whole suite, used to check that the reduced counts give the same ratios).
ISSUE_SIZES = {"stsb": 3000, "doc256": 200, "maxlen": 20}
MINILM_SIZES = {"stsb": 256, "doc256": 12, "maxlen": 6}
MODELS = {
    "minilm-f32": {"family": "minilm", "fetch": ("minilm-gguf", "f32"), "hf": True, "max_len": 512, "pooling": "mean",
                   "sizes": MINILM_SIZES, "latency": 100, "weights": "f32"},
    "minilm-f16": {"family": "minilm", "fetch": ("minilm-gguf", "f16"), "hf": True, "max_len": 512, "pooling": "mean",
                   "sizes": MINILM_SIZES, "latency": 100, "weights": "f16"},
    "minilm-q8_0": {"family": "minilm", "fetch": ("minilm-gguf", "q8_0"), "hf": True, "max_len": 512, "pooling": "mean",
                    "sizes": MINILM_SIZES, "latency": 100, "weights": "q8_0"},
    # gemma-3-270m's context is 32k tokens; 1024 stands in for "long" (attention is then ~1/3 of
    # the FLOPs and llama.cpp runs at tens of tokens/s, so longer inputs would not fit the budget).
    "gemma3-270m-q4km": {"family": "gemma3-270m", "fetch": ("gemma3-270m",), "hf": False, "max_len": 1024,
                         "pooling": "mean", "sizes": {"stsb": 48, "doc256": 3, "maxlen": 1}, "latency": 20,
                         "weights": "Q4_K_M"},
}


FLOAT_WEIGHTS = ("f32", "f16")

# The engines compare.py can run. kind: how it is started (embed: an `embed bench` process with
# these flags and environment; st / onnx / llama: tools/bench/peer_run.py in the named venv).
# models: which models it runs: "all" GGUF files, "float" (f32/f16) or "quantized" GGUF files only,
# or "hf": once per family on the HF folder (reported as model "hf").
ENGINES = {
    "embed": {"kind": "embed", "name": "embed", "models": "all"},
    "embed-bf16": {"kind": "embed", "name": "embed --compute-type bf16", "models": "float",
                   "flags": ["--compute-type", "bf16"]},
    "embed-int8": {"kind": "embed", "name": "embed --compute-type int8", "models": "quantized",
                   "flags": ["--compute-type", "int8"]},
    "embed-avx512": {"kind": "embed", "name": "embed EMBED_ISA=avx512", "models": "all", "env": {"EMBED_ISA": "avx512"}},
    "embed-avx2": {"kind": "embed", "name": "embed EMBED_ISA=avx2", "models": "all", "env": {"EMBED_ISA": "avx2"}},
    # An embed binary built from an earlier commit (compare.py --baseline-embed; tools/bench/build_baseline.sh).
    "embed-baseline": {"kind": "embed", "name": "embed before issue 13", "models": "all", "baseline": True},
    "st-f32": {"kind": "st", "name": "sentence-transformers f32", "models": "hf", "venv": "refgen", "dtype": "f32"},
    "st-bf16": {"kind": "st", "name": "sentence-transformers bf16", "models": "hf", "venv": "refgen", "dtype": "bf16"},
    "ort-f32": {"kind": "onnx", "name": "ONNX Runtime fp32", "models": "hf", "venv": "onnx", "file": "model.onnx"},
    "ort-int8": {"kind": "onnx", "name": "ONNX Runtime int8", "models": "hf", "venv": "onnx", "file": "model-int8.onnx"},
    "llama-avx2": {"kind": "llama", "name": "llama.cpp AVX2", "models": "all", "venv": "refgen"},
    "llama-avx512": {"kind": "llama", "name": "llama.cpp AVX-512", "models": "all", "venv": "llama-avx512"},
    "llama-amx": {"kind": "llama", "name": "llama.cpp AMX", "models": "all", "venv": "llama-amx"},
}
# The issue-13 suite: embed at each compute type and forced ISA, and the peers an informed user
# of this CPU would pick (the llama.cpp AVX2/AVX-512 builds of the earlier suite stay selectable).
DEFAULT_ENGINES = ["embed", "embed-bf16", "embed-int8", "embed-avx512", "embed-avx2",
                   "st-f32", "st-bf16", "ort-f32", "ort-int8", "llama-amx"]


def engine_runs_model(engine, model):
    """Whether an engine (ENGINES entry) runs this GGUF model (MODELS entry) itself."""
    which = engine["models"]
    if which == "all":
        return True
    if which == "float":
        return model["weights"] in FLOAT_WEIGHTS
    if which == "quantized":
        return model["weights"] not in FLOAT_WEIGHTS
    return False  # "hf": runs the family's HF folder instead


def resolve_paths(root, models):
    """Fills model["gguf"] (and model["hf"] with the HF folder) by running tools/models.sh."""
    script = os.path.join(root, "tools", "models.sh")
    for m in models:
        m["gguf"] = subprocess.check_output([script, *m["fetch"]], text=True).strip()
        if m["hf"] is True:
            m["hf"] = subprocess.check_output([script, "minilm"], text=True).strip()


def machine():
    info = {"platform": platform.platform(), "cpus": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/loadavg") as f:
            info["loadavg_at_end"] = f.read().split()[:3]
    except OSError:
        pass
    return info


# ---- FLOPs per token (multiply-add = 2 FLOPs) ----

def minilm_flops(n):
    """all-MiniLM-L6-v2 (6 layers, d_model 384, d_ff 1536, bidirectional) on an n-token text:
    linear layers 6 * 2 * (4*384^2 + 2*384*1536) = 21.2 MFLOP, plus attention: QK^T and PV each
    384*n multiply-adds per token per layer."""
    linear = 6 * 2 * (4 * 384 * 384 + 2 * 384 * 1536)
    attention = 6 * 2 * 2 * 384 * n
    return linear + attention


def gemma_flops(n):
    """gemma-3-270m (18 layers, d_model 640, 4 query heads x 256, 1 kv head x 256, SwiGLU d_ff
    2048; causal; 5 of every 6 layers attend over a 512-token window): per token per layer
    q 640x1024, k and v 640x256, o 1024x640, gate/up/down 3 x 640x2048 multiply-adds, plus
    attention 2 x 1024 x (keys seen). The 262k-row embedding table is a gather, not FLOPs.
    Averaged over the n positions of one text."""
    linear = 18 * 2 * (640 * 1024 + 2 * 640 * 256 + 1024 * 640 + 3 * 640 * 2048)
    keys_global = sum(i + 1 for i in range(n)) / n
    keys_local = sum(min(i + 1, 512) for i in range(n)) / n
    n_global, n_local = 3, 15  # layers 6, 12, 18 are global (sliding_window_pattern 6)
    attention = 2 * 2 * 1024 * (n_global * keys_global + n_local * keys_local)
    return linear + attention


FLOPS = {"minilm": minilm_flops, "gemma3-270m": gemma_flops}
