#!/usr/bin/env python3
# Reference outputs of the converter's tiny HF folders (tests/convert/fixtures/<case>/), computed
# by sentence-transformers (folders with modules.json, every prompt) or HF transformers (decoders:
# last and mean hidden state; cross-encoders and rerankers: scores). Writes
# tests/convert/fixtures/vectors/<case>.json, which tests/convert/convert_vectors_test.cpp
# compares with the engine's outputs on the folders converted by `embed convert`.
"""Usage:  EMBED_SHARED=/path/to/shared $(tools/refgen/setup_venv.sh) tools/refgen/convert_vectors.py [CASE ...]

Every case records the texts, and per variant (a prompt, or a pooling) the HF tokenizer's ids of
each input and the reference output, so that the test can check the converted weights alone
(same ids) and the whole GGUF including its vocabulary and prompts (end to end).
"""
import json
import os
import pathlib
import sys

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402
import texts as shared_texts  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "convert" / "fixtures"
OUT = FIXTURES / "vectors"
MAX_TOKENS = 120  # below every tiny model's context (128) with room for a prompt

# What each folder is and how its reference is made.
CASES = {
    "bert-dense-tiny": "sentence-transformers",
    "qwen2-tiny": "sentence-transformers",
    "qwen3-embedding-tiny": "sentence-transformers",
    "embeddinggemma-tiny": "sentence-transformers",
    "llama-tiny": "decoder",
    "gemma3-tiny": "decoder",
    "bert-cls-tiny": "cross-encoder",
    "qwen3-reranker-tiny": "yes-no-reranker",
    "xlmr-tiny": "sentence-transformers",
    "xlmr-cls-tiny": "cross-encoder",
    "bge-m3-tiny": "bge-m3",
    "mpnet-tiny": "sentence-transformers",
    "t5-gtr-tiny": "sentence-transformers",
    "t5-gated-tiny": "sentence-transformers",
    "modern-bert-tiny": "sentence-transformers",
    "modern-bert-cls-tiny": "cross-encoder",
}
# The XLM-R folders' vocabulary is multilingual: their texts add German and Chinese STS-B lines
# and the scripts, forms and characters of issue 24 (Japanese, Arabic, Hindi, emoji, combining
# marks, full-width forms, NBSP, a control character); what the tiny vocabulary lacks is <unk>.
MULTILINGUAL = ["Die Katze sitzt auf der Matte.", "日本語のテキストです。", "مرحبا بالعالم", "नमस्ते दुनिया",
                "emoji 👍🏽 and 👨\u200d👩\u200d👧", "e\u0301te\u0301 cafe\u0301", "ＡＢＣ１２３ full width",
                "non\u00a0breaking\u00a0space", "tab\there\x07bell"]
M3_WEIGHTS = [0.4, 0.2, 0.4]  # compute_score's weights_for_different_modes (dense, sparse, colbert)


def sample_texts():
    """16 STS-B sentences, 4 short lines and one long line of 3 sentences (past every sliding
    window of the tiny models)."""
    rows = shared_texts.stsb_rows("en")
    picked = [rows[i][0] for i in range(0, 400, 25)]
    return picked + ["Hello world", "The quick brown fox jumps over the lazy dog.", "a", "Numbers 12345 and 3.14!",
                     " ".join(r[0] for r in rows[200:203])]


def multilingual_texts():
    return (sample_texts()[:12] + [shared_texts.stsb_rows(lang)[i][0] for lang in ("de", "zh") for i in (5, 50, 500)]
            + MULTILINGUAL)


def sample_pairs():
    rows = shared_texts.stsb_rows("en")
    return [(rows[i][0], rows[i][1]) for i in range(3, 300, 37)]


def rounded(v):
    return [float(f"{x:.8g}") for x in np.asarray(v, dtype=np.float64).ravel()]


def check_lengths(name, ids):
    for i, seq in enumerate(ids):
        if not 0 < len(seq) <= MAX_TOKENS:
            raise RuntimeError(f"{name}: input {i} has {len(seq)} tokens (limit {MAX_TOKENS})")


def sentence_transformers_case(folder, sample):
    import torch
    from sentence_transformers import SentenceTransformer
    st = SentenceTransformer(str(folder), device="cpu", model_kwargs={"dtype": torch.float32})
    normalized = any(type(m).__name__ == "Normalize" for m in st)
    # The folder's own prompts (sentence-transformers adds empty "query"/"document" ones in memory).
    cfg = folder / "config_sentence_transformers.json"
    prompts = (json.loads(cfg.read_text()).get("prompts") or {}) if cfg.is_file() else {}
    variants = []
    for name in [None] + list(prompts):
        prompt = "" if name is None else prompts[name]
        # prompt="" keeps a default_prompt_name from applying to the no-prompt variant.
        vectors = st.encode(sample, prompt=prompt, convert_to_numpy=True)
        ids = [st.tokenize([prompt + t])["input_ids"][0].tolist() for t in sample]
        check_lengths(folder.name, ids)
        variants.append({"label": f"prompt {name}" if name else "no prompt", "pooling": None, "prompt_name": name,
                         "prompt": prompt, "ids": ids, "vectors": [rounded(v) for v in vectors]})
    return {"normalized": normalized, "default_prompt_name": st.default_prompt_name, "variants": variants}


def decoder_case(folder, sample):
    """Final-norm hidden states: the last token's (what LAST pooling gives) and their mean."""
    import torch
    from transformers import AutoModel, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, dtype=torch.float32).eval()
    ids = [tok(t)["input_ids"] for t in sample]
    check_lengths(folder.name, ids)
    last, mean = [], []
    for seq in ids:
        with torch.no_grad():
            h = model(torch.tensor([seq])).last_hidden_state[0].double().numpy()
        last.append(rounded(h[-1]))
        mean.append(rounded(h.mean(axis=0)))
    return {"normalized": False, "variants": [
        {"label": "last hidden state", "pooling": "last", "prompt_name": None, "prompt": "", "ids": ids, "vectors": last},
        {"label": "mean hidden state", "pooling": "mean", "prompt_name": None, "prompt": "", "ids": ids, "vectors": mean}]}


def cross_encoder_case(folder, sample):
    """BertForSequenceClassification logits: single texts (token type 0), and query/document pairs."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, dtype=torch.float32).eval()
    ids = [tok(t)["input_ids"] for t in sample]
    check_lengths(folder.name, ids)
    with torch.no_grad():
        single = [model(torch.tensor([seq])).logits[0].double().numpy() for seq in ids]
        pairs = sample_pairs()
        pair_scores = []
        for q, d in pairs:
            enc = tok(q, d, return_tensors="pt", return_token_type_ids=True)  # document tokens have type 1
            pair_scores.append(float(model(**enc).logits[0, 0]))
    return {"normalized": False, "pairs": [list(p) for p in pairs], "pair_scores": rounded(pair_scores), "variants": [
        {"label": "classifier logit", "pooling": "rank", "prompt_name": None, "prompt": "", "ids": ids,
         "vectors": [rounded(v) for v in single]}]}


def bge_m3_case(folder, sample):
    """BGE-M3: the dense vector from sentence-transformers (CLS, Normalize), and FlagEmbedding's
    BGEM3FlagModel (f32) for all three outputs and compute_score on query/document pairs."""
    case = sentence_transformers_case(folder, sample)
    from FlagEmbedding import BGEM3FlagModel
    m3 = BGEM3FlagModel(str(folder), use_fp16=False, devices="cpu")
    out = m3.encode(sample, batch_size=4, max_length=MAX_TOKENS, return_dense=True, return_sparse=True,
                    return_colbert_vecs=True)
    case["m3"] = {
        "dense": [rounded(v) for v in out["dense_vecs"]],
        "sparse": [{k: float(f"{float(w):.8g}") for k, w in sorted(lw.items(), key=lambda kv: int(kv[0]))}
                   for lw in out["lexical_weights"]],
        "colbert": [[rounded(r) for r in np.asarray(c)] for c in out["colbert_vecs"]],
    }
    pairs = sample_pairs()[:4] + [(multilingual_texts()[12], multilingual_texts()[15])]
    scores = m3.compute_score(pairs, max_passage_length=MAX_TOKENS, weights_for_different_modes=M3_WEIGHTS)
    case["m3_pairs"] = [list(p) for p in pairs]
    case["m3_weights"] = M3_WEIGHTS
    case["m3_scores"] = {k: rounded(v) for k, v in scores.items()}
    import torch
    case["heads"] = {name: {k: rounded(v.numpy()) for k, v in
                            torch.load(folder / f"{name}.pt", map_location="cpu", weights_only=True).items()}
                     for name in ("sparse_linear", "colbert_linear")}
    return case


def yes_no_reranker_case(folder, sample):
    """Qwen3-Reranker: softmax over the LM head's "yes" / "no" logits at the last token of the
    converter's prompt (the template written into the GGUF) filled with a query and a document."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    sys.path.insert(0, str(ROOT / "tools" / "refgen"))
    from texts import RERANK_TEMPLATE
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    yes, no = tok.convert_tokens_to_ids("yes"), tok.convert_tokens_to_ids("no")
    pairs = sample_pairs()
    ids, probs = [], []
    for q, d in pairs:
        seq = tok(RERANK_TEMPLATE.replace("{query}", q).replace("{document}", d), add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([seq])).logits[0, -1].double()
        probs.append(torch.softmax(torch.stack([logits[yes], logits[no]]), 0).numpy())
        ids.append(seq)
    return {"normalized": False, "pairs": [list(p) for p in pairs], "pair_scores": rounded([p[0] for p in probs]),
            "variants": [{"label": "P(yes), P(no)", "pooling": "rank", "prompt_name": None, "prompt": "", "ids": ids,
                          "vectors": [rounded(p) for p in probs]}]}


def main():
    common.deterministic_torch()
    names = sys.argv[1:] or list(CASES)
    sample = sample_texts()
    OUT.mkdir(parents=True, exist_ok=True)
    makers = {"sentence-transformers": sentence_transformers_case, "decoder": decoder_case,
              "cross-encoder": cross_encoder_case, "yes-no-reranker": yes_no_reranker_case, "bge-m3": bge_m3_case}
    for name in names:
        kind = CASES[name]
        case = {"case": name, "reference": kind, "source": common.source_line("convert_vectors.py"), "texts": sample}
        texts = multilingual_texts() if name in ("xlmr-tiny", "xlmr-cls-tiny", "bge-m3-tiny") else sample
        case["texts"] = texts
        case.update(makers[kind](FIXTURES / name, texts))
        path = OUT / f"{name}.json"
        path.write_text(json.dumps(case, indent=None, ensure_ascii=False) + "\n")
        print(f"{path.relative_to(ROOT)}: {len(case['variants'])} variants, {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
