#!/usr/bin/env python3
# Acceptance check for `embed convert`: converts each folder with the embed binary, loads the GGUF
# in llama.cpp (llama-cpp-python), and compares its vectors / scores with sentence-transformers
# or HF transformers on the same folder. Prints a table for docs/convert.md.
"""Usage:  $(tools/refgen/setup_venv.sh) tools/refgen/convert_check_llamacpp.py [--embed build/tools/embed]

Two comparisons per text:
  * same ids: the HF tokenizer's ids are fed to llama.cpp directly, so the number measures the
    converted weights and metadata alone;
  * end to end (embedding models): llama.cpp tokenizes the text itself from the GGUF vocabulary.
Embeddings are L2-normalised on both sides and compared by cosine; reranker / classifier outputs
by absolute difference.
"""
import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from convert_vectors import sample_texts as texts  # noqa: E402  (the converter tests' texts)

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "convert" / "fixtures"


def minilm_dir():
    return pathlib.Path(subprocess.check_output([str(ROOT / "tools" / "models.sh"), "minilm"], text=True).strip())


def convert(embed, folder, gtype, out):
    subprocess.run([embed, "convert", str(folder), str(out), "--type", gtype], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def no_extra_buffer_types():
    """Turns off llama.cpp's extra CPU buffer types (weight repacking, AMX). Some virtual machines
    report AMX without enabling it, and the Q8_0 AMX path then dies with SIGILL."""
    import llama_cpp.llama_cpp as lc
    default = lc.llama_model_default_params
    if getattr(default, "_embed_patched", False):
        return
    def params():
        p = default()
        p.use_extra_bufts = False
        return p
    params._embed_patched = True
    lc.llama_model_default_params = params


def llama(path, pooling=None):
    from llama_cpp import Llama
    no_extra_buffer_types()
    kw = {} if pooling is None else {"pooling_type": pooling}
    return Llama(model_path=str(path), embedding=True, n_ctx=512, n_batch=512, n_ubatch=512, verbose=False, **kw)


def llama_pooled(llm, ids, n_out):
    """Runs one sequence of token ids through llama.cpp and returns its pooled output (n_out floats)."""
    import llama_cpp
    llm._batch.reset()
    llm._batch.add_sequence(list(ids), 0, True)
    llm._ctx.kv_cache_clear()
    llm._ctx.decode(llm._batch)
    ptr = llama_cpp.llama_get_embeddings_seq(llm._ctx.ctx, 0)
    return np.array(ptr[:n_out], dtype=np.float64)


def unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def check_sentence_transformer(embed, folder, gtype, tmp, sample):
    from sentence_transformers import SentenceTransformer
    import torch
    st = SentenceTransformer(str(folder), device="cpu", model_kwargs={"dtype": torch.float32})
    ref = st.encode(sample, normalize_embeddings=True, convert_to_numpy=True)
    out = pathlib.Path(tmp) / f"{folder.name}-{gtype}.gguf"
    convert(embed, folder, gtype, out)
    llm = llama(out)
    same_ids = []
    for text, r in zip(sample, ref):
        ids = st.tokenizer(text)["input_ids"]
        same_ids.append(float(unit(llama_pooled(llm, ids, llm.n_embd())) @ r))
    e2e = [float(unit(v) @ r) for v, r in zip(llm.embed(sample, normalize=True), ref)]
    tok_agree = sum(llm.tokenize(t.encode(), add_bos=True, special=False) == st.tokenizer(t)["input_ids"] for t in sample)
    return {"same ids min cos": min(same_ids), "end-to-end min cos": min(e2e),
            "end-to-end mean cos": float(np.mean(e2e)), "tokenization agrees": f"{tok_agree}/{len(sample)}"}


def check_last_token(embed, folder, gtype, tmp, sample):
    """A decoder without sentence-transformers config: last hidden state (after the final norm)."""
    import torch
    from transformers import AutoModel, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, dtype=torch.float32).eval()
    out = pathlib.Path(tmp) / f"{folder.name}-{gtype}.gguf"
    convert(embed, folder, gtype, out)
    llm = llama(out, pooling=3)  # LLAMA_POOLING_TYPE_LAST
    cos = []
    for text in sample:
        ids = tok(text)["input_ids"]
        with torch.no_grad():
            h = model(torch.tensor([ids])).last_hidden_state[0, -1].numpy()
        cos.append(float(unit(llama_pooled(llm, ids, llm.n_embd())) @ unit(h)))
    return {"same ids min cos": min(cos)}


def check_not_loadable(embed, folder, gtype, tmp, sample):
    """A file llama.cpp cannot represent (a Dense layer with bias or activation on an architecture
    whose llama.cpp graph has none): llama.cpp must refuse it rather than give other vectors."""
    out = pathlib.Path(tmp) / f"{folder.name}-{gtype}.gguf"
    convert(embed, folder, gtype, out)
    try:
        llama(out)
    except Exception as e:  # llama-cpp-python raises ValueError("Failed to load model from file")
        return {"llama.cpp refuses to load it": type(e).__name__}
    raise RuntimeError(f"{folder.name}: llama.cpp loaded a file whose Dense layer it cannot apply")


def check_qwen3_reranker(embed, folder, gtype, tmp, sample):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    yes, no = tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("no")
    out = pathlib.Path(tmp) / f"{folder.name}-{gtype}.gguf"
    convert(embed, folder, gtype, out)
    llm = llama(out)
    template = llm.metadata["tokenizer.chat_template.rerank"]
    diffs, refs = [], []
    for q, d in zip(sample[::2], sample[1::2]):
        prompt = template.replace("{query}", q).replace("{document}", d)
        ids = tok(prompt, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, -1]
        p_yes = torch.softmax(torch.stack([logits[yes], logits[no]]), 0)[0].item()
        got = llama_pooled(llm, ids, 2)
        diffs.append(abs(got[0] - p_yes))
        refs.append(p_yes)
    return {"max abs diff of P(yes)": max(diffs), "HF P(yes) range": f"{min(refs):.4f}..{max(refs):.4f}"}


def check_bert_classifier(embed, folder, gtype, tmp, sample):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, dtype=torch.float32).eval()
    out = pathlib.Path(tmp) / f"{folder.name}-{gtype}.gguf"
    convert(embed, folder, gtype, out)
    llm = llama(out)
    diffs, refs = [], []
    for text in sample:
        ids = tok(text)["input_ids"]  # one segment: llama.cpp's bert graph uses token type 0 throughout
        with torch.no_grad():
            logit = model(torch.tensor([ids]), token_type_ids=torch.zeros(1, len(ids), dtype=torch.long)).logits[0, 0].item()
        diffs.append(abs(llama_pooled(llm, ids, 1)[0] - logit))
        refs.append(logit)
    return {"max abs diff of logit": max(diffs), "HF logit range": f"{min(refs):.4f}..{max(refs):.4f}"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--embed", default=str(ROOT / "build" / "tools" / "embed"))
    ap.add_argument("--types", nargs="*", default=["f32", "f16", "bf16", "q8_0"])
    ap.add_argument("--cases", nargs="*", help="model names to check (default: all)")
    args = ap.parse_args()
    sample = texts()
    cases = [("all-MiniLM-L6-v2", minilm_dir(), check_sentence_transformer),
             ("qwen2-tiny", FIXTURES / "qwen2-tiny", check_sentence_transformer),
             ("qwen3-embedding-tiny", FIXTURES / "qwen3-embedding-tiny", check_sentence_transformer),
             ("llama-tiny", FIXTURES / "llama-tiny", check_last_token),
             ("qwen3-reranker-tiny", FIXTURES / "qwen3-reranker-tiny", check_qwen3_reranker),
             ("bert-cls-tiny", FIXTURES / "bert-cls-tiny", check_bert_classifier),
             ("embeddinggemma-tiny", FIXTURES / "embeddinggemma-tiny", check_sentence_transformer),
             ("gemma3-tiny", FIXTURES / "gemma3-tiny", check_last_token),
             ("bert-dense-tiny", FIXTURES / "bert-dense-tiny", check_not_loadable)]
    print(f"{len(sample)} texts; llama-cpp-python", __import__("llama_cpp").__version__)
    print("| model | type | result |\n|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, folder, check in cases:
            if args.cases and name not in args.cases:
                continue
            for gtype in args.types:
                result = check(args.embed, folder, gtype, tmp, sample)
                cells = ", ".join(f"{k} {v:.6f}" if isinstance(v, float) else f"{k} {v}" for k, v in result.items())
                print(f"| {name} | {gtype} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
