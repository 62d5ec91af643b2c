# Reference data for gemma-3-270m Q4_K_M (GGUF from tools/models.sh) from llama.cpp
# (llama-cpp-python embedding mode): token ids from llama.cpp's tokenizer (the GGUF is the only
# form of this model we have), mean- and last-pooled final-norm hidden states, including inputs
# longer than the 512-token sliding window. Writes tests/fixtures/models/gemma3-270m-q4km/.
import hashlib
import subprocess

import numpy as np

import common
import llama_cpp_ref
import texts

NAME = "gemma3-270m-q4km"
N_CTX = 2048
LONG_LENGTHS = {"en": 600, "de": 1100}  # both cross the 512-token sliding window


def gguf_path():
    return subprocess.run([str(common.REPO_ROOT / "tools/models.sh"), "gemma3-270m"], check=True,
                          capture_output=True, text=True).stdout.strip()


def build_cases(runner):
    cases = [dict(tag=tag, text=text) for tag, text in texts.MIXED_TEXTS]
    count = lambda t: len(runner.tokenize(t))
    for lang, n in LONG_LENGTHS.items():
        text = texts.fit_prefix(count, texts.long_text(800, lang), n)
        cases.append(dict(tag=f"long-{n}-{lang}", text=text))
    text = texts.fit_prefix(count, texts.long_text(100, "en"), 513)
    cases.append(dict(tag="long-513-en", text=text))
    for case in cases:
        case["ids"] = [int(i) for i in runner.tokenize(case["text"])]
    return cases


def main():
    path = gguf_path()
    tokenizer = llama_cpp_ref.LlamaCppRunner(path, "none", N_CTX)
    d_model = tokenizer.n_embd
    cases = build_cases(tokenizer)
    tokenizer.close()
    ids = [c["ids"] for c in cases]
    pooled = {kind: np.stack(llama_cpp_ref.run_cases(path, kind, ids, N_CTX)) for kind in ("mean", "last")}
    out_dir = common.FIXTURES / NAME
    out_dir.mkdir(parents=True, exist_ok=True)
    for kind, arr in pooled.items():
        common.save_npy(out_dir / f"pooled_{kind}.npy", arr)
    sha = hashlib.sha256(open(path, "rb").read()).hexdigest()
    extra = {"gguf": "tools/models.sh gemma3-270m (gemma-3-270m-q4_k_m.gguf)", "gguf_sha256": sha,
             "poolings": ["mean", "last"],
             "notes": ["ids: llama.cpp tokenize(add_special=true, parse_special=true): <bos> + text",
                       "pooled_*: llama.cpp embedding mode, pooling_type mean/last, f32 KV cache, 1 thread, "
                       "one sequence per decode; vectors are the final-norm hidden states, not normalized",
                       "gemma3 arch here is the causal LM (not gemma-embedding): causal attention, "
                       "sliding window 512 on local layers"]}
    common.write_cases(out_dir, "google/gemma-3-270m (Q4_K_M GGUF)",
                       common.source_line("make_gemma270m.py", f"llama.cpp n_ctx={N_CTX}"),
                       d_model, cases, extra)
    common.log(f"{NAME}: {len(cases)} cases, lengths {[len(c['ids']) for c in cases[-3:]]}")


if __name__ == "__main__":
    main()
